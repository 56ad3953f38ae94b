// gnetpeer answers every request with the same 429 as the fasthttp
// baseline, on gnet's event loops.
package main

import (
	"bytes"
	"flag"
	"log"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"
)

var (
	body = []byte(`{"type":"https://iana.org/assignments/http-problem-types#quota-exceeded","title":"Too Many Requests","status":429,"detail":"retry in 3600 seconds","violated-policies":["per-ip"]}`)
	date atomic.Pointer[string]
)

type server struct{ gnet.BuiltinEventEngine }

// OnTraffic answers each complete request head in the buffer (the
// benchmark's requests have no body).
func (*server) OnTraffic(c gnet.Conn) gnet.Action {
	buf, _ := c.Peek(-1)
	used := 0
	out := make([]byte, 0, 512)
	for {
		i := bytes.Index(buf, []byte("\r\n\r\n"))
		if i < 0 {
			break
		}
		buf, used = buf[i+4:], used+i+4
		out = append(out, "HTTP/1.1 429 Too Many Requests\r\nServer: gnetpeer\r\nDate: "...)
		out = append(out, *date.Load()...)
		out = append(out, "\r\nContent-Type: application/problem+json\r\nContent-Length: "...)
		out = strconv.AppendInt(out, int64(len(body)), 10)
		out = append(out, "\r\nRatelimit-Policy: \"per-ip\";q=1;w=3600\r\nRatelimit: \"per-ip\";r=0;t=3600\r\nRetry-After: 3600\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n\r\n"...)
		out = append(out, body...)
	}
	if used > 0 {
		c.Discard(used) // Discard(0) would drop a partial head
	}
	if len(out) > 0 {
		c.Write(out)
	}
	return gnet.None
}

func main() {
	addr := flag.String("addr", "127.0.0.1:18099", "listen address")
	proxy := flag.Bool("proxy", false, "proxy to the origin instead (proxy.go)")
	safe := flag.Bool("safe", false, "with -proxy: write through the loop owning the socket")
	flag.Parse()
	if *proxy {
		log.Fatal(runProxy(*addr, *safe))
	}
	setDate := func() {
		d := time.Now().UTC().Format(http.TimeFormat)
		date.Store(&d)
	}
	setDate()
	go func() {
		for range time.Tick(time.Second) {
			setDate()
		}
	}()
	log.Fatal(gnet.Run(&server{}, "tcp://"+*addr, gnet.WithMulticore(true)))
}
