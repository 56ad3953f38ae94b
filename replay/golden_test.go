package replay

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/golden/*.txt from the current code")

// goldenLog returns a fixed combined-format log shaped like
// bench/replay_gen's: n lines from a Zipf population of clients (some
// IPv6, with ports on a few), a tenth of them up to 5 s out of order, and
// now and then a blank or malformed line. It is the same bytes on every
// run.
func goldenLog(n, clients int) []byte {
	rng := rand.New(rand.NewPCG(27, 5))
	zipf := rand.NewZipf(rng, 1.1, 4, uint64(clients-1))
	start := time.Date(2026, 11, 29, 0, 0, 0, 0, time.FixedZone("", 2*3600))
	methods := []string{"GET", "GET", "GET", "POST", "PUT", "HEAD"}
	paths := []string{"/", "/api/v1/orders", "/api/v1/orders/12345?x=1", "/search?q=a%20b", "/static/app.js", "/login"}
	var b bytes.Buffer
	for i := range n {
		t := start.Add(time.Duration(i) * time.Millisecond * 2)
		if rng.IntN(10) == 0 {
			t = t.Add(-time.Duration(rng.IntN(5000)) * time.Millisecond)
		}
		switch {
		case i%4999 == 7:
			b.WriteString("\n")
			continue
		case i%3001 == 11:
			fmt.Fprintf(&b, "10.0.0.1 - - [%s] \"GET / HTTP/1.1\"\n", t.Format("02/Jan/2006:15:04:05 -0700"))
			continue
		case i%2003 == 5:
			fmt.Fprintf(&b, "10.0.0.2 - - [%s +0000] \"GET / HTTP/1.1\" 200 1\n", t.Format("02/Jan/2006:15:04:05"))
			continue
		}
		c := zipf.Uint64()
		switch {
		case c%17 == 3:
			fmt.Fprintf(&b, "2001:db8:%x:%x::%x", c>>16, c&0xffff, rng.IntN(200))
		case c%29 == 1:
			fmt.Fprintf(&b, "[2001:db8::%x]:%d", c, 1024+rng.IntN(1000))
		case c%31 == 2:
			fmt.Fprintf(&b, "%d.%d.%d.%d:%d", 10+c>>24&0x3f, c>>16&0xff, c>>8&0xff, c&0xff, 1024+rng.IntN(1000))
		default:
			fmt.Fprintf(&b, "%d.%d.%d.%d", 10+c>>24&0x3f, c>>16&0xff, c>>8&0xff, c&0xff)
		}
		user := "-"
		if c%11 == 0 {
			user = fmt.Sprintf("u%d", c%7)
		}
		fmt.Fprintf(&b, " - %s [%s] \"%s %s HTTP/1.1\" %d %d \"-\" \"bench/1.0\"\n", user, t.Format("02/Jan/2006:15:04:05 -0700"),
			methods[rng.IntN(len(methods))], paths[rng.IntN(len(paths))], 200+rng.IntN(3)*100, rng.IntN(9000))
	}
	return b.Bytes()
}

// The report of a fixed generated log, with every key's refusals under
// every policy, is exactly the one recorded in testdata/golden: a change
// to the per-line path (parsing, keys, the key table, reordering, the
// per-key state) must not change one decision. The recorded files were
// written by the code before the issue 27 speed work (-update-golden).
func TestGoldenReportOfAGeneratedLog(t *testing.T) {
	log := goldenLog(60000, 6000)
	five := []string{
		"token_bucket:rate=1/s,burst=5",
		"leaky_bucket:rate=1/s,burst=3,mode=police",
		"fixed_window:limit=20,window=1m",
		"sliding_window:limit=20,window=1m",
		"sliding_log:limit=20,window=1m",
	}
	for _, c := range []struct {
		name string
		key  string
		cfg  Config
	}{
		{"ip", "ip", Config{Suggest: true}},
		{"ip-path-maxkeys", "ip,path", Config{MaxKeys: 500}},
		{"user-method-filtered", "user,method", Config{Filter: Filter{Methods: []string{"GET", "POST"}}, Reorder: 2 * time.Second, ReorderLines: 300}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := c.cfg
			cfg.Policies = policies(t, five...)
			k, err := ParseKeySpec(c.key)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Key = k
			cfg.Top = 1 << 30 // every refused key, with its refusals and first refusal
			rep, err := Run(context.Background(), bytes.NewReader(log), cfg)
			if err != nil {
				t.Fatal(err)
			}
			full, err := json.Marshal(rep)
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(full)
			var g strings.Builder
			fmt.Fprintf(&g, "lines %d blank %d malformed %d filtered %d simulated %d keys %d retired %d late %d reorder_full %d\n",
				rep.Input.Lines, rep.Input.Blank, rep.Input.Malformed, rep.Input.Filtered, rep.Input.Simulated,
				rep.Input.Keys, rep.Input.Retired, rep.Input.Late, rep.Input.ReorderFull)
			for _, p := range rep.Policies {
				fmt.Fprintf(&g, "%s: refused %d of %d, %d keys affected", p.Policy, p.Refused, p.Requests, p.KeysAffected)
				if len(p.TopRefused) > 0 {
					fmt.Fprintf(&g, ", most %s ×%d", p.TopRefused[0].Key, p.TopRefused[0].Refused)
				}
				g.WriteString("\n")
			}
			fmt.Fprintf(&g, "report sha256 %s\n", hex.EncodeToString(sum[:]))
			path := filepath.Join("testdata", "golden", c.name+".txt")
			if *updateGolden {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(g.String()), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if g.String() != string(want) {
				t.Errorf("report differs from %s:\ngot:\n%s\nwant:\n%s", path, g.String(), want)
			}
		})
	}
}
