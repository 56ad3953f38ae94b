// Command replay_gen writes a synthetic Apache/nginx combined access log
// for the replay speed benchmark: N lines, clients drawn from a Zipf
// distribution over a fixed population (a few busy clients, a long tail,
// some IPv6), about rate lines per second of log time, with lines up to a
// few seconds out of order as real servers write them. The output is
// deterministic for a given seed.
//
//	go run ./replay_gen -n 10000000 -o /tmp/x/access.log
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"time"
)

func main() {
	n := flag.Int("n", 10_000_000, "lines to write")
	out := flag.String("o", "", "output file (default stdout)")
	clients := flag.Int("clients", 200_000, "client population")
	rate := flag.Int("rate", 1000, "lines per second of log time")
	seed := flag.Uint64("seed", 1, "random seed")
	flag.Parse()
	if err := run(*n, *out, *clients, *rate, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "replay_gen:", err)
		os.Exit(1)
	}
}

var (
	methods = []string{"GET", "GET", "GET", "GET", "GET", "GET", "POST", "POST", "PUT", "DELETE", "HEAD"}
	paths   = []string{"/", "/index.html", "/api/v1/orders", "/api/v1/orders/12345", "/api/v1/users/me",
		"/static/app.3f9a1c.js", "/static/style.css", "/images/logo.png", "/search?q=rate+limit&page=2",
		"/login", "/logout", "/api/v2/items?sort=desc&limit=50", "/favicon.ico", "/robots.txt",
		"/blog/2015/05/17/replaying-logs/", "/presentations/logstash-monitorama-2013/images/kibana-search.png"}
	statuses = []string{"200", "200", "200", "200", "200", "200", "304", "301", "404", "429", "500"}
	agents   = []string{
		"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_9_1) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/32.0.1700.77 Safari/537.36",
		"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
		"Mozilla/5.0 (Windows NT 6.1; WOW64; rv:27.0) Gecko/20100101 Firefox/27.0",
		"curl/7.68.0",
		"Go-http-client/1.1",
	}
	referers = []string{"-", "http://example.com/", "https://www.google.com/", "http://semicomplete.com/presentations/logstash-monitorama-2013/"}
	months   = []string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}
)

func run(n int, out string, clients, rate int, seed uint64) error {
	w := os.Stdout
	if out != "" {
		f, err := os.Create(out)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	return generate(w, n, clients, rate, seed)
}

// generate writes the log to w.
func generate(w io.Writer, n, clients, rate int, seed uint64) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	zipf := rand.NewZipf(rng, 1.1, 4, uint64(clients-1))
	start := time.Date(2026, 11, 29, 0, 0, 0, 0, time.FixedZone("", 2*3600))
	step := time.Second / time.Duration(rate)
	line := make([]byte, 0, 512)
	for i := 0; i < n; i++ {
		t := start.Add(time.Duration(i) * step)
		if rng.IntN(10) == 0 { // written late: up to 5 s out of order
			t = t.Add(-time.Duration(rng.IntN(5000)) * time.Millisecond)
		}
		c := zipf.Uint64()
		line = line[:0]
		if c%17 == 3 {
			line = fmt.Appendf(line, "2001:db8:%x:%x::%x", c>>16, c&0xffff, rng.IntN(200))
		} else {
			line = fmt.Appendf(line, "%d.%d.%d.%d", 10+c>>24&0x3f, c>>16&0xff, c>>8&0xff, c&0xff)
		}
		line = append(line, " - - ["...)
		line = appendDate(line, t)
		line = append(line, "] \""...)
		line = append(line, methods[rng.IntN(len(methods))]...)
		line = append(line, ' ')
		line = append(line, paths[rng.IntN(len(paths))]...)
		line = append(line, " HTTP/1.1\" "...)
		line = append(line, statuses[rng.IntN(len(statuses))]...)
		line = append(line, ' ')
		line = strconv.AppendInt(line, int64(rng.IntN(200000)), 10)
		line = append(line, " \""...)
		line = append(line, referers[rng.IntN(len(referers))]...)
		line = append(line, "\" \""...)
		line = append(line, agents[rng.IntN(len(agents))]...)
		line = append(line, "\"\n"...)
		if _, err := bw.Write(line); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// appendDate writes t as the common log format does: 29/Nov/2026:00:00:00 +0200.
func appendDate(b []byte, t time.Time) []byte {
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	b = append2(b, d)
	b = append(b, '/')
	b = append(b, months[mo-1]...)
	b = append(b, '/')
	b = strconv.AppendInt(b, int64(y), 10)
	b = append(b, ':')
	b = append2(b, h)
	b = append(b, ':')
	b = append2(b, mi)
	b = append(b, ':')
	b = append2(b, s)
	return append(b, " +0200"...)
}

func append2(b []byte, n int) []byte { return append(b, byte('0'+n/10), byte('0'+n%10)) }
