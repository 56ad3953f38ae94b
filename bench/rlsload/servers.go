package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// process is a child process this program started and stops.
type process struct {
	cmd    *exec.Cmd
	stderr *bytes.Buffer
}

func (p *process) stop() {
	p.cmd.Process.Kill()
	p.cmd.Wait()
}

// freePort returns a loopback port nothing listens on now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func start(ctx context.Context, name string, env []string, args ...string) (*process, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &process{cmd: cmd, stderr: &stderr}, nil
}

// redisServer is the one redis-server both Redis-backed servers use.
type redisServer struct {
	*process
	addr string
}

func startRedis(ctx context.Context, dir string) (*redisServer, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	p, err := start(ctx, "redis-server", os.Environ(), "--bind", "127.0.0.1", "--port", strconv.Itoa(port),
		"--save", "", "--appendonly", "no", "--dir", dir)
	if err != nil {
		return nil, fmt.Errorf("redis-server: %w", err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return &redisServer{p, addr}, nil
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, fmt.Errorf("redis-server not listening within 10s: %v: %s", err, p.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// server is one rate limit service under load.
type server struct {
	*process
	name     string
	grpcAddr string
	clients  []rlsv3.RateLimitServiceClient
	conns    []*grpc.ClientConn
	idleRSS  int64  // bytes, after start-up, before any load
	debug    string // the debug listener's address (/debug/pprof/), if any
	redis    bool   // it decides on the redis-server
}

func (s *server) stop() {
	for _, c := range s.conns {
		c.Close()
	}
	s.process.stop()
}

// ports returns free ports for the gRPC, HTTP and debug listeners.
func ports() (grpcPort, httpPort, debugPort int, err error) {
	if grpcPort, err = freePort(); err != nil {
		return
	}
	if httpPort, err = freePort(); err != nil {
		return
	}
	debugPort, err = freePort()
	return
}

// startTollgate runs tollgate envoy-rls on confDir, on Redis when
// redisAddr is set, and waits for its /healthcheck.
func startTollgate(ctx context.Context, name, bin, confDir, redisAddr string) (*server, error) {
	g, h, d, err := ports()
	if err != nil {
		return nil, err
	}
	debug := "127.0.0.1:" + strconv.Itoa(d)
	args := []string{"envoy-rls", "-config-dir", confDir, "-grpc", "127.0.0.1:" + strconv.Itoa(g),
		"-http", "127.0.0.1:" + strconv.Itoa(h), "-debug", debug, "-log-level", "warn"}
	if redisAddr != "" {
		args = append(args, "-redis", redisAddr)
	}
	p, err := start(ctx, bin, os.Environ(), args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	s := &server{process: p, name: name, grpcAddr: "127.0.0.1:" + strconv.Itoa(g), debug: debug, redis: redisAddr != ""}
	if err := healthy(h); err != nil {
		p.stop()
		return nil, fmt.Errorf("%s: %w: %s", name, err, p.stderr)
	}
	return s, nil
}

// startPeer runs envoyproxy/ratelimit's service_cmd the way its README
// deploys it (REDIS_SOCKET_TYPE=tcp, REDIS_URL, runtime directory), its
// statsd sink off and otherwise its defaults, plus extra.
func startPeer(ctx context.Context, bin, root, redisAddr string, extra []string) (*server, error) {
	g, h, d, err := ports()
	if err != nil {
		return nil, err
	}
	env := append([]string{"USE_STATSD=false", "LOG_LEVEL=warn", "REDIS_SOCKET_TYPE=tcp", "REDIS_URL=" + redisAddr,
		"RUNTIME_ROOT=" + root, "RUNTIME_SUBDIRECTORY=rl", "RUNTIME_WATCH_ROOT=false",
		"HOST=127.0.0.1", "PORT=" + strconv.Itoa(h), "GRPC_HOST=127.0.0.1", "GRPC_PORT=" + strconv.Itoa(g),
		"DEBUG_HOST=127.0.0.1", "DEBUG_PORT=" + strconv.Itoa(d)}, extra...)
	p, err := start(ctx, bin, env)
	if err != nil {
		return nil, fmt.Errorf("envoy-ratelimit: %w", err)
	}
	s := &server{process: p, name: "envoy-ratelimit", grpcAddr: "127.0.0.1:" + strconv.Itoa(g), redis: true}
	if err := healthy(h); err != nil {
		p.stop()
		return nil, fmt.Errorf("envoy-ratelimit: %w: %s", err, p.stderr)
	}
	return s, nil
}

// healthy waits up to 30s for GET /healthcheck on port to answer 200.
func healthy(port int) error {
	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/healthcheck"
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not healthy within 30s: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// connect opens n gRPC connections to the server.
func (s *server) connect(n int) error {
	for range n {
		c, err := grpc.NewClient(s.grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return err
		}
		s.conns = append(s.conns, c)
		s.clients = append(s.clients, rlsv3.NewRateLimitServiceClient(c))
	}
	return nil
}

// rss is the process's resident set in bytes (VmRSS), or -1.
func (s *server) rss() int64 { return s.status("VmRSS:") }

// peakRSS is the process's peak resident set in bytes (VmHWM), or -1.
func (s *server) peakRSS() int64 { return s.status("VmHWM:") }

func (s *server) status(field string) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(s.cmd.Process.Pid) + "/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return -1
			}
			return kb * 1024
		}
	}
	return -1
}

// cpu is the CPU time the process has used (user + system).
func (p *process) cpu() (time.Duration, error) { return cpuOf(strconv.Itoa(p.cmd.Process.Pid)) }

// cpuOf is the CPU time (user + system) of the process pid ("self" for
// this one).
func cpuOf(pid string) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: fields count
	// from the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("malformed /proc stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, errors.New("malformed /proc stat")
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	const ticks = 100 // USER_HZ on Linux
	return time.Duration(utime+stime) * time.Second / ticks, nil
}

// profile fetches a CPU profile of d from the server's debug listener
// into file.
func (s *server) profile(d time.Duration, file string) error {
	if s.debug == "" {
		return fmt.Errorf("%s has no debug listener", s.name)
	}
	resp, err := http.Get("http://" + s.debug + "/debug/pprof/profile?seconds=" + strconv.Itoa(int(d/time.Second)))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("profile: status %d", resp.StatusCode)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
