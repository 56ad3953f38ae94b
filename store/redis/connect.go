package redis

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
)

// clientOption is the rueidis configuration of cfg (with its defaults).
func clientOption(cfg Config) rueidis.ClientOption {
	dialer := netDialer(max(cfg.Timeout, time.Second))
	opt := rueidis.ClientOption{
		InitAddress:      cfg.Addrs,
		Username:         cfg.Username,
		Password:         cfg.Password,
		SelectDB:         cfg.DB,
		TLSConfig:        cfg.TLS,
		DisableCache:     true,
		ConnWriteTimeout: max(cfg.Timeout, 100*time.Millisecond),
		Dialer:           dialer,
		MaxFlushDelay:    max(cfg.FlushDelay, 0),
		DialCtxFn:        dial,
	}
	if cfg.MasterName != "" {
		opt.Sentinel = rueidis.SentinelOption{
			MasterSet: cfg.MasterName,
			Dialer:    dialer,
			TLSConfig: cfg.TLS,
			// The switch is announced (+switch-master); the look every
			// second catches an announcement the client missed.
			TopologyRefreshInterval: time.Second,
		}
	}
	return opt
}

// DialError returns why the last connection attempt failed while the
// store has no connection (nil once connected), with the password hidden.
// See IsConfigError.
func (s *Store) DialError() error {
	if s.conn.Load() != nil {
		return nil
	}
	if p := s.dialErr.Load(); p != nil {
		return *p
	}
	return nil
}

// IsConfigError reports whether err, from connecting, is one that trying
// again cannot mend: the server's certificate not trusted (an unknown
// authority, expired, for another name), the handshake refused by the
// server (a client certificate missing or not trusted: a TLS alert), TLS
// spoken to a plain port, or the credentials refused (WRONGPASS, NOAUTH,
// NOPERM). A Redis that is down or slow is not one: decisions follow the
// failure mode until it is back.
func IsConfigError(err error) bool {
	if err == nil {
		return false
	}
	var (
		verify   *tls.CertificateVerificationError
		unknown  x509.UnknownAuthorityError
		invalid  x509.CertificateInvalidError
		hostname x509.HostnameError
		record   tls.RecordHeaderError
		op       *net.OpError
		cert     *ClientCertError
	)
	switch {
	case errors.As(err, &cert):
		return true
	case errors.As(err, &verify), errors.As(err, &unknown), errors.As(err, &invalid),
		errors.As(err, &hostname), errors.As(err, &record):
		return true
	case errors.As(err, &op) && op.Op == "remote error":
		return true
	}
	if re, ok := rueidis.IsRedisErr(err); ok {
		msg := re.Error()
		return hasCode(msg, "WRONGPASS") || hasCode(msg, "NOAUTH") || hasCode(msg, "NOPERM")
	}
	return false
}

// hideSecret returns err with every occurrence of secret in its text
// replaced by "xxxxx" (err itself when secret is empty or absent). The
// result unwraps to err, so that errors.As still classifies it; print the
// result, never what it unwraps to.
func hideSecret(err error, secret string) error {
	if err == nil || secret == "" || !strings.Contains(err.Error(), secret) {
		return err
	}
	return &secretError{msg: strings.ReplaceAll(err.Error(), secret, "xxxxx"), err: err}
}

type secretError struct {
	msg string
	err error
}

func (e *secretError) Error() string { return e.msg }
func (e *secretError) Unwrap() error { return e.err }

// dial is the client's DialCtxFn: a TCP connection, with TLS when tc is
// set, whose errors say when the server asked for a client certificate
// and then dropped the connection before its first reply. Under TLS 1.3
// the server checks the client's certificate after the client's
// handshake has completed, and Redis then closes the connection without
// an alert the client reads: without this, a missing or untrusted client
// certificate would look like a network failure.
//
// The connection is closed if ctx ends before the server's first reply
// (see untilReply).
func dial(ctx context.Context, dst string, d *net.Dialer, tc *tls.Config) (net.Conn, error) {
	c, err := dialConn(ctx, dst, d, tc)
	if err != nil {
		return nil, err
	}
	return untilReply(ctx, c), nil
}

func dialConn(ctx context.Context, dst string, d *net.Dialer, tc *tls.Config) (net.Conn, error) {
	if tc == nil {
		return d.DialContext(ctx, "tcp", dst)
	}
	c := &certConn{}
	tc = tc.Clone()
	certs := tc.Certificates
	tc.Certificates = nil
	tc.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		c.requested = true
		if len(certs) == 0 {
			return &tls.Certificate{}, nil
		}
		c.sent = true
		return &certs[0], nil
	}
	conn, err := (&tls.Dialer{NetDialer: d, Config: tc}).DialContext(ctx, "tcp", dst)
	if err != nil {
		return nil, err
	}
	c.Conn = conn
	return c, nil
}

// certConn is a TLS connection that remembers whether the server asked
// for a client certificate and whether one was sent, and reports a
// connection dropped before the first reply after such a request as a
// *ClientCertError.
type certConn struct {
	net.Conn
	requested, sent bool
	replied         atomic.Bool
}

func (c *certConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 && !c.replied.Load() {
		c.replied.Store(true)
	}
	return n, c.explain(err)
}

func (c *certConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	return n, c.explain(err)
}

func (c *certConn) explain(err error) error {
	if err == nil || !c.requested || c.replied.Load() {
		return err
	}
	return &ClientCertError{Sent: c.sent, Err: err}
}

// ClientCertError reports a server that asked for a client certificate
// and closed the connection before its first reply: it refused the
// certificate sent (Sent), or wanted one and none is configured.
type ClientCertError struct {
	// Sent is whether a client certificate was sent.
	Sent bool
	// Err is the connection's error.
	Err error
}

func (e *ClientCertError) Error() string {
	if e.Sent {
		return "the server refused the client certificate (not signed by an authority it trusts?): " + e.Err.Error()
	}
	return "the server requires a client certificate and none is configured: " + e.Err.Error()
}

// Unwrap returns the connection's error.
func (e *ClientCertError) Unwrap() error { return e.Err }

// untilReply returns c, closed if ctx ends before c reads its first byte
// (the answer to the client's handshake). ctx is the context of the
// decision that made the client reconnect, so its deadline is the
// decision's timeout. Without this, an attempt whose deadline passed
// before its handshake was sent (a goroutine descheduled on a loaded
// machine) is closed by the client with a PING it waits for: a stalled
// server held the decision until the stall ended or for the client's
// one-second escape timer, not the timeout. A closed connection fails
// that PING at once. Once the server has answered, the connection is
// the client's and ctx no longer matters.
func untilReply(ctx context.Context, c net.Conn) net.Conn {
	if ctx.Done() == nil {
		return c // the client bounds a handshake with no deadline itself
	}
	r := &replyConn{Conn: c}
	r.stop = context.AfterFunc(ctx, func() {
		if r.state.CompareAndSwap(awaitingReply, abandoned) {
			r.Conn.Close()
		}
	})
	return r
}

const (
	awaitingReply = iota
	replied
	abandoned
)

// replyConn is a connection that untilReply closes if its context ends
// before the first reply.
type replyConn struct {
	net.Conn
	state atomic.Int32
	stop  func() bool
}

func (r *replyConn) Read(b []byte) (int, error) {
	n, err := r.Conn.Read(b)
	if n > 0 && r.state.Load() == awaitingReply && r.state.CompareAndSwap(awaitingReply, replied) {
		r.stop()
	}
	return n, r.explain(err)
}

func (r *replyConn) Write(b []byte) (int, error) {
	n, err := r.Conn.Write(b)
	return n, r.explain(err)
}

// explain marks the error of a connection untilReply closed as
// errAbandoned, so that the other calls that waited for this attempt
// know it failed for its starter's context, not theirs (othersDeadline).
func (r *replyConn) explain(err error) error {
	if err != nil && r.state.Load() == abandoned {
		return &abandonedError{err}
	}
	return err
}

// errAbandoned is the error of a connection attempt closed because the
// context of the call that started it ended before the server answered.
var errAbandoned = errors.New("redis: connection attempt abandoned: the call that started it ended first")

type abandonedError struct{ err error }

func (e *abandonedError) Error() string   { return errAbandoned.Error() + ": " + e.err.Error() }
func (e *abandonedError) Unwrap() []error { return []error{errAbandoned, e.err} }
