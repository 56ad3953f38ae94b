package grpcretry

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/tollgate-dev/tollgate/client"
)

func TestRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		header, trailer metadata.MD
		want            time.Duration
		ok              bool
	}{
		{nil, metadata.Pairs("retry-after", "3"), 3 * time.Second, true},
		{metadata.Pairs("retry-after", "2"), nil, 2 * time.Second, true},
		{metadata.Pairs("retry-after", "2"), metadata.Pairs("retry-after", "5"), 5 * time.Second, true},
		{nil, metadata.Pairs("retry-after", "-1"), 0, false},
		{nil, metadata.Pairs("retry-after", "1", "retry-after", "2"), 0, false},
		{nil, nil, 0, false},
	} {
		got, ok := RetryAfter(tc.header, tc.trailer)
		if got != tc.want || ok != tc.ok {
			t.Errorf("RetryAfter(%v, %v) = %v, %t; want %v, %t", tc.header, tc.trailer, got, ok, tc.want, tc.ok)
		}
	}
}

// fakeClock is an injected clock whose Sleep advances it.
type fakeClock struct {
	now   time.Time
	slept []time.Duration
}

func (c *fakeClock) Now() time.Time { return c.now }

func (c *fakeClock) Sleep(_ context.Context, d time.Duration) error {
	c.slept = append(c.slept, d)
	c.now = c.now.Add(d)
	return nil
}

// The unary interceptor waits the server's retry-after (plus jitter
// within RetryJitter), backs off when none is given, stops at
// MaxAttempts, and returns other errors at once.
func TestUnaryRetriesResourceExhausted(t *testing.T) {
	clk := &fakeClock{now: time.Unix(1e9, 0)}
	cfg := client.Config{MaxAttempts: 3, RetryJitter: 500 * time.Millisecond, Now: clk.Now, Sleep: clk.Sleep,
		Rand: func(n int64) int64 { return n / 2 }}
	refusal := status.Error(codes.ResourceExhausted, "rate limit exceeded")
	calls := 0
	invoker := func(results ...error) grpc.UnaryInvoker {
		return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, opts ...grpc.CallOption) error {
			err := results[min(calls, len(results)-1)]
			calls++
			if status.Code(err) == codes.ResourceExhausted {
				for _, o := range opts {
					if tr, ok := o.(grpc.TrailerCallOption); ok {
						*tr.TrailerAddr = metadata.Pairs("retry-after", "2")
					}
				}
			}
			return err
		}
	}
	in := Unary(cfg)

	// Refused twice, then served: two waits of 2s + 250ms jitter.
	err := in(context.Background(), "/pkg.S/M", nil, nil, newConn(t), invoker(refusal, refusal, nil))
	if err != nil || calls != 3 {
		t.Fatalf("err %v after %d calls", err, calls)
	}
	if len(clk.slept) != 2 || clk.slept[0] != 2250*time.Millisecond {
		t.Errorf("waits %v, want two of 2.25s", clk.slept)
	}
	// Refused every time: the last refusal comes back after MaxAttempts.
	calls, clk.slept = 0, nil
	err = in(context.Background(), "/pkg.S/M", nil, nil, newConn(t), invoker(refusal))
	if status.Code(err) != codes.ResourceExhausted || calls != 3 {
		t.Errorf("err %v after %d calls", err, calls)
	}
	// Another error: no retry.
	calls = 0
	other := status.Error(codes.Unavailable, "down")
	if err := in(context.Background(), "/pkg.S/M", nil, nil, newConn(t), invoker(other)); !errors.Is(err, other) || calls != 1 {
		t.Errorf("err %v after %d calls", err, calls)
	}
	// A wait beyond MaxWait is not taken.
	calls = 0
	in = Unary(client.Config{MaxAttempts: 3, MaxWait: time.Second, Now: clk.Now, Sleep: clk.Sleep})
	if err := in(context.Background(), "/pkg.S/M", nil, nil, newConn(t), invoker(refusal)); status.Code(err) != codes.ResourceExhausted || calls != 1 {
		t.Errorf("over MaxWait: err %v after %d calls", err, calls)
	}
}

func newConn(t *testing.T) *grpc.ClientConn {
	cc, err := grpc.NewClient("passthrough:///unused", grpc.WithTransportCredentials(insecureCreds()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

func insecureCreds() credentials.TransportCredentials { return insecure.NewCredentials() }
