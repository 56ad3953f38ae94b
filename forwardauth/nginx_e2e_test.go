package forwardauth

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/config"
	"github.com/tollgate-dev/tollgate/internal/logtest"
	"github.com/tollgate-dev/tollgate/rules"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// The addresses the shipped snippets use, which the end-to-end tests
// replace with their own listeners'.
const (
	snippetProxy    = "127.0.0.1:8080"
	snippetTollgate = "127.0.0.1:9000"
	snippetOrigin   = "127.0.0.1:8081"
)

// e2eOrigin is the origin behind the proxy: "origin ok" for every path but
// /api/forbidden, which is the origin's own 403, and /echo, which answers
// the request body.
func e2eOrigin(t *testing.T) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/forbidden" {
			http.Error(w, "origin says no", http.StatusForbidden)
			return
		}
		if r.URL.Path == "/echo" {
			io.Copy(w, r.Body)
			return
		}
		io.WriteString(w, "origin ok")
	}))
	t.Cleanup(s.Close)
	return s
}

// e2eTollgate serves the forward-auth handler over the shipped
// examples/forwardauth/tollgate.yaml, counting the auth requests.
func e2eTollgate(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	return e2eTollgateTrusting(t, nil)
}

// e2eTollgateTrusting is e2eTollgate with the handler trusting only the
// proxies given, or the file's when nil.
func e2eTollgateTrusting(t *testing.T, trusted []string) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	cfg, err := config.Load(filepath.Join("..", "examples", "forwardauth", "tollgate.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := memory.New(memory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e, err := rules.New(cfg.Config, st)
	if err != nil {
		t.Fatal(err)
	}
	if trusted == nil {
		trusted = cfg.ClientIP.TrustedProxies
	}
	h, err := New(e, Config{TrustedProxies: trusted})
	if err != nil {
		t.Fatal(err)
	}
	var asked atomic.Int64
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s, &asked
}

// freeAddr returns a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// renderSnippet reads the shipped snippet and replaces each address in
// repl (snippet address → test address), failing if one is absent: the
// test must run what is shipped.
func renderSnippet(t *testing.T, name string, repl map[string]string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "examples", "forwardauth", name))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for from, to := range repl {
		if !strings.Contains(s, from) {
			t.Fatalf("%s does not contain %q", name, from)
		}
		s = strings.ReplaceAll(s, from, to)
	}
	return s
}

// startProcess runs cmd until the test ends, waits for addr to accept
// connections, and returns a function that stops it at once.
func startProcess(t *testing.T, cmd *exec.Cmd, addr string) (stop func()) {
	t.Helper()
	out := &logtest.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				<-exited
			}
		})
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("%s output:\n%s", filepath.Base(cmd.Path), out)
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return stop
		}
		select {
		case <-exited:
			t.Fatalf("%s exited before listening on %s:\n%s", cmd.Path, addr, out)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not listening on %s after 20s:\n%s", cmd.Path, addr, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startNginx runs nginx in the foreground under its own prefix with conf.
func startNginx(t *testing.T, conf, addr string) (stop func()) {
	t.Helper()
	bin, err := exec.LookPath("nginx")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/nginx"); serr != nil {
			t.Skip("nginx is not installed: install it (Debian: apt-get install nginx; scripts/test.sh does) to run the nginx end-to-end tests")
		}
		bin = "/usr/sbin/nginx"
	}
	dir := t.TempDir()
	// nginx's workers run as nobody when the test runs as root.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	return startProcess(t, exec.Command(bin, "-p", dir, "-c", path, "-e", "stderr", "-g", "daemon off;"), addr)
}

// checkBodyReachesOrigin posts a body through the proxy: the auth
// request must not have consumed it.
func checkBodyReachesOrigin(t *testing.T, base string) {
	t.Helper()
	c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Post(base+"/echo", "text/plain", strings.NewReader("the body"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(b) != "the body" {
		t.Errorf("POST /echo: %d %q, want the body back from the origin", resp.StatusCode, b)
	}
}

// get sends one request without keeping connections (each client is new).
func get(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestNginxSnippetAnswersAllowedThen429AndFailsOpenWhenTollgateIsDown(t *testing.T) {
	origin := e2eOrigin(t)
	tg, asked := e2eTollgate(t)
	addr := freeAddr(t)
	conf := renderSnippet(t, "nginx.conf", map[string]string{
		snippetProxy: addr, snippetTollgate: tg.Listener.Addr().String(), snippetOrigin: origin.Listener.Addr().String(),
	})
	stop := startNginx(t, conf, addr)
	base := "http://" + addr

	// The origin's own 403 passes through, decided and counted.
	h := allowedThen429(t, base)
	if h.Get("Retry-After") == "" || h.Get("RateLimit") == "" || h.Get("RateLimit-Policy") == "" ||
		h.Get("Cache-Control") != "no-store" || h.Get("Content-Type") != rules.ContentTypeProblem {
		t.Errorf("429 fields: %v", h)
	}
	if h.Get(HeaderStatus) != "" || h.Get(HeaderRefusal) != "" {
		t.Errorf("tollgate's fields for nginx reached the client: %v", h)
	}
	// No rule matches: the origin's answer without fields.
	if resp, body := get(t, base+"/public"); resp.StatusCode != 200 || body != "origin ok" || resp.Header.Get("RateLimit") != "" {
		t.Errorf("/public: %d %q %v", resp.StatusCode, body, resp.Header)
	}

	// tollgate down: the snippet fails open.
	tg.Close()
	if resp, body := get(t, base+"/api/items"); resp.StatusCode != 200 || body != "origin ok" || resp.Header.Get("RateLimit") != "" {
		t.Errorf("tollgate down: %d %q %v, want the origin's 200 (fail open)", resp.StatusCode, body, resp.Header)
	}

	// nginx down: nothing reaches tollgate.
	stop()
	before := asked.Load()
	c := &http.Client{Timeout: 5 * time.Second}
	if resp, err := c.Get(base + "/api/items"); err == nil {
		resp.Body.Close()
		t.Errorf("nginx down: got %d, want a connection error", resp.StatusCode)
	}
	if asked.Load() != before {
		t.Errorf("nginx down: tollgate was asked")
	}
}

func TestNginxSnippetWithoutTheFailOpenLineAnswers500WhenTollgateIsDown(t *testing.T) {
	origin := e2eOrigin(t)
	tg, _ := e2eTollgate(t)
	addr := freeAddr(t)
	conf := renderSnippet(t, "nginx.conf", map[string]string{
		snippetProxy: addr, snippetTollgate: tg.Listener.Addr().String(), snippetOrigin: origin.Listener.Addr().String(),
		"error_page 500 = @tollgate_down;": "",
	})
	startNginx(t, conf, addr)
	if resp, _ := get(t, "http://"+addr+"/api/items"); resp.StatusCode != 200 {
		t.Fatalf("tollgate up: %d", resp.StatusCode)
	}
	tg.Close()
	if resp, body := get(t, "http://"+addr+"/api/items"); resp.StatusCode != 500 || body == "origin ok" {
		t.Errorf("tollgate down, fail closed: %d %q, want nginx's 500", resp.StatusCode, body)
	}
}

// A 403 from tollgate without X-Tollgate-Status (here: nginx is not a
// trusted proxy) is no rate limit: the client gets the 403, not a 429.
func TestNginxSnippetKeepsA403ThatIsNotARefusal(t *testing.T) {
	origin := e2eOrigin(t)
	tg, _ := e2eTollgateTrusting(t, []string{"192.0.2.1"})
	addr := freeAddr(t)
	conf := renderSnippet(t, "nginx.conf", map[string]string{
		snippetProxy: addr, snippetTollgate: tg.Listener.Addr().String(), snippetOrigin: origin.Listener.Addr().String(),
	})
	startNginx(t, conf, addr)
	resp, body := get(t, "http://"+addr+"/api/items")
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Retry-After") != "" || body == "origin ok" {
		t.Errorf("%d %q %v, want nginx's plain 403", resp.StatusCode, body, resp.Header)
	}
}

// allowedThen429 drives the exchange both snippets share through the proxy
// at base: the origin's own 403 passes with fields, four 200s carry the
// RateLimit fields, the sixth request gets 429 with a problem body for
// /api/items, and a POST body reaches the origin. It returns the 429's
// header for the proxy's own checks.
func allowedThen429(t *testing.T, base string) http.Header {
	t.Helper()
	resp, body := get(t, base+"/api/forbidden")
	if resp.StatusCode != 403 || !strings.Contains(body, "origin says no") || !strings.HasPrefix(resp.Header.Get("RateLimit"), `"api";r=4;t=`) {
		t.Fatalf("origin's 403: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	for i := range 4 {
		resp, body := get(t, base+"/api/items")
		if resp.StatusCode != 200 || body != "origin ok" {
			t.Fatalf("request %d: %d %q, want the origin's 200", i+2, resp.StatusCode, body)
		}
		if resp.Header.Get("RateLimit") == "" || resp.Header.Get("RateLimit-Policy") == "" {
			t.Errorf("request %d: no RateLimit fields: %v", i+2, resp.Header)
		}
	}
	resp, body = get(t, base+"/api/items")
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("sixth request: %d %q, want 429", resp.StatusCode, body)
	}
	var problem struct {
		Status   int    `json:"status"`
		Instance string `json:"instance"`
	}
	if err := json.Unmarshal([]byte(body), &problem); err != nil || problem.Status != 429 || problem.Instance != "/api/items" {
		t.Errorf("429 body %q: %+v %v", body, problem, err)
	}
	checkBodyReachesOrigin(t, base)
	return resp.Header
}

// uncleanAPIPaths are seven spellings of paths under /api/ that a
// client sends through the proxy, which forwards each as sent: each must
// count against the shipped rule on /api/ (5 a minute).
var uncleanAPIPaths = []string{"//api/x", "/./api/x", "/x/../api/x", "/%2e/api/x", "/api%2Fx", "/x/..%2Fapi/x", "/api/x/.."}

// pathOrigin is an origin that answers "origin ok" and records the path
// of each request as it arrived (encodings kept).
func pathOrigin(t *testing.T) (*httptest.Server, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var paths []string
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.RequestURI)
		mu.Unlock()
		io.WriteString(w, "origin ok")
	}))
	t.Cleanup(s.Close)
	return s, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), paths...)
	}
}

// getRaw sends "GET target" to addr with the target written as given
// (a client library would clean or re-encode it) and returns the status.
func getRaw(t *testing.T, addr, target string) int {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, "GET "+target+" HTTP/1.1\r\nHost: "+addr+"\r\nConnection: close\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("GET %s: %v", target, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// uncleanPathsAreLimited sends uncleanAPIPaths through the proxy at
// addr: the first five are allowed and reach the origin, the last two
// are refused (429). It returns how many the origin answered.
func uncleanPathsAreLimited(t *testing.T, addr string) {
	t.Helper()
	var got []int
	for _, p := range uncleanAPIPaths {
		got = append(got, getRaw(t, addr, p))
	}
	want := []int{200, 200, 200, 200, 200, 429, 429}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("statuses for %q: %v, want %v (a limit of 5 on /api/)", uncleanAPIPaths, got, want)
		}
	}
}

// Paths the client spells with dot segments, repeated slashes or
// encoded dots and slashes count against the /api/ rule as /api/x does,
// and the origin gets the path nginx normalized, the one tollgate decided on.
func TestNginxSnippetLimitsUncleanPaths(t *testing.T) {
	origin, seen := pathOrigin(t)
	tg, _ := e2eTollgate(t)
	addr := freeAddr(t)
	conf := renderSnippet(t, "nginx.conf", map[string]string{
		snippetProxy: addr, snippetTollgate: tg.Listener.Addr().String(), snippetOrigin: origin.Listener.Addr().String(),
	})
	startNginx(t, conf, addr)
	uncleanPathsAreLimited(t, addr)
	want := []string{"/api/x", "/api/x", "/api/x", "/api/x", "/api/x"}
	if got := seen(); !slices.Equal(got, want) {
		t.Errorf("the origin got %q, want %q", got, want)
	}
}
