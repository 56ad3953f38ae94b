package forwardauth

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tollgate-dev/tollgate/httplimit"
	"github.com/tollgate-dev/tollgate/rules"
)

// Config configures a Handler. The zero Config trusts no proxy, so every
// request is answered 403 until TrustedProxies is set.
type Config struct {
	// TrustedProxies are the addresses ("127.0.0.1") and CIDRs
	// ("10.0.0.0/8") of the proxies allowed to ask. Only their forwarded
	// fields are read; a request from any other peer is answered 403 and
	// charges nothing. Give the rule engine the same list
	// (rules.ClientIP.TrustedProxies), or it takes the proxy's address
	// for every client's.
	TrustedProxies []string
	// Wait blocks for d or until ctx is done, returning ctx.Err() in the
	// latter case: a request a shaping policy delays is answered once
	// its delay has passed, so the proxy holds it that long. Nil means
	// httplimit.Sleep (a real timer).
	Wait func(ctx context.Context, d time.Duration) error
	// Logger receives a line for every forwarded request that cannot be
	// decided on (a missing or malformed field: the proxy's
	// configuration is at fault) and for every untrusted peer. Log lines
	// name the field and the peer, never a field's value. Nil means no
	// logging.
	Logger *slog.Logger
}

// Handler answers a proxy's forward-auth requests with the rule engine's
// decision on the original request. It is safe for concurrent use.
//
// The style of the answer is chosen by the request path: a path ending in
// "/nginx" (e.g. /auth/nginx) is the nginx style, any other path (e.g.
// /auth) the forwarded style. See the package documentation.
type Handler struct {
	engine  atomic.Pointer[rules.Engine]
	trusted rules.Proxies
	log     *slog.Logger
	// The Enforce step of each style (httplimit.Enforce): cfg.Wait,
	// counting cancelled delays, the nginx style's own refusal.
	forwarded, nginx httplimit.Config
	cancels          atomic.Uint64
}

// The header fields the nginx style adds to a refusal, for the snippet's
// auth_request_set to capture.
const (
	// HeaderStatus is the status a refusal has in the forwarded style
	// (429, or the store-error status when the engine fails closed).
	HeaderStatus = "X-Tollgate-Status"
	// HeaderRefusal is the refusal body, when it fits in a header field
	// (at most maxRefusalField bytes, no control characters).
	HeaderRefusal = "X-Tollgate-Refusal"
)

// ErrConcurrency is New's error for an engine with a concurrency policy
// (rules.AlgConcurrency). A slot is held from the decision until the
// request it counts ends, and an auth subrequest is answered before the
// request it asks about is even sent to the origin: forward-auth cannot
// see its end, so it cannot hold the slot. Limit concurrency where the
// request is served (tollgate serve, httplimit, nginx's limit_conn).
var ErrConcurrency = errors.New("a concurrency policy cannot be enforced by forward-auth: " +
	"the auth subrequest ends before the request it asks about, so the slot could not be held for it; " +
	"use a rate policy, or limit concurrency where the request is served (tollgate serve)")

// concurrencyError is ErrConcurrency naming the rule.
func concurrencyError(rule string) error {
	return fmt.Errorf("forwardauth: rule %q: %w", rule, ErrConcurrency)
}

// ErrCount is the error for a rule that counts on the answer
// (rules.Rule.Count): the auth subrequest is answered before the request
// it asks about is sent to the origin, and forward-auth never learns the
// origin's answer, so there is nothing to charge.
var ErrCount = errors.New("a rule with count cannot be enforced by forward-auth: " +
	"the origin's answer goes to the proxy, never to forward-auth, so the answers it counts could not be charged; " +
	"count where the request is served (tollgate serve, httplimit), or drop count to charge every request")

// ErrJA4 is the error for a rule that reads the client's TLS fingerprint
// (a ja4 key part, or a ja4 matcher in match, except or cost.by; see
// rules.Rule.JA4Use): the client's TLS handshake is with the proxy,
// which forwards no fingerprint, so such a rule could never apply.
var ErrJA4 = errors.New("a rule reading the TLS fingerprint (ja4) cannot be enforced by forward-auth: " +
	"the client's TLS handshake is with the proxy, which forwards no fingerprint, so a ja4 key part is always missing " +
	"and a ja4 matcher never matches; limit by ja4 where TLS ends (tollgate serve), or drop ja4 here")

// RuleError is CheckRules' error: rule Index of the list (Name) cannot
// be served by forward-auth, because of what stands at Field within it
// ("count", "policies[1].algorithm", "key"): Err is ErrCount,
// ErrConcurrency or ErrJA4. A configuration file's loader places it with
// the path "rules[Index].Field".
type RuleError struct {
	Index int
	Name  string
	Field string
	Err   error
}

func (e *RuleError) Error() string {
	return fmt.Sprintf("forwardauth: rule %q, %s: %v", e.Name, e.Field, e.Err)
}

func (e *RuleError) Unwrap() error { return e.Err }

// CheckRules returns a *RuleError when a rule of rs counts on the answer
// (rules.Rule.Count: ErrCount), reads the TLS fingerprint
// (rules.Rule.JA4Use: ErrJA4) or has a concurrency policy
// (ErrConcurrency): a configuration's check before it is built into an
// engine, as New checks the engine. The top-level except is not in rs:
// check it with rules.Config.JA4Use (New refuses it too).
func CheckRules(rs []rules.Rule) error {
	for i := range rs {
		refuse := func(field string, err error) error {
			return &RuleError{Index: i, Name: rs[i].Name, Field: field, Err: err}
		}
		if rs[i].Count != nil {
			return refuse("count", ErrCount)
		}
		if at, ok := rs[i].JA4Use(); ok {
			return refuse(at, ErrJA4)
		}
		for j, p := range rs[i].Policies {
			if p.Algorithm == rules.AlgConcurrency {
				return refuse(fmt.Sprintf("policies[%d].algorithm", j), ErrConcurrency)
			}
		}
	}
	return nil
}

// maxRefusalField bounds the refusal body sent as a header field, well
// under nginx's default proxy_buffer_size (4 KiB for the whole head).
const maxRefusalField = 1024

// New returns a Handler over e. A nil e is a programming error and
// panics; a malformed TrustedProxies entry is an error, and so is a rule
// with a concurrency policy (ErrConcurrency), one that counts on the
// answer (ErrCount) or one that reads the TLS fingerprint (ErrJA4, also
// for a ja4 matcher in the top-level except).
func New(e *rules.Engine, cfg Config) (*Handler, error) {
	if e == nil {
		panic("forwardauth.New: nil *rules.Engine")
	}
	if name, ok := e.ConcurrencyRule(); ok {
		return nil, concurrencyError(name)
	}
	if name, ok := e.CountingRule(); ok {
		return nil, fmt.Errorf("forwardauth: rule %q: %w", name, ErrCount)
	}
	if name, ok := e.JA4Rule(); ok {
		if name == "" {
			return nil, fmt.Errorf("forwardauth: except: %w", ErrJA4)
		}
		return nil, fmt.Errorf("forwardauth: rule %q: %w", name, ErrJA4)
	}
	h := &Handler{log: cfg.Logger}
	h.forwarded = httplimit.Config{Wait: cfg.Wait, OnDelayCancelled: func(*http.Request, *rules.Result) { h.cancels.Add(1) }}
	h.nginx = h.forwarded
	h.nginx.Refuse = func(w http.ResponseWriter, _ *http.Request, res *rules.Result) {
		httplimit.SetHeaders(w.Header(), res)
		writeNginxRefusal(w, res.Refusal())
	}
	var err error
	if h.trusted, err = rules.ParseProxies(cfg.TrustedProxies); err != nil {
		return nil, fmt.Errorf("forwardauth: %w", err)
	}
	h.engine.Store(e)
	return h, nil
}

// Swap replaces the engine for requests that start from now on (a
// configuration reload). A nil e panics, as in New. Swap cannot refuse
// an engine with a concurrency policy or a counting rule as New does
// (check it with CheckRules first): its slots are then given back as
// each answer is written, so they bound the auth requests in flight, not
// the requests they ask about, and a counting rule is never charged.
func (h *Handler) Swap(e *rules.Engine) {
	if e == nil {
		panic("forwardauth.Handler.Swap: nil *rules.Engine")
	}
	h.engine.Store(e)
}

// DelaysCancelled returns how many delayed requests ended because the
// proxy (or its client) went away before their delay did: they were
// answered 503, which nobody reads, and not allowed.
func (h *Handler) DelaysCancelled() uint64 { return h.cancels.Load() }

// isTrusted reports whether peer (the auth request's, as the engine
// reads it) is a trusted proxy.
func (h *Handler) isTrusted(peer netip.AddrPort) bool {
	return peer.IsValid() && h.trusted.Contains(peer.Addr().Unmap().WithZone(""))
}

// noStore is the value of the Cache-Control field on every decided
// answer, set without Header.Set's canonicalizing and allocating. It is
// shared: the field's value slice is replaced (SetHeaders on a refusal)
// or appended to (a full slice, so a copy), never written in place.
var noStore = []string{"no-store"}

// ServeHTTP decides on the original request r describes and answers in
// the style r's path selects.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	nginx := strings.HasSuffix(r.URL.Path, "/nginx")
	f := forwardedFields
	if nginx {
		f = nginxFields
	}
	// The peer parsed once, for the trust check here and the engine's
	// client address (original.RemoteAddr).
	peer := httplimit.Request{Req: r}.RemoteAddr()
	if !h.isTrusted(peer) {
		if h.log != nil {
			h.log.LogAttrs(r.Context(), slog.LevelWarn, "forward-auth: request from a peer that is not a trusted proxy",
				slog.String("peer", r.RemoteAddr))
		}
		writeProblem(w, r, http.StatusForbidden, "the peer is not a trusted proxy")
		return
	}
	o, field, err := readOriginal(r, f)
	if err != nil {
		if h.log != nil {
			h.log.LogAttrs(r.Context(), slog.LevelWarn, "forward-auth: the forwarded request cannot be decided on",
				slog.String("field", field), slog.String("error", err.Error()), slog.String("peer", r.RemoteAddr))
		}
		writeProblem(w, r, http.StatusBadRequest, field+": "+err.Error())
		return
	}
	o.peer = peer
	// httplimit's sequence on the original request; the answer to an
	// admitted one is the 200 itself.
	res := httplimit.DecideOn(r, &o, h.engine.Load())
	if res.Holds() {
		// Only an engine given to Swap has concurrency policies (New
		// refuses them): the slots go back with the answer.
		defer res.Release()
	}
	w.Header()["Cache-Control"] = noStore // an answer about one request
	steps := &h.forwarded
	if nginx {
		steps = &h.nginx
	}
	if !httplimit.Enforce(w, r, &res, steps) {
		return
	}
	httplimit.Finish(w.Header(), &res)
	w.WriteHeader(http.StatusOK)
}

// writeNginxRefusal answers a refusal in the nginx style: 403, the one
// status besides 401 that auth_request passes on, with the refusal's own
// status and body in header fields for the snippet to answer with.
func writeNginxRefusal(w http.ResponseWriter, ref rules.Response) {
	hdr := w.Header()
	hdr.Set(HeaderStatus, strconv.Itoa(ref.Status))
	// The body ends with a newline, which a field cannot hold.
	body := bytes.TrimRight(ref.Body, "\r\n")
	if len(body) <= maxRefusalField && printable(body) {
		hdr.Set(HeaderRefusal, string(body))
	}
	w.WriteHeader(http.StatusForbidden)
}

// printable reports whether b has no control characters.
func printable(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c == 0x7f {
			return false
		}
	}
	return true
}

// writeProblem answers an auth request that was not decided on with
// httplimit.WriteProblem, as httplimit writes a refusal.
func writeProblem(w http.ResponseWriter, r *http.Request, status int, detail string) {
	httplimit.WriteProblem(w, r, status, http.StatusText(status), detail)
}
