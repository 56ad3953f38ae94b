package main

import (
	"context"
	"flag"
	"io"
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
)

// envoyDir writes one domain, edge, allowing 2 requests an hour per
// remote_address, and returns the directory and the command's listener
// flags.
func envoyDir(t *testing.T) (dir, grpcAddr string, flags []string) {
	t.Helper()
	dir = t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "edge.yaml"), []byte("domain: edge\ndescriptors:\n  - key: remote_address\n    rate_limit: {unit: hour, requests_per_unit: 2}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	grpcAddr = freeAddr(t)
	// A Redis timeout a loaded machine meets (the handshake and the
	// scripts' first load included).
	return dir, grpcAddr, []string{"-config-dir", dir, "-grpc", grpcAddr, "-http", "off", "-debug", "off", "-redis-timeout", "2s"}
}

// rlsCodes sends n requests for one address and returns the answers.
func rlsCodes(t *testing.T, grpcAddr string, n int) []rlsv3.RateLimitResponse_Code {
	t.Helper()
	conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := rlsv3.NewRateLimitServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := &rlsv3.RateLimitRequest{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{
		{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "remote_address", Value: "192.0.2.7"}}}}}
	var codes []rlsv3.RateLimitResponse_Code
	for range n {
		var resp *rlsv3.RateLimitResponse
		for { // the listener opens as the command starts
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
	return codes
}

func wantOKOKOver(t *testing.T, codes []rlsv3.RateLimitResponse_Code) {
	t.Helper()
	if len(codes) != 3 || codes[0] != rlsv3.RateLimitResponse_OK || codes[1] != rlsv3.RateLimitResponse_OK || codes[2] != rlsv3.RateLimitResponse_OVER_LIMIT {
		t.Fatalf("codes %v, want OK OK OVER_LIMIT", codes)
	}
}

// envoyproxy/ratelimit's Redis variables reach Redis as they would
// there: REDIS_TLS with a CA and a client certificate, REDIS_AUTH as an
// ACL user:password, REDIS_TYPE=sentinel with "master,host:port,...". A
// password Redis refuses stops the command at start, without showing it.
func TestEnvoyRLSRedisFromEnvironment(t *testing.T) {
	t.Run("tls+auth", func(t *testing.T) {
		pki := redistest.NewPKI(t)
		srv := redistest.StartTLS(t, redistest.TLSOptions{PKI: pki, ClientCerts: true})
		const secret = "rls-s3cret-31d9"
		srv.CLI(t, "ACL", "SETUSER", "rls", "on", ">"+secret, "~*", "+@all")
		cert, key := pki.IssueValid(t, true)
		for k, v := range map[string]string{
			"REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": srv.Addr, "REDIS_AUTH": "rls:" + secret,
			"REDIS_TLS": "true", "REDIS_TLS_CACERT": pki.CAFile, "REDIS_TLS_CLIENT_CERT": cert, "REDIS_TLS_CLIENT_KEY": key,
		} {
			t.Setenv(k, v)
		}
		_, grpcAddr, flags := envoyDir(t)
		log := startEnvoyRLS(t, flags...)
		wantOKOKOver(t, rlsCodes(t, grpcAddr, 3))
		if srv.CLI(t, "DBSIZE") == "0" || !strings.Contains(srv.CLI(t, "CLIENT", "LIST"), "user=rls") {
			t.Fatalf("not decided on Redis as user rls: %s", srv.CLI(t, "CLIENT", "LIST"))
		}
		if strings.Contains(log.String(), secret) {
			t.Fatalf("the log shows the password:\n%s", log)
		}

		// A wrong password: the command stops at start, saying why.
		t.Setenv("REDIS_AUTH", "rls:wrong-"+secret)
		fs := flag.NewFlagSet("envoy-rls", flag.ContinueOnError)
		runFn := envoyRLSCommand.Flags(fs)
		if err := fs.Parse(flags); err != nil {
			t.Fatal(err)
		}
		var stderr logtest.Buffer
		code := runFn(context.Background(), nil, io.Discard, &stderr)
		if code == exitOK || !strings.Contains(stderr.String(), "WRONGPASS") || strings.Contains(stderr.String(), secret) {
			t.Fatalf("wrong password: exit %d, stderr %q", code, stderr.String())
		}
	})
	t.Run("sentinel", func(t *testing.T) {
		set := redistest.StartSentinel(t, 500*time.Millisecond, 2*time.Second)
		t.Setenv("REDIS_SOCKET_TYPE", "tcp")
		t.Setenv("REDIS_TYPE", "SENTINEL")
		t.Setenv("REDIS_URL", redistest.SentinelMaster+","+strings.Join(set.Addrs(), ","))
		_, grpcAddr, flags := envoyDir(t)
		startEnvoyRLS(t, flags...)
		wantOKOKOver(t, rlsCodes(t, grpcAddr, 3))
		if set.Primary.CLI(t, "DBSIZE") == "0" {
			t.Fatal("not decided on the master the Sentinels name")
		}
	})
}

// The Redis variables map onto the settings; values that cannot be used
// are errors.
func TestEnvoyRLSRedisVariables(t *testing.T) {
	env := map[string]string{
		"REDIS_SOCKET_TYPE": "tcp", "REDIS_TYPE": "sentinel", "REDIS_URL": "mymaster,s1:26379,s2:26379",
		"REDIS_TLS": "true", "REDIS_TLS_CACERT": "/ca.pem", "REDIS_TLS_CLIENT_CERT": "/c.pem", "REDIS_TLS_CLIENT_KEY": "/k.pem",
		"REDIS_TLS_SKIP_HOSTNAME_VERIFICATION": "true",
	}
	s, err := envoyRLSEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	f := s.redisTLSFiles
	if s.redisMaster != "mymaster" || s.redis != "s1:26379,s2:26379" || !s.redisTLS ||
		f.CAFile != "/ca.pem" || f.CertFile != "/c.pem" || f.KeyFile != "/k.pem" || !f.SkipHostnameVerification {
		t.Fatalf("settings %+v", s)
	}
	for _, bad := range []map[string]string{
		{"REDIS_SOCKET_TYPE": "tcp", "REDIS_TYPE": "sentinel", "REDIS_URL": "s1:26379"},
		{"REDIS_SOCKET_TYPE": "tcp", "REDIS_TYPE": "ring", "REDIS_URL": "h:6379"},
		{"REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": "h:6379", "REDIS_TLS_CACERT": "/ca.pem"},
		{"REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": "h:6379", "REDIS_TLS": "maybe"},
	} {
		if _, err := envoyRLSEnv(func(k string) string { return bad[k] }); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}
