package gateway

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/config"
	"github.com/tollgate-dev/tollgate/internal/geoiptest"
	"github.com/tollgate-dev/tollgate/ja4"
)

// geoCounter is a geoip counter (tollgate_geoip_reloads_total or
// ..._reload_errors_total) of database db, as /metrics shows it.
func geoCounter(g *Gateway, name, db string) float64 {
	mfs, _ := g.core.M.Reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == db {
				return m.GetCounter().GetValue()
			}
		}
	}
	return -1
}

// from is a client whose connections come from the loopback address ip
// (Linux routes all of 127/8 to lo): the gateway's TCP peer, and so the
// client IP the database is asked about. A new connection per request.
func from(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
}

func statusOf(t *testing.T, c *http.Client, url string, header ...string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// Per-country limits and an ASN matcher from a MaxMind-format database
// through the gateway; the file replaced on disk gives new answers
// without a restart, and a corrupt replacement is kept out (logged,
// counted), the version before serving on.
func TestGeoIPEndToEnd(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "geo.mmdb")
	v1 := []geoiptest.Network{
		{CIDR: "127.0.0.2/31", Country: "DE", ASN: 3320}, // .2 and .3
		{CIDR: "127.0.0.4/32", Country: "US", ASN: 16509},
		{CIDR: "127.0.0.5/32", Country: "FR", ASN: 3215},
	}
	if err := geoiptest.WriteFile(db, v1...); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "tollgate.yaml")
	yaml := `listen: {addr: "127.0.0.1:0"}
admin: {addr: "off"}
reload: {watch: false}
routes: [{path: /, upstream: demo}]
geoip: {country: geo.mmdb, asn: geo.mmdb, reload_interval: 1s}
rules:
  - name: per-country
    key: [country]
    policies: [{algorithm: fixed_window, limit: 3, window: 1h}]
  - name: cloud
    match: {asns: [16509]}
    policies: [{algorithm: fixed_window, limit: 1, window: 1h}]
`
	g := startFileGateway(t, path, yaml)
	url := "http://" + g.Addr().String() + "/"
	steps := []struct {
		ip   string
		want int
	}{
		// DE: .2 and .3 share one counter of 3.
		{"127.0.0.2", 200}, {"127.0.0.3", 200}, {"127.0.0.2", 200}, {"127.0.0.3", 429},
		// The cloud network: its own limit of 1 besides the US one.
		{"127.0.0.4", 200}, {"127.0.0.4", 429},
		// FR, once.
		{"127.0.0.5", 200},
		// Addresses the database does not place share XX's counter.
		{"127.0.0.6", 200}, {"127.0.0.7", 200}, {"127.0.0.8", 200}, {"127.0.0.9", 429},
	}
	for i, s := range steps {
		if got := statusOf(t, from(s.ip), url); got != s.want {
			t.Fatalf("step %d from %s: %d, want %d", i, s.ip, got, s.want)
		}
	}
	// A client-supplied forwarded-for header is no client IP (no
	// trusted proxy): .9 stays XX, refused, whatever it claims.
	if got := statusOf(t, from("127.0.0.9"), url, "X-Forwarded-For", "127.0.0.5"); got != 429 {
		t.Fatalf("a forged X-Forwarded-For: %d", got)
	}

	// v2 moves .5 to DE (exhausted) and places .10 in GB.
	v2 := append(v1[:2:2], geoiptest.Network{CIDR: "127.0.0.5/32", Country: "DE", ASN: 3320}, geoiptest.Network{CIDR: "127.0.0.10/32", Country: "GB"})
	if err := geoiptest.WriteFile(db, v2...); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the new database", func() bool { return geoCounter(g, "tollgate_geoip_reloads_total", "country") == 1 })
	if got := statusOf(t, from("127.0.0.5"), url); got != 429 {
		t.Fatalf("after the replacement, .5 (now DE): %d", got)
	}
	if got := statusOf(t, from("127.0.0.10"), url); got != 200 {
		t.Fatalf("after the replacement, .10 (GB): %d", got)
	}

	// A corrupt replacement is refused; v2 keeps answering.
	if err := geoiptest.Replace(db, []byte("not a MaxMind database, half written")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the refusal", func() bool { return geoCounter(g, "tollgate_geoip_reload_errors_total", "country") == 1 })
	if n := geoCounter(g, "tollgate_geoip_reloads_total", "country"); n != 1 {
		t.Fatalf("%v reloads", n)
	}
	for _, s := range []struct {
		ip   string
		want int
	}{{"127.0.0.5", 429}, {"127.0.0.10", 200}, {"127.0.0.10", 200}, {"127.0.0.10", 429}} {
		if got := statusOf(t, from(s.ip), url); got != s.want {
			t.Fatalf("after the corrupt file, %s: %d, want %d", s.ip, got, s.want)
		}
	}
	if gc := g.Config().GeoIP; gc.DBs()[0].DB.Err() == nil {
		t.Fatal("no error kept for the corrupt version")
	}
}

// A config without a geoip section refuses a rule keyed by country at
// its line, and a reload to it keeps the running configuration.
func TestGeoIPRuleWithoutSectionRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tollgate.yaml")
	bad := "routes: [{path: /, upstream: demo}]\nrules:\n  - name: c\n    key: [country]\n    policies: [{rate: 1/s}]\n"
	if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := config.Load(path)
	if err == nil || !strings.Contains(err.Error(), path+":4:11: rules[0].key[0]: the country key part needs a country database") {
		t.Fatalf("load: %v", err)
	}
	g, _ := startTestGateway(t, "routes: [{path: /, upstream: demo}]\n")
	if err := g.ReloadFile(path); err == nil {
		t.Fatal("reloaded")
	}
	if len(g.Config().Rules) != 0 {
		t.Fatal("the bad configuration serves")
	}
}

// tlsClient makes a new TLS connection per request with the given
// ClientHello settings (over HTTP/2 when h2).
// from the loopback address ip.
func tlsClient(h2 bool, tc *tls.Config, ip string) *http.Client {
	tc = tc.Clone()
	tc.InsecureSkipVerify = true
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	tr := &http.Transport{TLSClientConfig: tc, DisableKeepAlives: true, Protocols: new(http.Protocols), DialContext: d.DialContext}
	if h2 {
		tr.Protocols.SetHTTP2(true)
	} else {
		tr.Protocols.SetHTTP1(true)
	}
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// A rule keyed by JA4 over TLS, on the fasthttp path (HTTP/1.1) and on
// the net/http path (HTTP/2): two ClientHello configurations get separate
// counters, several connections with one configuration (and from other
// addresses) share one, and a header cannot forge the fingerprint.
func TestJA4KeyEndToEnd(t *testing.T) {
	const rule = `routes: [{path: /, upstream: demo}]
rules:
  - name: per-stack
    key: [ja4]
    policies: [{algorithm: fixed_window, limit: 3, window: 1h}]
`
	// A's ClientHello is Go's default; B offers other cipher suites
	// and groups, so its hashes differ.
	a := &tls.Config{}
	b := &tls.Config{
		CipherSuites:     []uint16{tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384, tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305},
		CurvePreferences: []tls.CurveID{tls.CurveP256},
	}
	for _, h2 := range []bool{false, true} {
		t.Run(fmt.Sprintf("h2=%v", h2), func(t *testing.T) {
			var url string
			if h2 {
				_, base := startH2Gateway(t, true, rule)
				url = base + "/"
			} else {
				cert, key := writeTestCert(t)
				g := newTestGateway(t, fmt.Sprintf("listen: {addr: \"127.0.0.1:0\", tls: {cert: %q, key: %q}}\nadmin: {addr: \"off\"}\nreload: {watch: false}\n", cert, key)+rule)
				if err := g.Start(); err != nil {
					t.Fatal(err)
				}
				url = "https://" + g.Addr().String() + "/"
			}
			n := 0
			get := func(c *tls.Config, header ...string) int {
				t.Helper()
				n++ // every connection from another address
				cl := tlsClient(h2, c, fmt.Sprintf("127.0.1.%d", n))
				req, _ := http.NewRequest("GET", url, nil)
				for i := 0; i+1 < len(header); i += 2 {
					req.Header.Set(header[i], header[i+1])
				}
				resp, err := cl.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if want := map[bool]int{false: 1, true: 2}[h2]; resp.ProtoMajor != want {
					t.Fatalf("HTTP/%d", resp.ProtoMajor)
				}
				return resp.StatusCode
			}
			for i, want := range []int{200, 200, 200, 429} {
				if got := get(a); got != want {
					t.Fatalf("A, connection %d: %d, want %d", i+1, got, want)
				}
			}
			// B is another stack: its own counter, whatever header
			// fields claim.
			for i, want := range []int{200, 200, 200, 429} {
				if got := get(b, "Ja4", "t13d1516h2_8daaf6152771_02713d6af862", "X-Ja4-Fingerprint", "x"); got != want {
					t.Fatalf("B, connection %d: %d, want %d", i+1, got, want)
				}
			}
		})
	}
}

// echoJA4 serves, over TLS, each request's fingerprint as its body (a
// net/http server over ja4.Listener), so that a test learns the JA4 of
// the ClientHello its client sends.
func echoJA4(t *testing.T) string {
	t.Helper()
	cert, key := writeTestCert(t)
	c, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		ConnContext:       ja4.ConnContext,
		TLSConfig:         ja4.Config(&tls.Config{Certificates: []tls.Certificate{c}, NextProtos: []string{"h2", "http/1.1"}}),
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, ja4.FromContext(r.Context())) }),
		ReadHeaderTimeout: 5 * time.Second,
	}
	go srv.ServeTLS(ja4.Listener{Listener: raw}, "", "")
	t.Cleanup(func() { srv.Close() })
	return "https://" + raw.Addr().String() + "/"
}

// A ja4 matcher lists a real client's fingerprint, learnt from a server
// of its own: that client's requests match (and are limited), another
// ClientHello's do not, on both data paths.
func TestJA4MatcherEndToEnd(t *testing.T) {
	echo := echoJA4(t)
	a := &tls.Config{}
	b := &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}}
	for _, h2 := range []bool{false, true} {
		t.Run(fmt.Sprintf("h2=%v", h2), func(t *testing.T) {
			body := func(url string, tc *tls.Config) (int, string) {
				t.Helper()
				resp, err := tlsClient(h2, tc, "127.0.0.1").Get(url)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, string(b)
			}
			_, fp := body(echo, a)
			if len(fp) != ja4.Size {
				t.Fatalf("fingerprint %q", fp)
			}
			rule := fmt.Sprintf(`routes: [{path: /, upstream: demo}]
rules:
  - name: that-stack
    match: {ja4: [%q]}
    key: [global]
    policies: [{algorithm: fixed_window, limit: 1, window: 1h}]
`, fp[:11]+strings.ToUpper(fp[11:])) // hashes in upper case: compared in lower
			var url string
			if h2 {
				_, base := startH2Gateway(t, true, rule)
				url = base + "/"
			} else {
				cert, key := writeTestCert(t)
				g := newTestGateway(t, fmt.Sprintf("listen: {addr: \"127.0.0.1:0\", tls: {cert: %q, key: %q}}\nadmin: {addr: \"off\"}\nreload: {watch: false}\n", cert, key)+rule)
				if err := g.Start(); err != nil {
					t.Fatal(err)
				}
				url = "https://" + g.Addr().String() + "/"
			}
			for i, want := range []int{200, 429, 429} {
				if got, _ := body(url, a); got != want {
					t.Fatalf("the listed stack, request %d: %d, want %d", i+1, got, want)
				}
			}
			for i := range 3 {
				if got, _ := body(url, b); got != 200 {
					t.Fatalf("another stack, request %d: %d", i+1, got)
				}
			}
		})
	}
}
