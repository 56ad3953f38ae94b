package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/tollgate-dev/tollgate/internal/logtest"
	"github.com/tollgate-dev/tollgate/internal/redistest"
	"github.com/tollgate-dev/tollgate/limit"
)

// startEnvoyRLS runs `tollgate envoy-rls args` until the test ends.
func startEnvoyRLS(t *testing.T, args ...string) *logtest.Buffer {
	t.Helper()
	fs := flag.NewFlagSet("envoy-rls", flag.ContinueOnError)
	runFn := envoyRLSCommand.Flags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stderr := &logtest.Buffer{}
	done := make(chan int)
	go func() { done <- runFn(ctx, fs.Args(), io.Discard, stderr) }()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != exitOK {
			t.Errorf("exit %d: %s", code, stderr)
		}
	})
	return stderr
}

// The subcommand serves the configuration directory over gRPC, /json and
// /metrics, on memory and on Redis.
func TestEnvoyRLSServesADirectory(t *testing.T) {
	redisSrv := redistest.Start(t)
	for _, store := range []string{"", redisSrv.Addr} {
		t.Run("redis="+store, func(t *testing.T) {
			dir, grpcAddr, _ := envoyDir(t)
			httpAddr := freeAddr(t)
			debugAddr := freeAddr(t)
			startEnvoyRLS(t, "-config-dir", dir, "-grpc", grpcAddr, "-http", httpAddr, "-debug", debugAddr, "-redis", store)

			conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			client := rlsv3.NewRateLimitServiceClient(conn)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			req := &rlsv3.RateLimitRequest{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{
				{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "remote_address", Value: "192.0.2.1"}}}}}
			var codes []rlsv3.RateLimitResponse_Code
			for range 3 {
				var resp *rlsv3.RateLimitResponse
				// The listener opens as the command starts: retry until it does.
				for {
					resp, err = client.ShouldRateLimit(ctx, req, grpc.WaitForReady(true))
					if err == nil || ctx.Err() != nil {
						break
					}
					time.Sleep(50 * time.Millisecond)
				}
				if err != nil {
					t.Fatal(err)
				}
				codes = append(codes, resp.GetOverallCode())
			}
			if codes[0] != rlsv3.RateLimitResponse_OK || codes[1] != rlsv3.RateLimitResponse_OK || codes[2] != rlsv3.RateLimitResponse_OVER_LIMIT {
				t.Fatalf("codes %v, want OK OK OVER_LIMIT", codes)
			}
			resp, err := http.Post("http://"+httpAddr+"/json", "application/json",
				strings.NewReader(`{"domain":"edge","descriptors":[{"entries":[{"key":"remote_address","value":"192.0.2.1"}]}]}`))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusTooManyRequests {
				t.Errorf("/json: %d, want 429", resp.StatusCode)
			}
			resp, err = http.Get("http://" + debugAddr + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !strings.Contains(string(body), `tollgate_rls_over_limit_total{descriptor="remote_address",domain="edge"} 2`) {
				t.Errorf("/metrics lacks the over-limit count:\n%s", body)
			}
		})
	}
}

// A directory that does not load stops the command at start with every
// problem at file:line.
func TestEnvoyRLSRefusesABadDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: fortnight, requests_per_unit: 1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	code := run([]string{"envoy-rls", "-config-dir", dir, "-grpc", "127.0.0.1:0", "-http", "off", "-debug", "off"}, io.Discard, &stderr)
	if code != exitFail || !strings.Contains(stderr.String(), "bad.yaml:4:") || !strings.Contains(stderr.String(), "invalid rate limit unit 'fortnight'") {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
}

// envoyproxy/ratelimit's environment maps onto the settings; a value
// that cannot be used is an error.
func TestEnvoyRLSReadsEnvoyproxyEnvironment(t *testing.T) {
	env := map[string]string{
		"RUNTIME_ROOT": "/srv/runtime", "RUNTIME_SUBDIRECTORY": "ratelimit",
		"GRPC_PORT": "9091", "PORT": "9090", "DEBUG_HOST": "127.0.0.1",
		"REDIS_URL": "redis-a:6379,redis-b:6379", "REDIS_SOCKET_TYPE": "tcp", "REDIS_AUTH": "user:secret",
		"LIMIT_RESPONSE_HEADERS_ENABLED": "true", "LIMIT_RESET_HEADER": "X-Reset",
		"STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT": "true", "NEAR_LIMIT_RATIO": "0.9",
	}
	s, err := envoyRLSEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if s.dir != "/srv/runtime/ratelimit/config" || s.grpc != ":9091" || s.http != ":9090" || s.debug != "127.0.0.1:6070" ||
		s.redis != "redis-a:6379,redis-b:6379" || s.redisUser != "user" || s.redisPassword != "secret" ||
		s.headers != "legacy" || s.resetH != "X-Reset" || !s.allOrNothing || s.nearRatio != 0.9 {
		t.Fatalf("settings %+v", s)
	}
	for k, v := range map[string]string{"REDIS_URL": "/var/run/nutcracker/ratelimit.sock", "GRPC_PORT": "http", "GLOBAL_SHADOW_MODE": "yes please", "NEAR_LIMIT_RATIO": "2"} {
		if _, err := envoyRLSEnv(func(name string) string {
			if name == k {
				return v
			}
			return ""
		}); err == nil {
			t.Errorf("%s=%q accepted", k, v)
		}
	}
}

// TestEnvoyRLSOpensItsStoreThroughStores: the command's store is the one
// package storeopen opens for serve and forward-auth: memory without Redis;
// on Redis (REDIS_AUTH's password honoured) strict or eventual.
func TestEnvoyRLSOpensItsStoreThroughStores(t *testing.T) {
	srv := redistest.Start(t, "--requirepass", "s3cret")
	p := limit.FixedWindow{Limit: 5, Window: time.Hour}
	ctx := context.Background()
	for _, c := range []struct {
		s    envoyRLSSettings
		want string
	}{
		{envoyRLSSettings{}, "*memory.Store"},
		{envoyRLSSettings{redis: srv.Addr, redisPassword: "s3cret", tier: "strict"}, "redis.rule"},
		{envoyRLSSettings{redis: srv.Addr, redisPassword: "s3cret", tier: "eventual"}, "*eventual.Store"},
	} {
		st, set, err := openEnvoyRLSStore(c.s, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprintf("%T", st); got != c.want {
			t.Errorf("%+v: store %s, want %s", c.s, got, c.want)
		}
		if d, err := st.Apply(ctx, "k", p, 1); err != nil || !d.Allowed || d.Remaining != 4 {
			t.Errorf("%+v: %+v, %v", c.s, d, err)
		}
		if r := set.Redis(); (r != nil) != (c.s.redis != "") || r != nil && (!r.Stats().Up() || r.Stats().Failures != 0) {
			t.Errorf("%+v: redis %v", c.s, r)
		}
		set.Close()
	}
	if _, _, err := openEnvoyRLSStore(envoyRLSSettings{redis: srv.Addr, redisPassword: "wrong", tier: "strict"}, nil); err == nil {
		t.Error("a password Redis refuses: opened")
	}
}

// envoyproxy/ratelimit's answer settings are read with its names and
// defaults: no headers unless LIMIT_RESPONSE_HEADERS_ENABLED (tollgate's
// draft-10 ones only through TOLLGATE_RESPONSE_HEADERS), SHADOW_MODE,
// QUOTA_MODE, MERGE_DOMAIN_CONFIG, LOG_LEVEL (default warn); a setting
// tollgate does not honour is named, an error when ignoring it would
// serve something else; GLOBAL_SHADOW_MODE is refused naming SHADOW_MODE.
func TestEnvoyRLSReadsTheAnswersEnvironment(t *testing.T) {
	read := func(env map[string]string) (envoyRLSSettings, error) {
		return envoyRLSEnv(func(k string) string { return env[k] })
	}
	s, err := read(nil)
	if err != nil || s.headers != "none" || s.shadow || s.quota || s.merge || s.logLevel != "warn" || len(s.unsupported) != 0 {
		t.Fatalf("defaults: %+v, %v", s, err)
	}
	s, err = read(map[string]string{"SHADOW_MODE": "true", "QUOTA_MODE": "true", "MERGE_DOMAIN_CONFIG": "true",
		"LIMIT_RESPONSE_HEADERS_ENABLED": "true", "LOG_LEVEL": "DEBUG", "LOG_FORMAT": "json",
		"USE_STATSD": "true", "RESPONSE_DYNAMIC_METADATA": "true", "GRPC_SERVER_USE_TLS": "false"})
	if err != nil || s.headers != "legacy" || !s.shadow || !s.quota || !s.merge || s.logLevel != "debug" || s.logFormat != "json" {
		t.Fatalf("set: %+v, %v", s, err)
	}
	if got := strings.Join(s.unsupported, "\n"); !strings.Contains(got, "USE_STATSD") || !strings.Contains(got, "RESPONSE_DYNAMIC_METADATA") || len(s.unsupported) != 2 {
		t.Errorf("unsupported %q, want USE_STATSD and RESPONSE_DYNAMIC_METADATA", got)
	}
	// Files named .* are configuration unless RUNTIME_IGNOREDOTFILES=true,
	// as there.
	if !s.dotFiles {
		t.Errorf("dotFiles false by default, want true (RUNTIME_IGNOREDOTFILES defaults to false)")
	}
	if s, err = read(map[string]string{"RUNTIME_IGNOREDOTFILES": "true"}); err != nil || s.dotFiles || len(s.unsupported) != 0 {
		t.Errorf("RUNTIME_IGNOREDOTFILES=true: %+v, %v", s, err)
	}
	if s, err = read(map[string]string{"LIMIT_RESPONSE_HEADERS_ENABLED": "true", "TOLLGATE_RESPONSE_HEADERS": "draft10"}); err != nil || s.headers != "draft10" {
		t.Fatalf("TOLLGATE_RESPONSE_HEADERS: %+v, %v", s, err)
	}
	for k, v := range map[string]string{"GLOBAL_SHADOW_MODE": "true", "SHADOW_MODE": "maybe", "LOG_LEVEL": "loud",
		"GRPC_SERVER_USE_TLS": "true", "CONFIG_TYPE": "GRPC_XDS_SOTW", "BACKEND_TYPE": "memcache", "GRPC_UDS": "/tmp/rl.sock",
		"TOLLGATE_RESPONSE_HEADERS": "fancy"} {
		_, err := read(map[string]string{k: v})
		if err == nil || !strings.Contains(err.Error(), strings.Split(k, "_MODE")[0]) {
			t.Errorf("%s=%q: %v, want an error naming it", k, v, err)
		}
	}
}

// LOG_LEVEL sets the command's log level, warn by default as
// envoyproxy/ratelimit's: the info line of the listener shows only
// with LOG_LEVEL=info; a setting not honoured is named at start.
func TestEnvoyRLSLogLevelFromEnvironment(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "edge.yaml"), []byte("domain: edge\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, lv := range []string{"", "info"} {
		t.Run("LOG_LEVEL="+lv, func(t *testing.T) {
			t.Setenv("LOG_LEVEL", lv)
			t.Setenv("USE_STATSD", "true")
			grpcAddr := freeAddr(t)
			logs := startEnvoyRLS(t, "-config-dir", dir, "-grpc", grpcAddr, "-http", "off", "-debug", "off")
			eventually(t, "the warning at start", func() bool { return strings.Contains(logs.String(), "USE_STATSD") })
			if lv == "info" {
				eventually(t, "the listening line", func() bool { return strings.Contains(logs.String(), "envoy-rls listening") })
			} else {
				conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				// Serving, so past the listening line.
				if _, err := rlsv3.NewRateLimitServiceClient(conn).ShouldRateLimit(ctx, &rlsv3.RateLimitRequest{Domain: "edge",
					Descriptors: []*rlv3.RateLimitDescriptor{{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "k", Value: "v"}}}}}, grpc.WaitForReady(true)); err != nil {
					t.Fatal(err)
				}
				if strings.Contains(logs.String(), "level=INFO") {
					t.Errorf("info lines at the default level:\n%s", logs)
				}
			}
		})
	}
}
