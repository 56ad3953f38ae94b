package ja4

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/testpki"
)

// helloServer is a crypto/tls HTTPS server on 127.0.0.1 that records the
// JA4 (and JA4_ro) of every first ClientHello it receives.
type helloServer struct {
	url string
	mu  sync.Mutex
	got []string // JA4 per handshake
	ro  []string
}

func startHelloServer(t *testing.T) *helloServer {
	t.Helper()
	certFile, keyFile, _ := testpki.Server(t)
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	s := &helloServer{}
	base := &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}}
	cfg := base.Clone()
	cfg.GetConfigForClient = func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		if !h.HelloRetryRequest {
			s.mu.Lock()
			s.got = append(s.got, String(h))
			s.ro = append(s.ro, RawOriginal(h))
			s.mu.Unlock()
		}
		return nil, nil
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("<html><body>ok</body></html>")) }),
		ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	s.url = "https://" + ln.Addr().(*net.TCPAddr).String() + "/"
	return s
}

func (s *helloServer) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	got := s.got
	s.got, s.ro = nil, nil
	return got
}

// curlJA4 is the fingerprint of Debian 12's curl 7.88.1 (OpenSSL 3.0) with
// no options beyond -k, to an IP address (so no SNI: 'i').
const (
	curlVersion = "curl 7.88.1 "
	curlJA4     = "t13i3111h2_e8f1e7e78f70_b26ce05bbdd6" // recorded on this machine, 2026-12-03
)

func TestCurlHandshake(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("no curl on this machine (apt-get install curl)")
	}
	out, err := exec.Command(curl, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(out), curlVersion) {
		t.Skipf("curl is %q; the recorded fingerprint is for %q", strings.SplitN(string(out), "\n", 2)[0], curlVersion)
	}
	s := startHelloServer(t)
	for i := 0; i < 2; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		b, err := exec.CommandContext(ctx, curl, "-sS", "-k", "--max-time", "15", s.url).CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("curl: %v: %s", err, b)
		}
	}
	got := s.take()
	if len(got) != 2 {
		t.Fatalf("%d handshakes recorded, want 2: %v", len(got), got)
	}
	for _, g := range got {
		t.Logf("curl JA4 %s", g)
		if g != curlJA4 {
			t.Errorf("curl JA4 = %s, want %s", g, curlJA4)
		}
	}
}

// chromiumJA4 is the fingerprint of Debian 12's Chromium 156 to an IP
// address (no SNI), recorded on this machine on 2026-12-03; its b and c
// parts are those of FoxIO's Chrome vector sigalg-grease. Whatever the
// version, the fingerprint must be the same across handshakes (Chromium
// shuffles its extension order per connection; JA4 sorts it away).
const (
	chromiumVersion = "Chromium 156."
	chromiumJA4     = "t13i1516h2_8daaf6152771_cb7bf5808d99"
)

func TestChromiumHandshake(t *testing.T) {
	chrome := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			chrome = p
			break
		}
	}
	if chrome == "" {
		t.Skip("no chromium on this machine (scripts/test.sh installs it)")
	}
	v, _ := exec.Command(chrome, "--version").Output()
	sameVersion := strings.Contains(string(v), chromiumVersion)
	if !sameVersion {
		t.Logf("chromium is %q, the recorded fingerprint is for %q: checking stability only", strings.TrimSpace(string(v)), chromiumVersion)
	}
	s := startHelloServer(t)
	var all []string
	for i := 0; i < 2; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		cmd := exec.CommandContext(ctx, chrome, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
			"--disable-background-networking", "--ignore-certificate-errors", "--user-data-dir="+t.TempDir(),
			"--dump-dom", s.url)
		b, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("chromium: %v: %s", err, b)
		}
		if !strings.Contains(string(b), "ok") {
			t.Fatalf("chromium did not load the page: %s", b)
		}
		got := s.take()
		if len(got) == 0 {
			t.Fatal("no handshake recorded")
		}
		all = append(all, got...)
	}
	for _, g := range all {
		t.Logf("chromium JA4 %s", g)
		if g != all[0] {
			t.Errorf("fingerprints differ across handshakes: %v", all)
			break
		}
		if !shape.MatchString(g) || !strings.HasPrefix(g, "t13i") || g[8:10] != "h2" {
			t.Errorf("chromium JA4 %s: want TLS 1.3, no SNI, ALPN h2", g)
		}
		if sameVersion && g != chromiumJA4 {
			t.Errorf("chromium JA4 = %s, want %s", g, chromiumJA4)
		}
	}
}
