package redistest

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Server is one redis-server process owned by a test.
type Server struct {
	// Addr is "127.0.0.1:port".
	Addr string
	// Port is the TCP port the server listens on.
	Port int
	// Dir is the server's working directory (a t.TempDir).
	Dir string

	bin  string // the program: redis-server, or redis-sentinel
	args []string
	tls  *tls.Config // for the readiness PING of a TLS-only server
	cli  []string    // redis-cli's extra arguments (TLS files)
	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	// held is a socket bound to Port, never listening, while a server
	// made by newServer is killed: connections are refused as with no
	// socket at all, and no other socket (a listener on port 0, an
	// outgoing connection's local port) can take the port before Restart.
	held     int // the socket's descriptor, when holding
	holding  bool
	holdPort bool
}

// Start runs a standalone redis-server on a free loopback port, with no
// persistence, and stops it at t.Cleanup. extra are more "--name value"
// arguments.
func Start(t testing.TB, extra ...string) *Server {
	t.Helper()
	s := newServer(t, t.TempDir(), extra...)
	if err := s.start(); err != nil {
		t.Fatalf("redistest: %v", err)
	}
	t.Cleanup(func() { s.Kill() })
	return s
}

func newServer(t testing.TB, dir string, extra ...string) *Server {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("redistest: redis-server not found (.ci/run installs it): %v", err)
	}
	port := FreePort(t)
	args := []string{
		"--port", strconv.Itoa(port),
		"--bind", "127.0.0.1",
		"--dir", dir,
		"--save", "",
		"--appendonly", "no",
		"--protected-mode", "yes",
		"--loglevel", "warning",
	}
	args = append(args, extra...)
	s := &Server{Addr: "127.0.0.1:" + strconv.Itoa(port), Port: port, Dir: dir, bin: "redis-server", args: args, holdPort: true}
	t.Cleanup(s.release) // after the Kill of every later cleanup
	return s
}

// hold binds a socket to the server's port without listening on it (see
// Server.held). The caller holds s.mu.
func (s *Server) hold() {
	if !s.holdPort || s.holding {
		return
	}
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return // unheld: as before, the port is free for anyone
	}
	// No SO_REUSEADDR: with it on both sockets, Linux lets a listener
	// bind beside one that does not listen.
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Port: s.Port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		syscall.Close(fd)
		return
	}
	s.held, s.holding = fd, true
}

// release closes the socket hold bound, if any.
func (s *Server) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.releaseLocked()
}

func (s *Server) releaseLocked() {
	if s.holding {
		syscall.Close(s.held)
		s.holding = false
	}
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.releaseLocked()
	cmd := exec.Command(s.bin, s.args...)
	cmd.Dir = s.Dir
	logf, err := os.OpenFile(filepath.Join(s.Dir, "redis.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start redis-server: %w", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); logf.Close(); close(done) }()
	s.cmd, s.done = cmd, done
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if err := ping(s.Addr, s.tls); err == nil {
			return nil
		}
		select {
		case <-done:
			b, _ := os.ReadFile(filepath.Join(s.Dir, "redis.log"))
			return fmt.Errorf("%s exited: %s", s.bin, b)
		case <-time.After(5 * time.Millisecond):
		}
	}
	cmd.Process.Kill()
	<-done
	return fmt.Errorf("%s on %s did not answer PING within 5s", s.bin, s.Addr)
}

// ping sends PING and waits for +PONG (or -NOAUTH from a server started
// with --requirepass: it is up, and refuses us), over TLS when tc is set.
func ping(addr string, tc *tls.Config) error {
	var (
		c   net.Conn
		err error
	)
	if tc != nil {
		c, err = tls.DialWithDialer(&net.Dialer{Timeout: 200 * time.Millisecond}, "tcp", addr, tc)
	} else {
		c, err = net.DialTimeout("tcp", addr, 200*time.Millisecond)
	}
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") && !strings.HasPrefix(line, "-NOAUTH") {
		return fmt.Errorf("unexpected reply %q", line)
	}
	return nil
}

// Kill stops the server with SIGKILL (as a crash would) and waits for it to
// exit. It is safe to call on a stopped server. Until Restart, its port
// refuses connections and stays reserved for it: killed for seconds, a
// server could find its port taken by another test's socket on restart.
func (s *Server) Kill() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Kill()
	<-done
	s.mu.Lock()
	if s.cmd == nil {
		s.hold()
	}
	s.mu.Unlock()
}

// Pause stops the server with SIGSTOP and returns once every one of its
// threads is stopped: from then on it answers nothing (the kernel still
// accepts connections to its port) until Resume, as a server stalled by a
// long command or a swapped-out host would. A stall made so lasts exactly
// as long as the test wants, unlike DEBUG SLEEP's fixed one. A paused
// server is resumed at t.Cleanup.
func (s *Server) Pause(t testing.TB) {
	t.Helper()
	proc := s.signal(t, "Pause", syscall.SIGSTOP)
	t.Cleanup(func() { proc.Signal(syscall.SIGCONT) })
	task := fmt.Sprintf("/proc/%d/task", proc.Pid)
	deadline := time.Now().Add(10 * time.Second)
	for !allStopped(task) {
		if time.Now().After(deadline) {
			t.Fatalf("redistest: Pause: %s not stopped within 10s", s.bin)
		}
		time.Sleep(time.Millisecond)
	}
}

// allStopped reports whether every thread listed under task (a
// /proc/PID/task directory) is in state T (stopped).
func allStopped(task string) bool {
	ents, err := os.ReadDir(task)
	if err != nil || len(ents) == 0 {
		return false
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(task, e.Name(), "stat"))
		if err != nil {
			return false
		}
		// pid (comm) state ...: comm may hold spaces and parentheses, so
		// the state follows the last ')'.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 || i+2 >= len(b) || b[i+2] != 'T' {
			return false
		}
	}
	return true
}

// Resume continues a paused server (SIGCONT).
func (s *Server) Resume(t testing.TB) {
	t.Helper()
	s.signal(t, "Resume", syscall.SIGCONT)
}

// signal sends sig to the running server's process, which it returns;
// op names the caller in a failure.
func (s *Server) signal(t testing.TB, op string, sig os.Signal) *os.Process {
	t.Helper()
	s.mu.Lock()
	cmd := s.cmd
	s.mu.Unlock()
	if cmd == nil {
		t.Fatalf("redistest: %s: the server is not running", op)
	}
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatalf("redistest: %s: %v", op, err)
	}
	return cmd.Process
}

// Restart starts a killed server again on the same port and directory.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Kill()
	if err := s.start(); err != nil {
		t.Fatalf("redistest: restart: %v", err)
	}
}

// CLI runs redis-cli against the server with args and returns its output.
func (s *Server) CLI(t testing.TB, args ...string) string {
	t.Helper()
	base := append([]string{"-h", "127.0.0.1", "-p", strconv.Itoa(s.Port)}, s.cli...)
	out, err := exec.Command("redis-cli", append(base, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("redistest: redis-cli %v: %v: %s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// Sleep makes the server busy for d (DEBUG SLEEP: it must run with
// "--enable-debug-command", "yes") and returns once it is, as seen by a
// PING left unanswered for 100ms; the channel closes when the sleep ends.
func (s *Server) Sleep(t testing.TB, d time.Duration) <-chan struct{} {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		base := append([]string{"-h", "127.0.0.1", "-p", strconv.Itoa(s.Port)}, s.cli...)
		exec.Command("redis-cli", append(base, "DEBUG", "SLEEP", strconv.FormatFloat(d.Seconds(), 'f', 3, 64))...).Run()
	}()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		c, err := net.Dial("tcp", s.Addr)
		if err != nil {
			t.Fatalf("redistest: %v", err)
		}
		c.Write([]byte("PING\r\n"))
		c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		_, err = c.Read(make([]byte, 16))
		c.Close()
		if err != nil {
			return done
		}
	}
	t.Fatal("redistest: the server never slept")
	return done
}
