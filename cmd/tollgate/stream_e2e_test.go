package main

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/testpki"
)

// zeros is an endless reader of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// peakRSS is the process's peak resident memory in bytes (VmHWM).
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	t.Skip("no VmHWM")
	return 0
}

// A large download and a large upload pass through without the gateway
// holding them in memory: its peak RSS stays far below the body size.
func TestE2EStreamsBodies(t *testing.T) {
	t.Parallel()
	const size = 256 << 20
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "POST" {
			n, _ := io.Copy(io.Discard, r.Body)
			fmt.Fprint(w, n)
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(size))
		io.CopyN(w, zeros{}, size)
	}))
	defer srv.Close()
	p := startServe(t, baseCfg+"routes: [{path: /, upstream: \""+srv.URL+"\"}]\n"+
		"rules: [{name: r, policies: [{rate: 100/s}]}]\n")
	resp, err := http.Get(p.url("/big"))
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || n != size {
		t.Fatalf("download: %d bytes, %v", n, err)
	}
	resp, err = http.Post(p.url("/up"), "application/octet-stream", io.LimitReader(zeros{}, size))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != strconv.Itoa(size) {
		t.Fatalf("upload: origin counted %q bytes, want %d", body, size)
	}
	if peak := peakRSS(t, p.cmd.Process.Pid); peak > 96<<20 {
		t.Fatalf("gateway peak RSS %d MiB while moving %d MiB each way: bodies are being buffered", peak>>20, size>>20)
	} else {
		t.Logf("gateway peak RSS %d MiB for %d MiB down and up", peak>>20, size>>20)
	}
}

// TLS is terminated with the configured certificate; the origin learns
// the scheme from X-Forwarded-Proto. The access log records every request
// with its rule and decision, in a form replay reads (JSON lines).
func TestE2ETLSAndAccessLog(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	certFile, keyFile, pool := testpki.Server(t)
	protos := make(chan string, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		protos <- r.Header.Get("X-Forwarded-Proto")
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	logFile := filepath.Join(dir, "access.log")
	p := startServe(t, fmt.Sprintf(`listen: {addr: "127.0.0.1:0", tls: {cert: %q, key: %q}}
admin: {addr: "127.0.0.1:0"}
routes: [{path: /, upstream: %q}]
access_log: {path: %q, format: json}
rules:
  - name: login
    match: {paths: [/login], methods: [POST]}
    policies: [{algorithm: fixed_window, limit: 1, window: 1h}]
`, certFile, keyFile, srv.URL, logFile))
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	codes := []int{}
	for _, path := range []string{"/login", "/login", "/other"} {
		method := "POST"
		if path == "/other" {
			method = "GET"
		}
		req, _ := http.NewRequest(method, "https://"+p.addr+path, nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		codes = append(codes, resp.StatusCode)
	}
	if fmt.Sprint(codes) != "[200 429 200]" {
		t.Fatalf("codes = %v, want [200 429 200]", codes)
	}
	if got := <-protos; got != "https" {
		t.Errorf("X-Forwarded-Proto = %q, want https", got)
	}
	p.signal(syscall.SIGTERM)
	if code := p.wait(10 * time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}
	f, err := os.Open(logFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("access log line %q: %v", sc.Text(), err)
		}
		lines = append(lines, m)
	}
	if len(lines) != 3 {
		t.Fatalf("access log has %d lines, want 3", len(lines))
	}
	want := []struct {
		method, uri, decision, rule string
		status                      float64
	}{
		{"POST", "/login", "allowed", "login", 200},
		{"POST", "/login", "refused", "login", 429},
		{"GET", "/other", "", "", 200},
	}
	for i, w := range want {
		l := lines[i]
		if l["method"] != w.method || l["uri"] != w.uri || l["status"] != w.status ||
			l["decision"] != w.decision || l["rule"] != w.rule || l["remote_addr"] != "127.0.0.1" {
			t.Errorf("line %d = %v, want %+v", i, l, w)
		}
		if _, err := time.Parse(time.RFC3339Nano, l["time"].(string)); err != nil {
			t.Errorf("line %d time: %v", i, err)
		}
	}
}

// The response timeout bounds the wait for the upstream's headers, not
// the body: a slow download outlives it. (Network deadlines cannot be
// injected, so this test lets real time pass: 3× the timeout.)
func TestE2ESlowBodyOutlivesResponseTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(2<<20))
		w.WriteHeader(200)
		io.CopyN(w, zeros{}, 1<<20)
		w.(http.Flusher).Flush()
		<-release
		io.CopyN(w, zeros{}, 1<<20)
	}))
	defer srv.Close()
	p := startServe(t, baseCfg+"upstream: {response_timeout: 200ms}\nroutes: [{path: /, upstream: \""+srv.URL+"\"}]\n")
	resp, err := http.Get(p.url("/slow-body"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.CopyN(io.Discard, resp.Body, 1<<20); err != nil {
		t.Fatal(err)
	}
	<-time.After(600 * time.Millisecond)
	close(release)
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil || n != 1<<20 {
		t.Fatalf("rest of the body: %d bytes, %v", n, err)
	}
}
