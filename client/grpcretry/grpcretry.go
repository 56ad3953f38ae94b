// Package grpcretry is the client package's politeness for gRPC: unary
// and stream client interceptors for grpc-go that retry a call refused
// with RESOURCE_EXHAUSTED after the wait the server states (the
// retry-after metadata tollgate's gateway sends with its refusals, in
// delay-seconds), plus up to client.Config.RetryJitter, or with jittered
// exponential backoff when it states none, as client.Transport does for
// HTTP. It is a package of its own so that the client package does not
// make every HTTP user depend on grpc.
//
//	conn, err := grpc.NewClient(addr,
//		grpc.WithUnaryInterceptor(grpcretry.Unary(cfg)),
//		grpc.WithStreamInterceptor(grpcretry.Stream(cfg)))
//
// A refused call did not reach the service, so any call may be retried.
// A stream is retried while no response message has come: the messages
// sent so far (at most MaxReplay) are sent again on the new stream.
package grpcretry

import (
	"context"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/tollgate-dev/tollgate/client"
)

// MaxReplay is the most messages a stream sends before its first
// response that a retry sends again; a stream that sent more is not
// retried.
const MaxReplay = 64

// Unary returns a unary client interceptor retrying RESOURCE_EXHAUSTED
// as cfg says (MaxAttempts, MaxWait, RetryJitter, the backoff). cfg is
// validated when the interceptor is built: an invalid one panics.
func Unary(cfg client.Config) grpc.UnaryClientInterceptor {
	mustValid(cfg)
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		r, _ := cfg.Retrier()
		for {
			var header, trailer metadata.MD
			err := invoker(ctx, method, req, reply, cc, append(opts, grpc.Header(&header), grpc.Trailer(&trailer))...)
			if !refused(err) || !r.Attempted() {
				return err
			}
			wait, ok := RetryAfter(header, trailer)
			if werr := r.Wait(ctx, cc.Target(), wait, ok); werr != nil {
				return err // the refusal, as the server sent it
			}
		}
	}
}

// Stream returns a stream client interceptor retrying a stream refused
// with RESOURCE_EXHAUSTED before its first response message, as Unary
// does a call.
func Stream(cfg client.Config) grpc.StreamClientInterceptor {
	mustValid(cfg)
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		cs, err := streamer(ctx, desc, cc, method, opts...)
		if err != nil {
			return nil, err
		}
		r, _ := cfg.Retrier()
		return &stream{ClientStream: cs, ctx: ctx, r: r, open: func() (grpc.ClientStream, error) {
			return streamer(ctx, desc, cc, method, opts...)
		}, target: cc.Target()}, nil
	}
}

func mustValid(cfg client.Config) {
	if _, err := cfg.Retrier(); err != nil {
		panic("grpcretry: " + err.Error())
	}
}

// refused reports whether err is a RESOURCE_EXHAUSTED status.
func refused(err error) bool {
	return err != nil && status.Code(err) == codes.ResourceExhausted
}

// RetryAfter reads the wait a refusal states: its retry-after metadata
// (delay-seconds, or an HTTP-date; in the headers or, as a
// trailers-only response carries it, the trailers).
func RetryAfter(header, trailer metadata.MD) (time.Duration, bool) {
	for _, md := range []metadata.MD{trailer, header} {
		if v := md.Get("retry-after"); len(v) == 1 {
			if d, ok := client.ParseRetryAfter(strings.TrimSpace(v[0]), time.Now()); ok {
				return d, true
			}
		}
	}
	return 0, false
}

// stream is a client stream that is opened again, its messages sent
// again, when it is refused before its first response message.
type stream struct {
	grpc.ClientStream
	ctx      context.Context
	r        *client.Retrier
	open     func() (grpc.ClientStream, error)
	target   string
	sent     []any // messages sent before the first response
	closed   bool  // CloseSend was called
	received bool  // a response message came: no more retries
}

// SendMsg sends m, remembering it for a retry. A stream that ended
// (io.EOF) while nothing was received is retried at once if it was
// refused, so that the caller goes on sending on the new one.
func (s *stream) SendMsg(m any) error {
	if !s.received {
		if len(s.sent) < MaxReplay {
			s.sent = append(s.sent, m)
		} else {
			s.received = true // too many to replay: never retried
			s.sent = nil
		}
	}
	err := s.ClientStream.SendMsg(m)
	if err == nil || s.received {
		return err
	}
	// The stream is over; its status says why.
	if rerr := s.ClientStream.RecvMsg(new(any)); refused(rerr) {
		if s.retry(rerr) == nil {
			return nil
		}
	}
	return err
}

// CloseSend half-closes the stream.
func (s *stream) CloseSend() error {
	s.closed = true
	return s.ClientStream.CloseSend()
}

// RecvMsg receives the next response message, retrying the stream when
// it was refused before the first.
func (s *stream) RecvMsg(m any) error {
	for {
		err := s.ClientStream.RecvMsg(m)
		if err == nil {
			s.received, s.sent = true, nil
			return nil
		}
		if s.received || !refused(err) {
			return err
		}
		if s.retry(err) != nil {
			return err
		}
	}
}

// retry waits as the refusal rerr says, then opens the stream again and
// sends again what was sent; it returns rerr's error when it may not.
func (s *stream) retry(rerr error) error {
	if !s.r.Attempted() {
		return rerr
	}
	wait, ok := RetryAfter(nil, s.ClientStream.Trailer())
	if h, herr := s.ClientStream.Header(); herr == nil && !ok {
		wait, ok = RetryAfter(h, nil)
	}
	if err := s.r.Wait(s.ctx, s.target, wait, ok); err != nil {
		return rerr
	}
	cs, err := s.open()
	if err != nil {
		return err
	}
	s.ClientStream = cs
	for _, m := range s.sent {
		if err := cs.SendMsg(m); err != nil {
			return err
		}
	}
	if s.closed {
		return cs.CloseSend()
	}
	return nil
}
