package main

import (
	"bufio"
	"crypto/sha1"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/redistest"
)

// seen records what the origin received.
type seen struct {
	header http.Header
	host   string
	path   string
}

func origin(t *testing.T) (*httptest.Server, chan seen) {
	ch := make(chan seen, 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case ch <- seen{header: r.Header.Clone(), host: r.Host, path: r.URL.Path}:
		default:
		}
		w.Header().Set("X-Origin", "yes")
		w.Header().Set("Connection", "X-Internal")
		w.Header().Set("X-Internal", "secret")
		io.WriteString(w, "origin says hi")
	}))
	t.Cleanup(srv.Close)
	return srv, ch
}

const baseCfg = `listen: {addr: "127.0.0.1:0"}
admin: {addr: "127.0.0.1:0"}
reload: {watch: false}
`

// Requests over the limit get 429 with the rate-limit headers and a
// problem+json body; allowed ones reach the origin with X-Forwarded-*
// appended and hop-by-hop fields removed.
func TestE2ELimitsAndProxies(t *testing.T) {
	t.Parallel()
	srv, seenCh := origin(t)
	p := startServe(t, baseCfg+`routes:
  - {path: /, upstream: "`+srv.URL+`/base"}
headers: {styles: [draft10, legacy], reset: delta}
rules:
  - name: per-ip
    policies: [{algorithm: fixed_window, limit: 3, window: 1h}]
`)
	for i := range 3 {
		resp, body := get(t, p.url("/hello?x=1"), "X-Forwarded-For", "203.0.113.9",
			"Connection", "X-Hop", "X-Hop", "drop me", "Host", "api.example")
		if resp.StatusCode != 200 || body != "origin says hi" {
			t.Fatalf("request %d: %d %q", i, resp.StatusCode, body)
		}
		if got, want := resp.Header.Get("X-Ratelimit-Remaining"), strconv.Itoa(2-i); got != want {
			t.Errorf("request %d: X-RateLimit-Remaining = %q, want %q", i, got, want)
		}
		if !strings.Contains(resp.Header.Get("Ratelimit-Policy"), `"per-ip";q=3;w=3600`) {
			t.Errorf("RateLimit-Policy = %q", resp.Header.Get("Ratelimit-Policy"))
		}
		if resp.Header.Get("X-Internal") != "" || resp.Header.Get("X-Origin") != "yes" {
			t.Errorf("response hop-by-hop handling: %v", resp.Header)
		}
	}
	s := <-seenCh
	if got := s.header.Get("X-Forwarded-For"); got != "127.0.0.1" {
		t.Errorf("origin saw X-Forwarded-For %q, want the peer only: the client is not a trusted proxy", got)
	}
	if s.header.Get("X-Forwarded-Host") != "api.example" || s.header.Get("X-Forwarded-Proto") != "http" {
		t.Errorf("origin saw X-Forwarded-Host %q, -Proto %q", s.header.Get("X-Forwarded-Host"), s.header.Get("X-Forwarded-Proto"))
	}
	if s.header.Get("X-Hop") != "" {
		t.Errorf("a field named by Connection reached the origin")
	}
	if s.path != "/base/hello" {
		t.Errorf("origin path = %q, want /base/hello", s.path)
	}
	resp, body := get(t, p.url("/hello"))
	if resp.StatusCode != 429 {
		t.Fatalf("4th request: %d, want 429", resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("refusal Content-Type = %q", ct)
	}
	ra, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	if err != nil || ra <= 0 || ra > 3600 {
		t.Errorf("Retry-After = %q", resp.Header.Get("Retry-After"))
	}
	var prob map[string]any
	if err := json.Unmarshal([]byte(body), &prob); err != nil || prob["status"] != float64(429) {
		t.Errorf("problem body %q: %v", body, err)
	}
	if resp.Header.Get("Ratelimit") == "" || resp.Header.Get("X-Ratelimit-Remaining") != "0" {
		t.Errorf("refusal lacks rate-limit headers: %v", resp.Header)
	}
	if got := p.metric(`tollgate_decisions_total{outcome="refused",policy="per-ip",rule="per-ip"}`); got != "1" {
		t.Errorf("refused metric = %q, want 1", got)
	}
	if got := p.metric(`tollgate_decisions_total{outcome="allowed",policy="per-ip",rule="per-ip"}`); got != "3" {
		t.Errorf("allowed metric = %q, want 3", got)
	}
	if got := p.metric(`tollgate_upstream_responses_total{class="2xx",route="/"}`); got != "3" {
		t.Errorf("upstream 2xx metric = %q, want 3", got)
	}
}

// A good reload swaps rules and keeps the counters of unchanged ones; a
// bad file is counted and the old configuration keeps serving. Both
// SIGHUP and a file change trigger it.
func TestE2EReload(t *testing.T) {
	t.Parallel()
	srv, _ := origin(t)
	route := "routes: [{path: /, upstream: \"" + srv.URL + "\"}]\n"
	rule := `rules:
  - name: steady
    policies: [{algorithm: fixed_window, limit: 3, window: 1h}]
`
	p := startServe(t, strings.Replace(baseCfg, "watch: false", "watch: true, interval: 50ms", 1)+route+rule)
	status := func() int {
		resp, _ := get(t, p.url("/"))
		return resp.StatusCode
	}
	for range 2 {
		if status() != 200 {
			t.Fatal("first requests refused")
		}
	}
	reloads := func(result string) string {
		return p.metric(`tollgate_config_reloads_total{result="` + result + `"}`)
	}

	// Good reload by SIGHUP: a new rule, the old one unchanged. The
	// file watcher may see the same change; either way it is one
	// configuration.
	added := rule + `  - name: paths
    match: {paths: [/limited]}
    policies: [{algorithm: fixed_window, limit: 1, window: 1h}]
`
	os.WriteFile(p.file, []byte(strings.Replace(baseCfg, "watch: false", "watch: true, interval: 50ms", 1)+route+added), 0o644)
	p.signal(syscall.SIGHUP)
	eventually(t, "a successful reload", func() bool { return reloads("success") != "0" })
	// steady kept its count (2 used of 3): one more passes, then 429.
	resp, _ := get(t, p.url("/limited"))
	if resp.StatusCode != 200 {
		t.Fatalf("after reload: %d, want 200 (steady's 3rd)", resp.StatusCode)
	}
	if s := status(); s != 429 {
		t.Fatalf("after reload: %d, want 429: steady's counter did not survive the reload", s)
	}

	// A bad file, written without a signal: the watcher finds it,
	// counts a failure, and the old rules keep serving.
	os.WriteFile(p.file, []byte(baseCfg+route+"rules: [{name: x, policies: [{rate: 0/s}]}]\n"), 0o644)
	eventually(t, "a failed reload", func() bool { return reloads("failure") != "0" })
	if got := p.metric("tollgate_config_last_reload_successful"); got != "0" {
		t.Errorf("last_reload_successful = %q after a bad file", got)
	}
	if s := status(); s != 429 {
		t.Fatalf("after a bad reload: %d, want 429 from the old rules", s)
	}
	if !strings.Contains(p.logText(), "rate") {
		t.Errorf("the bad reload was not logged with its problem")
	}
	resp, body := get(t, "http://"+p.admin+"/config")
	if resp.StatusCode != 200 || !strings.Contains(body, "name: paths") {
		t.Errorf("/config does not show the running config: %d %q", resp.StatusCode, body)
	}
}

// SIGTERM stops accepting, lets an in-flight request finish, and exits 0.
func TestE2EShutdownWithInFlight(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
		io.WriteString(w, "finished")
	}))
	defer srv.Close()
	p := startServe(t, baseCfg+"routes: [{path: /, upstream: \""+srv.URL+"\"}]\nshutdown_timeout: 20s\n")
	done := make(chan string, 1)
	go func() {
		resp, err := http.Get(p.url("/slow"))
		if err != nil {
			done <- "error: " + err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		done <- fmt.Sprintf("%d %s", resp.StatusCode, b)
	}()
	<-entered
	p.signal(syscall.SIGTERM)
	eventually(t, "the listener to close", func() bool {
		c, err := net.DialTimeout("tcp", p.addr, time.Second)
		if err != nil {
			return true
		}
		c.Close()
		return false
	})
	select {
	case r := <-done:
		t.Fatalf("in-flight request ended before its origin answered: %s", r)
	default:
	}
	close(release)
	if r := <-done; r != "200 finished" {
		t.Fatalf("in-flight request = %q, want 200 finished", r)
	}
	if code := p.wait(10 * time.Second); code != 0 {
		t.Fatalf("exit code %d, want 0", code)
	}
}

// A shutdown whose timeout ends before a slow request finishes cuts it:
// the process says how many it cut and exits non-zero.
func TestE2EShutdownCuttingARequestFails(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
	}))
	defer srv.Close()
	defer close(release)
	p := startServe(t, baseCfg+"routes: [{path: /, upstream: \""+srv.URL+"\"}]\nshutdown_timeout: 300ms\n")
	done := make(chan error, 1)
	go func() {
		resp, err := http.Get(p.url("/slow"))
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		done <- err
	}()
	<-entered
	p.signal(syscall.SIGTERM)
	if code := p.wait(20 * time.Second); code != 1 {
		t.Fatalf("exit code %d, want 1: a request was cut", code)
	}
	if err := <-done; err == nil {
		t.Errorf("the slow request completed; it should have been cut")
	}
	if log := p.logText(); !strings.Contains(log, "requests still running were cut") || !strings.Contains(log, "requests=1") {
		t.Errorf("the log does not say that 1 request was cut:\n%s", log)
	}
}

// A dead upstream answers 502 and a slow one 504, both problem+json.
func TestE2EUpstreamErrors(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	p := startServe(t, baseCfg+`upstream: {response_timeout: 300ms}
routes:
  - {path: /dead, upstream: "http://`+freeAddr(t)+`"}
  - {path: /slow, upstream: "`+slow.URL+`"}
`)
	resp, body := get(t, p.url("/dead"))
	if resp.StatusCode != 502 || resp.Header.Get("Content-Type") != "application/problem+json" || !strings.Contains(body, `"status":502`) {
		t.Errorf("dead upstream: %d %q %q", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	resp, body = get(t, p.url("/slow"))
	if resp.StatusCode != 504 || !strings.Contains(body, `"status":504`) {
		t.Errorf("slow upstream: %d %q", resp.StatusCode, body)
	}
	resp, _ = get(t, p.url("/nothing-routes-here"))
	if resp.StatusCode != 404 {
		t.Errorf("unrouted path: %d, want 404", resp.StatusCode)
	}
	if got := p.metric(`tollgate_upstream_responses_total{class="timeout",route="/slow"}`); got != "1" {
		t.Errorf("timeout metric = %q", got)
	}
}

// A WebSocket upgrade passes through to the origin, and bytes flow both
// ways afterwards.
func TestE2EWebSocket(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			http.Error(w, "want an upgrade", 400)
			return
		}
		h := sha1.Sum([]byte(r.Header.Get("Sec-WebSocket-Key") + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
		c, rw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		fmt.Fprintf(rw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n",
			base64.StdEncoding.EncodeToString(h[:]))
		rw.Flush()
		// Echo every line, upper-cased, until the client closes.
		for {
			line, err := rw.ReadString('\n')
			if err != nil {
				return
			}
			rw.WriteString(strings.ToUpper(line))
			rw.Flush()
		}
	}))
	defer srv.Close()
	p := startServe(t, baseCfg+"routes: [{path: /, upstream: \""+srv.URL+"\"}]\n"+
		"rules: [{name: ws, policies: [{rate: 100/s}]}]\n")
	c, err := net.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "GET /chat HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 101 || resp.Header.Get("Sec-Websocket-Accept") != "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" {
		t.Fatalf("upgrade: %d %v", resp.StatusCode, resp.Header)
	}
	for _, msg := range []string{"hello\n", "second message\n"} {
		io.WriteString(c, msg)
		got, err := br.ReadString('\n')
		if err != nil || got != strings.ToUpper(msg) {
			t.Fatalf("echo of %q = %q, %v", msg, got, err)
		}
	}
}

// With no file, serve runs the embedded default: a demo origin behind a
// per-IP limit, and it prints how to try it.
func TestE2EEmbeddedDefault(t *testing.T) {
	t.Parallel()
	bin := tollgateBinary(t)
	cmd := exec.Command(bin, "serve", "-listen", "127.0.0.1:0", "-admin", "127.0.0.1:0")
	var stdout strings.Builder
	cmd.Stdout = &stdout
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := false
	defer func() {
		if !exited {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	sc := bufio.NewScanner(stderr)
	var addr string
	for sc.Scan() {
		if m := servingRE.FindStringSubmatch(sc.Text()); m != nil {
			addr = m[1]
			break
		}
	}
	go io.Copy(io.Discard, stderr)
	if addr == "" {
		t.Fatal("no serving line")
	}
	codes := map[int]int{}
	var first *http.Response
	for range 30 {
		resp, body := get(t, "http://"+addr+"/")
		if first == nil {
			first = resp
			if !strings.Contains(body, "demo origin") {
				t.Errorf("demo body = %q", body)
			}
		}
		codes[resp.StatusCode]++
	}
	if first.StatusCode != 200 || first.Header.Get("Ratelimit") == "" || first.Header.Get("Ratelimit-Policy") == "" {
		t.Errorf("first response: %d %v", first.StatusCode, first.Header)
	}
	if codes[429] == 0 || codes[200] < 10 {
		t.Errorf("30 quick requests: %v, want 10+ allowed then 429s", codes)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	err := cmd.Wait()
	exited = true
	if err != nil {
		t.Errorf("exit: %v", err)
	}
	if !strings.Contains(stdout.String(), "curl -i localhost:") {
		t.Errorf("no try-it message on stdout:\n%s", stdout.String())
	}
}

// Two gateways sharing one Redis share one count: the limit holds across
// them.
func TestE2ERedisSharedLimit(t *testing.T) {
	addr := redistest.Start(t).Addr
	srv, _ := origin(t)
	cfg := baseCfg + "routes: [{path: /, upstream: \"" + srv.URL + "\"}]\n" +
		"store: {redis: {url: \"redis://" + addr + "\", prefix: \"e2e:\", timeout: 500ms}}\non_error: closed\n" +
		"rules: [{name: shared, policies: [{algorithm: fixed_window, limit: 4, window: 1h}]}]\n"
	a, b := startServe(t, cfg), startServe(t, cfg)
	var codes []int
	for i := range 6 {
		p := a
		if i%2 == 1 {
			p = b
		}
		resp, _ := get(t, p.url("/"))
		codes = append(codes, resp.StatusCode)
	}
	if fmt.Sprint(codes) != "[200 200 200 200 429 429]" {
		t.Fatalf("codes across two gateways = %v, want 4 allowed then 429", codes)
	}
}

// An https upstream: requests reach it over TLS on reused connections,
// and its response timeout holds there too (the upstream connection
// keeps the deadline itself, under TLS and after the handshake's own).
func TestE2ETLSUpstream(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			select {
			case <-block:
			case <-r.Context().Done():
			}
			return
		}
		fmt.Fprintf(w, "tls=%t proto=%s", r.TLS != nil, r.Header.Get("X-Forwarded-Proto"))
	}))
	defer srv.Close()
	// The gateway verifies upstream certificates against the system
	// roots; SSL_CERT_FILE makes the test server's one of them.
	roots := filepath.Join(t.TempDir(), "roots.pem")
	pemCert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(roots, pemCert, 0o644); err != nil {
		t.Fatal(err)
	}
	p := startServeEnv(t, baseCfg+"upstream: {response_timeout: 300ms}\nroutes: [{path: /, upstream: \""+srv.URL+"\"}]\n",
		"SSL_CERT_FILE="+roots)
	for i := range 3 {
		resp, body := get(t, p.url("/hello"))
		if resp.StatusCode != 200 || body != "tls=true proto=http" {
			t.Fatalf("request %d: %d %q", i, resp.StatusCode, body)
		}
	}
	resp, body := get(t, p.url("/slow"))
	if resp.StatusCode != 504 || !strings.Contains(body, `"status":504`) {
		t.Fatalf("slow TLS upstream: %d %q", resp.StatusCode, body)
	}
}
