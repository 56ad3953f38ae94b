// Package envoyratelimit starts the real envoyproxy/ratelimit service for
// tests that compare tollgate envoy-rls with it or hand a Redis over from
// one to the other. The binary is envoyproxy/ratelimit's service_cmd,
// named by ENVOY_RATELIMIT_BIN: scripts/test.sh builds the version the
// bench module pins as a tool (cd bench && go build
// github.com/envoyproxy/ratelimit/src/service_cmd). Without it the test
// is skipped.
package envoyratelimit

import (
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/redistest"
)

// Service is a running envoyproxy/ratelimit.
type Service struct {
	// GRPC and HTTP are its listeners' "127.0.0.1:port".
	GRPC, HTTP string
	cmd        *exec.Cmd
	done       chan struct{}
}

// Start runs envoyproxy/ratelimit with env (its variables: REDIS_URL,
// RUNTIME_ROOT, ...) on loopback ports of its own, statsd off, and waits
// until /healthcheck answers 200. It stops when the test ends, or at
// Stop. The test is skipped when ENVOY_RATELIMIT_BIN is not set.
func Start(t testing.TB, env ...string) *Service {
	t.Helper()
	bin := os.Getenv("ENVOY_RATELIMIT_BIN")
	if bin == "" {
		t.Skip("ENVOY_RATELIMIT_BIN is not set: no envoyproxy/ratelimit binary")
	}
	grpcPort, httpPort, debugPort := redistest.FreePort(t), redistest.FreePort(t), redistest.FreePort(t)
	s := &Service{GRPC: "127.0.0.1:" + strconv.Itoa(grpcPort), HTTP: "127.0.0.1:" + strconv.Itoa(httpPort), done: make(chan struct{})}
	s.cmd = exec.Command(bin)
	s.cmd.Env = append([]string{"USE_STATSD=false", "LOG_LEVEL=warn", "RUNTIME_WATCH_ROOT=false",
		"HOST=127.0.0.1", "PORT=" + strconv.Itoa(httpPort), "GRPC_HOST=127.0.0.1", "GRPC_PORT=" + strconv.Itoa(grpcPort),
		"DEBUG_HOST=127.0.0.1", "DEBUG_PORT=" + strconv.Itoa(debugPort)}, env...)
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.cmd.Wait(); close(s.done) }()
	t.Cleanup(s.Stop)
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + s.HTTP + "/healthcheck")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return s
			}
		}
		select {
		case <-s.done:
			t.Fatalf("envoyproxy/ratelimit exited at start: %v", s.cmd.ProcessState)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("envoyproxy/ratelimit not healthy within 30s: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop kills the service and waits for it to exit.
func (s *Service) Stop() {
	s.cmd.Process.Kill()
	<-s.done
}
