package ja4

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/testpki"
)

// A net/http server over Listener, Config and ConnContext hands each
// request its connection's fingerprint: the JA4 of the ClientHello the
// server saw, the same on every request of a connection, another for
// another ClientHello, and none without TLS.
func TestListenerAndConnContext(t *testing.T) {
	certFile, keyFile, _ := testpki.Server(t)
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []string // String of each hello, as the server's own callback sees it
	base := &tls.Config{
		Certificates: []tls.Certificate{cert},
		GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
			mu.Lock()
			seen = append(seen, String(h))
			mu.Unlock()
			return nil, nil
		},
	}
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		ConnContext: ConnContext,
		TLSConfig:   Config(base),
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, FromContext(r.Context()))
		}),
		ReadHeaderTimeout: 5 * time.Second,
	}
	go srv.ServeTLS(Listener{raw}, "", "")
	t.Cleanup(func() { srv.Close() })
	url := "https://" + raw.Addr().String() + "/"

	get := func(c *http.Client) string {
		t.Helper()
		resp, err := c.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	client := func(tc *tls.Config) *http.Client {
		tc.InsecureSkipVerify = true
		return &http.Client{Transport: &http.Transport{TLSClientConfig: tc, ForceAttemptHTTP2: true}}
	}
	a := client(&tls.Config{})
	fa := get(a)
	if fa2 := get(a); fa2 != fa { // the same connection, kept alive
		t.Fatalf("%q then %q", fa, fa2)
	}
	fb := get(client(&tls.Config{CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}}))
	mu.Lock()
	want := append([]string(nil), seen...)
	mu.Unlock()
	if len(want) != 2 || fa != want[0] || fb != want[1] || fa == fb || len(fa) != Size {
		t.Fatalf("fingerprints %q, %q; the server saw %q", fa, fb, want)
	}
	if fa[8:10] != "h2" {
		t.Fatalf("ALPN part of %q", fa)
	}

	// Without TLS there is none.
	plain := &http.Server{ConnContext: ConnContext, ReadHeaderTimeout: 5 * time.Second, Handler: srv.Handler}
	pl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go plain.Serve(Listener{pl})
	t.Cleanup(func() { plain.Close() })
	resp, err := http.Get("http://" + pl.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if len(b) != 0 {
		t.Fatalf("plain HTTP: %q", b)
	}
}

func TestSlotCapturesOnceAndAllocatesNothing(t *testing.T) {
	var s Slot
	if s.JA4() != "" || (*Slot)(nil).JA4() != "" || FromConn(nil) != "" || FromContext(context.Background()) != "" {
		t.Fatal("an empty slot answers")
	}
	first := &tls.ClientHelloInfo{CipherSuites: []uint16{tls.TLS_AES_128_GCM_SHA256}, SupportedVersions: []uint16{tls.VersionTLS13}}
	second := &tls.ClientHelloInfo{CipherSuites: []uint16{tls.TLS_AES_256_GCM_SHA384}, SupportedVersions: []uint16{tls.VersionTLS13}, HelloRetryRequest: true}
	c := &Conn{}
	first.Conn = c
	second.Conn = c
	n := testing.AllocsPerRun(1, func() { CaptureHello(first) })
	CaptureHello(second)
	if n != 0 {
		t.Fatalf("%v allocs to capture", n)
	}
	if got := FromConn(tls.Server(c, &tls.Config{})); got != String(first) {
		t.Fatalf("%q, want the first hello's %q", got, String(first))
	}
	ctx := ConnContext(context.Background(), tls.Server(c, &tls.Config{}))
	if n := testing.AllocsPerRun(100, func() { _ = FromContext(ctx) }); n != 0 {
		t.Fatalf("%v allocs per FromContext", n)
	}
}
