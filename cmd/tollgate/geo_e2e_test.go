package main

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/geoiptest"
	"github.com/tollgate-dev/tollgate/internal/testpki"
)

// fromIP gets url over a new connection from the loopback address ip.
func fromIP(t *testing.T, ip, url string) int {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// tollgate serve with a geoip section: per-country and per-ASN limits
// from the database beside the file; the database replaced under the
// running process answers anew, and a corrupt one is refused, logged and
// counted while the one before serves on.
func TestE2EGeoIP(t *testing.T) {
	t.Parallel()
	srv, _ := origin(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "geo.mmdb")
	if err := geoiptest.WriteFile(db,
		geoiptest.Network{CIDR: "127.0.3.0/24", Country: "DE", ASN: 3320},
		geoiptest.Network{CIDR: "127.0.4.0/24", Country: "US", ASN: 16509},
	); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "tollgate.yaml")
	cfg := baseCfg + "routes: [{path: /, upstream: \"" + srv.URL + "\"}]\n" + `geoip: {country: geo.mmdb, asn: geo.mmdb, reload_interval: 1s}
rules:
  - name: per-country
    key: [country]
    policies: [{algorithm: fixed_window, limit: 2, window: 1h}]
  - name: cloud
    match: {asns: [16509]}
    key: [ip]
    policies: [{algorithm: fixed_window, limit: 1, window: 1h}]
`
	if err := os.WriteFile(file, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startServeFile(t, file, nil)
	url := p.url("/")
	for i, s := range []struct {
		ip   string
		want int
	}{
		{"127.0.3.1", 200}, {"127.0.3.2", 200}, {"127.0.3.3", 429}, // DE: 2 together
		{"127.0.4.1", 200}, {"127.0.4.1", 429}, // cloud: 1 per IP (a refusal charges nothing)
		{"127.0.4.2", 200}, {"127.0.4.3", 429}, // US: the country's 2
		{"127.0.5.1", 200}, {"127.0.6.1", 200}, {"127.0.7.1", 429}, // unknown: XX together
	} {
		if got := fromIP(t, s.ip, url); got != s.want {
			t.Fatalf("step %d from %s: %d, want %d", i, s.ip, got, s.want)
		}
	}
	// 127.0.8.0/24 becomes GB.
	if err := geoiptest.WriteFile(db,
		geoiptest.Network{CIDR: "127.0.3.0/24", Country: "DE", ASN: 3320},
		geoiptest.Network{CIDR: "127.0.4.0/24", Country: "US", ASN: 16509},
		geoiptest.Network{CIDR: "127.0.8.0/24", Country: "GB", ASN: 2856},
	); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the new database", func() bool {
		return p.metric(`tollgate_geoip_reloads_total{database="country"}`) == "1"
	})
	if got := fromIP(t, "127.0.8.1", url); got != 200 {
		t.Fatalf("GB after the reload: %d (still XX?)", got)
	}
	if err := geoiptest.Replace(db, []byte("MaxMind.com but truncated")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the refused database", func() bool {
		return p.metric(`tollgate_geoip_reload_errors_total{database="country"}`) == "1"
	})
	if got := fromIP(t, "127.0.8.2", url); got != 200 { // GB's 2nd: still the database before
		t.Fatalf("GB after the corrupt file: %d", got)
	}
	if got := fromIP(t, "127.0.8.3", url); got != 429 {
		t.Fatalf("GB's 3rd: %d", got)
	}
	if l := p.logText(); !strings.Contains(l, "geoip database reload failed; the previous version keeps serving") || !strings.Contains(l, "not a valid MaxMind database") {
		t.Errorf("the refusal is not logged:\n%s", l)
	}
}

// tollgate serve with a rule keyed by ja4 on a TLS listener, on the
// fasthttp path (HTTP/1.1) and the net/http one (http2: on, h2 by ALPN):
// one ClientHello configuration is one counter across connections, another
// has its own, and no header field moves a request to another.
func TestE2EJA4(t *testing.T) {
	t.Parallel()
	srv, _ := origin(t)
	certFile, keyFile, _ := testpki.Server(t)
	rule := `rules:
  - name: per-stack
    key: [ja4]
    policies: [{algorithm: fixed_window, limit: 2, window: 1h}]
`
	for _, h2 := range []bool{false, true} {
		t.Run(fmt.Sprintf("h2=%v", h2), func(t *testing.T) {
			listen := fmt.Sprintf(`listen: {addr: "127.0.0.1:0", tls: {cert: %q, key: %q}}`, certFile, keyFile)
			if h2 {
				listen = fmt.Sprintf(`listen: {addr: "127.0.0.1:0", http2: on, tls: {cert: %q, key: %q}}`, certFile, keyFile)
			}
			p := startServe(t, listen+"\nadmin: {addr: \"127.0.0.1:0\"}\nreload: {watch: false}\nroutes: [{path: /, upstream: \""+srv.URL+"\"}]\n"+rule)
			get := func(tc *tls.Config) int {
				t.Helper()
				tc = tc.Clone()
				tc.InsecureSkipVerify = true
				tr := &http.Transport{TLSClientConfig: tc, DisableKeepAlives: true, Protocols: new(http.Protocols)}
				tr.Protocols.SetHTTP1(!h2)
				tr.Protocols.SetHTTP2(h2)
				req, _ := http.NewRequest("GET", "https://"+p.addr+"/", nil)
				req.Header.Set("Ja4", "t13d1516h2_8daaf6152771_02713d6af862")
				resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if (resp.ProtoMajor == 2) != h2 {
					t.Fatalf("HTTP/%d", resp.ProtoMajor)
				}
				return resp.StatusCode
			}
			a := &tls.Config{}
			b := &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305}}
			for i, s := range []struct {
				tc   *tls.Config
				want int
			}{{a, 200}, {a, 200}, {a, 429}, {b, 200}, {b, 200}, {b, 429}} {
				if got := get(s.tc); got != s.want {
					t.Fatalf("request %d: %d, want %d", i+1, got, s.want)
				}
			}
		})
	}
}
