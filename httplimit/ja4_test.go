package httplimit_test

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/httplimit"
	"github.com/tollgate-dev/tollgate/internal/testpki"
	"github.com/tollgate-dev/tollgate/ja4"
	"github.com/tollgate-dev/tollgate/rules"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// A net/http server over ja4.Listener, ja4.Config and ja4.ConnContext,
// behind the Limiter: a rule keyed by ja4 counts each TLS stack once,
// across connections, whatever header fields say.
func TestJA4KeyedLimiter(t *testing.T) {
	certFile, keyFile, _ := testpki.Server(t)
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	st, err := memory.New(memory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e, err := rules.New(rules.Config{Rules: []rules.Rule{{
		Name: "per-stack", Key: rules.Key{"ja4"},
		Policies: []rules.Policy{{Algorithm: "fixed_window", Limit: 2, Window: "1h"}},
	}}}, st)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		ConnContext:       ja4.ConnContext,
		TLSConfig:         ja4.Config(&tls.Config{Certificates: []tls.Certificate{cert}}),
		Handler:           httplimit.New(e, httplimit.Config{}).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })),
		ReadHeaderTimeout: 5 * time.Second,
	}
	go srv.ServeTLS(ja4.Listener{Listener: raw}, "", "")
	defer srv.Close()
	get := func(tc *tls.Config) int {
		t.Helper()
		tc.InsecureSkipVerify = true
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: tc, DisableKeepAlives: true}}
		req, _ := http.NewRequest("GET", "https://"+raw.Addr().String()+"/", nil)
		req.Header.Set("Ja4", "t13d1516h2_8daaf6152771_02713d6af862")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, s := range []struct {
		tc   *tls.Config
		want int
	}{
		{&tls.Config{}, 200}, {&tls.Config{}, 200}, {&tls.Config{}, 429},
		{&tls.Config{CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384}, MaxVersion: tls.VersionTLS12}, 200},
	} {
		if got := get(s.tc); got != s.want {
			t.Fatalf("%d, want %d", got, s.want)
		}
	}
}
