package gateway

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/tollgate-dev/tollgate/internal/racebuild"
)

// exceptYAML is the configuration of the exemption tests (after the
// listen line): 127.0.0.1 is the one trusted proxy, so a test connecting
// from 127.0.0.2 is an untrusted peer whose X-Forwarded-For is ignored.
const exceptYAML = `admin: {addr: "off"}
reload: {watch: true, interval: 10ms, settle: 50ms}
routes: [{path: /, upstream: demo}]
client_ip: {trusted_proxies: [127.0.0.1/32]}
except:
  - paths: [/healthz]
rules:
  - name: api
    policies: [{algorithm: fixed_window, limit: 2, window: 1h}]
    except:
      - clients_file: clients.txt
      - clients: [198.51.100.0/24, "2001:db8::/32"]
  - name: per-key
    key: header:X-API-Key
    match: {path_prefixes: [/keyed/]}
    policies: [{algorithm: fixed_window, limit: 2, window: 1h}]
    except:
      - keys_file: keys.txt
`

// exceptClient sends requests to a gateway as the peer from (a loopback
// address), over HTTP/1.1 or, with h2, HTTP/2 without TLS.
type exceptClient struct {
	t    *testing.T
	base string
	h2   bool
	c    map[string]*http.Client
}

func (ec *exceptClient) client(from string) *http.Client {
	if c := ec.c[from]; c != nil {
		return c
	}
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	tr := &http.Transport{DialContext: d.DialContext}
	if ec.h2 {
		tr.Protocols = new(http.Protocols)
		tr.Protocols.SetUnencryptedHTTP2(true)
	}
	c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	ec.t.Cleanup(tr.CloseIdleConnections)
	ec.c[from] = c
	return c
}

// get sends GET path from the peer from with X-Forwarded-For xff (and
// X-API-Key key, when set), returning the status and whether the
// response carried any rate-limit field.
func (ec *exceptClient) get(from, path, xff, key string) (int, bool) {
	ec.t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), "GET", ec.base+path, nil)
	if xff != "" {
		req.Header.Set("X-Forwarded-For", xff)
	}
	if key != "" {
		req.Header.Set("X-API-Key", key)
	}
	resp, err := ec.client(from).Do(req)
	if err != nil {
		ec.t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if want := map[bool]int{false: 1, true: 2}[ec.h2]; resp.ProtoMajor != want {
		ec.t.Fatalf("answered over HTTP/%d, want %d", resp.ProtoMajor, want)
	}
	limited := false
	for name := range resp.Header {
		n := strings.ToLower(name)
		limited = limited || strings.HasPrefix(n, "ratelimit") || strings.HasPrefix(n, "x-ratelimit")
	}
	return resp.StatusCode, limited
}

// statuses sends n requests and returns their statuses, and whether any
// carried a rate-limit field.
func (ec *exceptClient) statuses(n int, from, path, xff, key string) ([]int, bool) {
	ec.t.Helper()
	var out []int
	any := false
	for range n {
		s, l := ec.get(from, path, xff, key)
		out = append(out, s)
		any = any || l
	}
	return out, any
}

func allOK(s []int) bool {
	for _, c := range s {
		if c != 200 {
			return false
		}
	}
	return true
}

// exemptMetric is tollgate_exempt_total{rule}, or -1 when absent.
func exemptMetric(g *Gateway, rule string) float64 {
	mfs, _ := g.core.M.Reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() != "tollgate_exempt_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == rule {
				return m.GetCounter().GetValue()
			}
		}
	}
	return -1
}

func TestExceptE2EHTTP1(t *testing.T) { testExceptE2E(t, false) }
func TestExceptE2EHTTP2(t *testing.T) { testExceptE2E(t, true) }

// testExceptE2E runs a gateway with exemptions from list files, on the
// HTTP/1.1 data path (fasthttp) or the net/http one spoken to in HTTP/2:
// an exempt client range is never refused and gets no rate-limit
// fields while another client is limited; a forwarding header from an
// untrusted peer makes no one exempt; an exempt key from a keys file;
// the top-level except; the list files changed on disk take effect
// without a restart, and a bad version is refused while the one before
// keeps serving.
func testExceptE2E(t *testing.T, h2 bool) {
	dir := t.TempDir()
	clients := filepath.Join(dir, "clients.txt")
	keys := filepath.Join(dir, "keys.txt")
	if err := os.WriteFile(clients, []byte("# monitoring\n10.0.0.0/8\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keys, []byte("internal-key-1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	listen := `listen: {addr: "127.0.0.1:0"}` + "\n"
	if h2 {
		listen = `listen: {addr: "127.0.0.1:0", http2: on}` + "\n"
	}
	path := filepath.Join(dir, "tollgate.yaml")
	g := startFileGateway(t, path, listen+exceptYAML)
	ec := &exceptClient{t: t, base: "http://" + g.Addr().String(), h2: h2, c: map[string]*http.Client{}}
	const proxy, untrusted = "127.0.0.1", "127.0.0.2"

	// The monitoring range, from the clients file, through the trusted
	// proxy: never refused, no rate-limit fields.
	if s, limited := ec.statuses(5, proxy, "/x", "10.1.2.3", ""); !allOK(s) || limited {
		t.Errorf("exempt 10.1.2.3: %v, rate-limit fields %v", s, limited)
	}
	if s, limited := ec.statuses(4, proxy, "/x", "198.51.100.9", ""); !allOK(s) || limited {
		t.Errorf("exempt 198.51.100.9 (inline): %v, rate-limit fields %v", s, limited)
	}
	if s, limited := ec.statuses(4, proxy, "/x", "2001:db8::7", ""); !allOK(s) || limited {
		t.Errorf("exempt 2001:db8::7 (inline): %v, rate-limit fields %v", s, limited)
	}
	// Another client is limited, with the fields.
	if s, limited := ec.statuses(3, proxy, "/x", "203.0.113.5", ""); s[0] != 200 || s[1] != 200 || s[2] != 429 || !limited {
		t.Errorf("203.0.113.5: %v, rate-limit fields %v; want 200 200 429 with fields", s, limited)
	}
	// An untrusted peer claiming the monitoring range is the peer.
	if s, _ := ec.statuses(3, untrusted, "/x", "10.1.2.3", ""); s[2] != 429 {
		t.Errorf("untrusted peer with X-Forwarded-For 10.1.2.3: %v, want the third refused", s)
	}
	// The top-level except: /healthz of a client already refused.
	if s, limited := ec.statuses(3, proxy, "/healthz", "203.0.113.5", ""); !allOK(s) || limited {
		t.Errorf("/healthz: %v, rate-limit fields %v", s, limited)
	}
	// An exempt key from the keys file (the client exempt from api, so
	// that only per-key decides).
	if s, limited := ec.statuses(4, proxy, "/keyed/a", "10.9.9.9", "internal-key-1"); !allOK(s) || limited {
		t.Errorf("exempt key: %v, rate-limit fields %v", s, limited)
	}
	if s, limited := ec.statuses(3, proxy, "/keyed/a", "10.9.9.9", "customer-key"); s[2] != 429 || !limited {
		t.Errorf("customer key: %v, want the third refused", s)
	}

	// The files changed on disk, by rename: no restart.
	replaceByRename(t, clients, "10.0.0.0/8\n203.0.113.0/24\n")
	replaceByRename(t, keys, "internal-key-1\ncustomer-key\n")
	waitFor(t, "203.0.113.5 to be exempt", func() bool {
		s, limited := ec.get(proxy, "/x", "203.0.113.5", "")
		return s == 200 && !limited
	})
	waitFor(t, "customer-key to be exempt", func() bool {
		s, limited := ec.get(proxy, "/keyed/a", "10.9.9.9", "customer-key")
		return s == 200 && !limited
	})
	if s, limited := ec.statuses(3, proxy, "/x", "203.0.113.5", ""); !allOK(s) || limited {
		t.Errorf("203.0.113.5 after the change: %v, rate-limit fields %v", s, limited)
	}
	ok := testCounter(g, "success")
	if ok < 1 {
		t.Errorf("%v successful reloads", ok)
	}

	// A version that does not parse is refused; the one before serves.
	failed := testCounter(g, "failure")
	replaceByRename(t, clients, "10.0.0.0/8\nnot-a-prefix\n")
	waitFor(t, "the bad clients file to be refused", func() bool { return testCounter(g, "failure") > failed })
	if s, limited := ec.statuses(3, proxy, "/x", "203.0.113.5", ""); !allOK(s) || limited {
		t.Errorf("203.0.113.5 after the refused change: %v, rate-limit fields %v", s, limited)
	}
	if s, _ := ec.statuses(3, proxy, "/x", "192.0.2.44", ""); s[2] != 429 {
		t.Errorf("192.0.2.44 after the refused change: %v, want limited", s)
	}

	if v := exemptMetric(g, "api"); v < 20 {
		t.Errorf("tollgate_exempt_total{rule=api} = %v, want at least 20", v)
	}
	if v := exemptMetric(g, ""); v != 3 {
		t.Errorf("tollgate_exempt_total{rule=\"\"} = %v, want 3", v)
	}
}

// except10k is neverRefuse with an except list of 10,000 prefixes (none
// holding 203.0.113.7, the benchmarks' client, unless exempt).
func except10k(exempt bool) string {
	var b strings.Builder
	b.WriteString("rules: [{name: per-ip, policies: [{rate: 1000000/s, burst: 1000}], except: [{clients: [")
	for i := range 10000 {
		if i > 0 {
			b.WriteString(", ")
		}
		if exempt && i == 5000 {
			b.WriteString("203.0.113.0/24")
			continue
		}
		fmt.Fprintf(&b, "100.%d.%d.0/24", 2*i/256, 2*i%256) // apart: none merge
	}
	b.WriteString("]}]}]\n")
	return b.String()
}

// The gateway's path stays allocation-free with an except list of
// 10,000 prefixes, for a counted request and for an exempt one.
func TestServeAllocationsExcept10k(t *testing.T) {
	if racebuild.Enabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	for _, exempt := range []bool{false, true} {
		g := newTestGateway(t, demoRoute+except10k(exempt))
		var req fasthttp.Request
		req.SetRequestURI("http://example.com/items/42")
		var ctx fasthttp.RequestCtx
		ctx.Init(&req, &net.TCPAddr{IP: net.IPv4(203, 0, 113, 7), Port: 5555}, nil)
		g.fast.Serve(&ctx)
		n := testing.AllocsPerRun(200, func() {
			ctx.Response.Reset()
			g.fast.Serve(&ctx)
		})
		if ctx.Response.StatusCode() != 200 {
			t.Fatalf("exempt %v: status %d", exempt, ctx.Response.StatusCode())
		}
		if got := len(ctx.Response.Header.Peek("RateLimit-Policy")) > 0; got == exempt {
			t.Errorf("exempt %v: RateLimit-Policy present %v", exempt, got)
		}
		if n != 0 {
			t.Errorf("exempt %v: %v allocations per request, want 0", exempt, n)
		}
	}
}

// BenchmarkServeRuleAllowExcept10k is BenchmarkServeRuleAllow with an
// except list of 10,000 prefixes the client is not in: the difference
// is the list's cost on an allowed request.
func BenchmarkServeRuleAllowExcept10k(b *testing.B) { benchServe(b, demoRoute+except10k(false)) }
