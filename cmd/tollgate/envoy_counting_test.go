package main

import (
	"context"
	"flag"
	"strconv"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/tollgate-dev/tollgate/internal/redistest"
)

// envoyproxy/ratelimit's counting variables, with its defaults:
// REDIS_TIMEOUT 10s (the -redis-timeout default unless given),
// EXPIRATION_JITTER_MAX_SECONDS 300, no local cache, no prefix; and
// tollgate's TOLLGATE_REDIS_ON_ERROR, unset by default.
func TestEnvoyRLSCountingEnvironment(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	s, err := envoyRLSEnv(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	c := s.counting
	if c.redisTimeout != 10*time.Second || c.jitter != 300*time.Second || c.localCache != 0 || c.cacheKeyPrefix != "" || c.onError != "" {
		t.Fatalf("defaults %+v", c)
	}
	s, err = envoyRLSEnv(env(map[string]string{"REDIS_TIMEOUT": "250ms", "CACHE_KEY_PREFIX": "rl:", "LOCAL_CACHE_SIZE_IN_BYTES": "1048576",
		"EXPIRATION_JITTER_MAX_SECONDS": "0", "TOLLGATE_REDIS_ON_ERROR": "open"}))
	if err != nil {
		t.Fatal(err)
	}
	c = s.counting
	if c.redisTimeout != 250*time.Millisecond || c.jitter != 0 || c.localCache != 1<<20 || c.cacheKeyPrefix != "rl:" || c.onError != "open" {
		t.Fatalf("settings %+v", c)
	}
	t.Setenv("REDIS_TIMEOUT", "250ms")
	fs := flag.NewFlagSet("envoy-rls", flag.ContinueOnError)
	envoyRLSCommand.Flags(fs)
	if f := fs.Lookup("redis-timeout"); f.Value.String() != "250ms" {
		t.Errorf("-redis-timeout defaults to %s, want REDIS_TIMEOUT's 250ms", f.Value)
	}
	for k, v := range map[string]string{"REDIS_TIMEOUT": "10", "LOCAL_CACHE_SIZE_IN_BYTES": "-1", "EXPIRATION_JITTER_MAX_SECONDS": "soon",
		"TOLLGATE_REDIS_ON_ERROR": "allow", "REDIS_PERSECOND_TIMEOUT": "x"} {
		if _, err := envoyRLSEnv(env(map[string]string{k: v})); err == nil {
			t.Errorf("%s=%q accepted", k, v)
		}
	}
}

// `tollgate envoy-rls` on Redis counts under envoyproxy/ratelimit's keys,
// and a Redis that is down fails the call (gRPC Unknown), as
// envoyproxy/ratelimit's does, rather than answering from a local count.
func TestEnvoyRLSCountsUnderUpstreamKeysAndFailsAsUpstream(t *testing.T) {
	srv := redistest.Start(t)
	_, grpcAddr, flags := envoyDir(t)
	startEnvoyRLS(t, append(flags, "-redis", srv.Addr)...)
	before := time.Now().Unix()
	rlsCodes(t, grpcAddr, 1)
	key := "edge_remote_address_192.0.2.7_" + strconv.FormatInt(before/3600*3600, 10)
	if after := time.Now().Unix(); after/3600 != before/3600 {
		t.Skip("the request straddled an hour")
	}
	if got := srv.CLI(t, "GET", key); got != "1" {
		t.Fatalf("GET %s = %q (keys %q)", key, got, srv.CLI(t, "KEYS", "*"))
	}
	srv.Kill()
	conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = rlsv3.NewRateLimitServiceClient(conn).ShouldRateLimit(ctx, &rlsv3.RateLimitRequest{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{
		{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "remote_address", Value: "192.0.2.7"}}}}})
	if status.Code(err) != codes.Unknown {
		t.Fatalf("Redis down: %v, want gRPC Unknown", err)
	}
}
