package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/redistest"
)

// The end-to-end tests build the real binary once and run it as a child
// process with a configuration file, talking to it over loopback. Each
// gateway listens on ports of its own (127.0.0.1:0), so the tests run in
// parallel, except those whose assertions rest on short timeouts (a
// shutdown or response timeout of a few hundred milliseconds, a Redis
// timeout of 100ms), which run first, alone.

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

func tollgateBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test: builds and runs the binary")
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "tollgate-e2e-")
		if err != nil {
			buildErr = err
			return
		}
		binPath, buildErr = buildTollgate(dir, "")
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// buildTollgate builds the binary into dir with the build tags tags
// (none when empty) and returns its path.
func buildTollgate(dir, tags string) (string, error) {
	bin := filepath.Join(dir, "tollgate")
	out, err := exec.Command("go", "build", "-tags", tags, "-o", bin, ".").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build -tags %q: %v\n%s", tags, err, out)
	}
	return bin, nil
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// proc is a running tollgate serve.
type proc struct {
	t       *testing.T
	cmd     *exec.Cmd
	file    string
	addr    string // traffic host:port
	admin   string // admin host:port
	mu      sync.Mutex
	log     bytes.Buffer
	exited  chan struct{}
	exitErr error
}

var servingRE = regexp.MustCompile(`msg=serving traffic=(\S+) admin=(\S+)`)

// startServe writes cfg to a file and runs tollgate serve on it, waiting
// until it listens. Listeners on 127.0.0.1:0 are reported in the log.
func startServe(t *testing.T, cfg string) *proc {
	t.Helper()
	return startServeEnv(t, cfg)
}

// startServeEnv is startServe with extra environment variables
// ("NAME=value") for the process.
func startServeEnv(t *testing.T, cfg string, env ...string) *proc {
	t.Helper()
	file := filepath.Join(t.TempDir(), "tollgate.yaml")
	if err := os.WriteFile(file, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return startServeFile(t, file, env)
}

// startServeFile runs tollgate serve on the configuration file file with
// extra environment variables and command-line flags, waiting until it
// listens.
func startServeFile(t *testing.T, file string, env []string, flags ...string) *proc {
	t.Helper()
	return startServeBin(t, tollgateBinary(t), file, env, flags...)
}

// startServeBin is startServeFile with the binary bin.
func startServeBin(t *testing.T, bin, file string, env []string, flags ...string) *proc {
	t.Helper()
	p := &proc{t: t, file: file, exited: make(chan struct{})}
	p.cmd = exec.Command(bin, append([]string{"serve", "-config", file}, flags...)...)
	if len(env) > 0 {
		p.cmd.Env = append(os.Environ(), env...)
	}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stdout = io.Discard
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan [2]string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.log.WriteString(line + "\n")
			p.mu.Unlock()
			if m := servingRE.FindStringSubmatch(line); m != nil {
				ready <- [2]string{m[1], m[2]}
			}
		}
		p.exitErr = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			p.cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			t.Logf("tollgate log:\n%s", p.logText())
		}
	})
	select {
	case a := <-ready:
		p.addr, p.admin = a[0], a[1]
	case <-p.exited:
		t.Fatalf("tollgate exited before serving: %v\n%s", p.exitErr, p.logText())
	case <-time.After(20 * time.Second):
		t.Fatalf("tollgate did not start\n%s", p.logText())
	}
	return p
}

func (p *proc) logText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

func (p *proc) url(path string) string { return "http://" + p.addr + path }

func (p *proc) signal(sig os.Signal) {
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatal(err)
	}
}

// wait waits for the process to exit and returns its exit code.
func (p *proc) wait(timeout time.Duration) int {
	p.t.Helper()
	select {
	case <-p.exited:
	case <-time.After(timeout):
		p.t.Fatalf("tollgate did not exit within %v\n%s", timeout, p.logText())
	}
	if p.exitErr == nil {
		return 0
	}
	if ee, ok := p.exitErr.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}

// metric returns the value of the first /metrics sample line starting
// with prefix, or "" if absent.
func (p *proc) metric(prefix string) string {
	p.t.Helper()
	resp, err := http.Get("http://" + p.admin + "/metrics")
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, prefix) {
			f := strings.Fields(line)
			return f[len(f)-1]
		}
	}
	return ""
}

// eventually polls cond every few milliseconds until it holds or the
// deadline passes. It waits for another process to act, not for time to
// pass: no assertion depends on how long it took.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// client does not reuse connections between tests' requests so that a
// refused connection shows at once.
var client = &http.Client{Timeout: 20 * time.Second}

func get(t *testing.T, url string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if strings.EqualFold(hdr[i], "Host") {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Add(hdr[i], hdr[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

// freeAddr returns a loopback address nothing listened on a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	return "127.0.0.1:" + strconv.Itoa(redistest.FreePort(t))
}

var _ = syscall.SIGHUP
