package httplimit

import (
	"context"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/tollgate-dev/tollgate/internal/ctxsleep"
	"github.com/tollgate-dev/tollgate/rules"
)

// Config configures a Limiter, and the Enforce step of a front end that
// calls the steps itself. The zero Config is ready to use.
type Config struct {
	// Wait blocks for d or until ctx is done, returning ctx.Err() in the
	// latter case. Nil means a real timer (Sleep). Tests inject a fake one
	// so that no test sleeps.
	Wait func(ctx context.Context, d time.Duration) error
	// OnDelayCancelled, when set, is called when a client goes away while
	// its request is delayed; the request is then not served (nginx drops
	// it too). The charge stays: the request was admitted. It gets a copy
	// of the result, which it may keep.
	OnDelayCancelled func(r *http.Request, res *rules.Result)
	// Refuse, when set, answers a refused request in a front end's own
	// form (a gRPC status, forward-auth's nginx style) instead of
	// SetHeaders and WriteRefusal. It gets a copy of the result.
	Refuse func(w http.ResponseWriter, r *http.Request, res *rules.Result)
}

// Limiter applies a rules.Engine to net/http requests. It is safe for
// concurrent use.
type Limiter struct {
	engine  atomic.Pointer[rules.Engine]
	steps   Config // cfg, its OnDelayCancelled counting into cancels
	cancels atomic.Uint64
}

// New returns a Limiter over e. A nil e is a programming error: New
// panics, rather than the first request.
func New(e *rules.Engine, cfg Config) *Limiter {
	if e == nil {
		panic("httplimit.New: nil *rules.Engine")
	}
	l := &Limiter{steps: cfg}
	user := cfg.OnDelayCancelled
	l.steps.OnDelayCancelled = func(r *http.Request, res *rules.Result) {
		l.cancels.Add(1)
		if user != nil {
			user(r, res)
		}
	}
	l.engine.Store(e)
	return l
}

// Swap replaces the engine for requests that start from now on, e.g. on a
// configuration reload. Counters live in the store, so rules that keep
// their names and policies keep their counts. A nil e panics, as in New.
func (l *Limiter) Swap(e *rules.Engine) {
	if e == nil {
		panic("httplimit.Limiter.Swap: nil *rules.Engine")
	}
	l.engine.Store(e)
}

// DelaysCancelled returns how many delayed requests ended because their
// client went away.
func (l *Limiter) DelaysCancelled() uint64 { return l.cancels.Load() }

// Handler returns next wrapped by the limiter, the standard middleware
// shape func(http.Handler) http.Handler:
//
//   - every response of a request some rule matched carries the rate-limit
//     header fields;
//   - a refused request is answered with the refusal (no body for HEAD)
//     and next is not called;
//   - a delayed request waits (capped) before next; if its context ends
//     first, next is not called and it is answered 503 (a client that went
//     away reads nothing);
//   - a store failure is allowed or refused as the rules' failure mode
//     says (rules.Config.OnErrorOf; the engine logs it);
//   - the concurrency slots a request holds (rules.AlgConcurrency) are
//     released when next returns or panics, and so are the counting
//     reservations (rules.Result.Holds) of a request never charged (a
//     delay its client left);
//   - a request a counting rule (rules.Rule.Count) matched is charged
//     with the answer next gives (Charge): the status it writes, charged
//     as it is written (before the client can read it), 200 when it
//     writes none, 101 when it hijacks the connection, 500 when it
//     panics first (the panic goes on). next gets a ResponseWriter that
//     keeps http.Flusher, http.Hijacker and http.ResponseController
//     working (Unwrap); a request no counting rule matched gets w itself
//     and costs nothing more.
//
// The sequence is Decide, Enforce, Finish, next: a front end that needs
// to act between the steps (time the decision, log it, route first)
// calls them itself, as the gateway's HTTP/2 and gRPC path and
// forward-auth do; fastlimit has the same three steps for fasthttp.
func (l *Limiter) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res := Decide(r, l.engine.Load())
		if res.Holds() {
			// Concurrency slots go back however next ends: returning,
			// the client gone, a timeout, a panic.
			defer res.Release()
		}
		if !Enforce(w, r, &res, &l.steps) {
			return
		}
		Finish(w.Header(), &res)
		if res.Counts() {
			serveCounting(next, w, r, &res)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Decide is the engine's decision on r. A store error is in the result
// (Outcome Errored, refused or not as the rules' failure mode says) and
// already logged by the engine's Logger.
//
// The engine gets r's context without its cancellation: a request whose
// client resets it or goes away as it is decided is still charged
// (opening and cancelling HTTP/2 streams, CVE-2023-44487's rapid reset,
// costs a client its allowance as requests do), and a store call is
// bounded by the store's own timeout.
func Decide(r *http.Request, e *rules.Engine) rules.Result {
	return DecideOn(r, Request{r}, e)
}

// DecideOn is Decide on another view v of r's request: forward-auth's
// original request, which the proxy describes in r's header fields.
func DecideOn(r *http.Request, v rules.Request, e *rules.Engine) rules.Result {
	res, _ := e.Decide((*uncancelled)(r), v)
	return res
}

// uncancelled is r's context without its cancellation, as
// context.WithoutCancel makes it (its values, no deadline, never done),
// but as a view of the request itself, so that it allocates nothing.
type uncancelled http.Request

var _ context.Context = (*uncancelled)(nil)

// Deadline reports none.
func (c *uncancelled) Deadline() (time.Time, bool) { return time.Time{}, false }

// Done returns nil: the context is never done.
func (c *uncancelled) Done() <-chan struct{} { return nil }

// Err returns nil.
func (c *uncancelled) Err() error { return nil }

// Value is the request context's value for key.
func (c *uncancelled) Value(key any) any { return (*http.Request)(c).Context().Value(key) }

// Enforce carries out res before the request is served, as cfg (nil: the
// zero Config) says. A refused request is answered with the refusal
// (SetHeaders and WriteRefusal, or cfg.Refuse) and Enforce returns false:
// the caller must not serve it. A delayed one waits its delay (cfg.Wait);
// if r's context ends first, the request is not served, as nginx drops a
// delayed request whose client closed its connection (its 499): cfg's
// OnDelayCancelled is told, it is answered 503 (WriteDelayEnded: a client
// that went away reads nothing, one whose deadline ended learns why, and
// net/http does not send an empty 200) and Enforce returns false.
// Otherwise Enforce returns true.
func Enforce(w http.ResponseWriter, r *http.Request, res *rules.Result, cfg *Config) bool {
	if cfg == nil {
		cfg = &zeroConfig
	}
	if res.Refused() {
		if cfg.Refuse != nil {
			rc := *res // only this path lets the result escape
			cfg.Refuse(w, r, &rc)
			return false
		}
		SetHeaders(w.Header(), res)
		WriteRefusal(w, r, res.Refusal())
		return false
	}
	if res.Delay <= 0 {
		return true
	}
	wait := cfg.Wait
	if wait == nil {
		wait = Sleep
	}
	if wait(r.Context(), res.Delay) == nil {
		return true
	}
	if cfg.OnDelayCancelled != nil {
		rc := *res // only this path lets the result escape
		cfg.OnDelayCancelled(r, &rc)
	}
	WriteDelayEnded(w, r)
	return false
}

var zeroConfig Config

// Finish sets the rate-limit header fields (SetHeaders) of a request that
// res admitted, when a rule matched, in h: the header of the response
// about to be written. net/http sends a handler's header fields when it
// first writes, so h is w.Header() before the handler (they replace any
// of the same name set earlier; the handler may still replace them), or
// the upstream's response header in a proxy's ModifyResponse (they
// replace the upstream's).
func Finish(h http.Header, res *rules.Result) {
	if res.Matched() {
		SetHeaders(h, res)
	}
}

// SetHeaders sets res's response header fields (rate-limit fields, and
// on a refusal Retry-After and Cache-Control) in h, replacing any of the
// same name, with one allocation for all their value slices.
func SetHeaders(h http.Header, res *rules.Result) {
	var buf [10]rules.Header
	hs := res.AppendHeaders(buf[:0])
	if len(hs) == 0 {
		return
	}
	vals := make([]string, len(hs))
	for i, f := range hs {
		vals[i] = f.Value
		h[f.Name] = vals[i : i+1 : i+1] // the engine's names are canonical
	}
}

// WriteRefusal answers r with resp (a refusal: res.Refusal(), or a
// problem of the front end's own): its status, content type and body
// (none for HEAD), with X-Content-Type-Options: nosniff. Set the
// rate-limit fields (SetHeaders) first.
func WriteRefusal(w http.ResponseWriter, r *http.Request, resp rules.Response) {
	h := w.Header()
	h.Set("Content-Type", resp.ContentType)
	h.Set("X-Content-Type-Options", "nosniff")
	if r.Method == http.MethodHead {
		w.WriteHeader(resp.Status)
		return
	}
	h.Set("Content-Length", strconv.Itoa(len(resp.Body)))
	w.WriteHeader(resp.Status)
	w.Write(resp.Body) //nolint:errcheck // the client may have gone; nothing to do
}

// WriteProblem answers r with what the engine did not decide (no route, a
// malformed request, a peer not trusted): an RFC 9457
// application/problem+json body (rules.AppendProblem) of status, title
// and detail, with Cache-Control: no-store, written by WriteRefusal
// (nosniff, no body for HEAD).
func WriteProblem(w http.ResponseWriter, r *http.Request, status int, title, detail string) {
	w.Header().Set("Cache-Control", "no-store")
	WriteRefusal(w, r, rules.Response{Status: status, ContentType: rules.ContentTypeProblem,
		Body: rules.AppendProblem(nil, status, title, detail)})
}

// delayEndedBody is the problem answered when a delayed request's context
// ends before its wait does.
var delayEndedBody = rules.AppendProblem(nil, http.StatusServiceUnavailable, "Service Unavailable", rules.DetailDelayEnded)

// WriteDelayEnded answers 503 to a request whose context ended during its
// delay: a client that went away reads nothing, one whose deadline ended
// learns why.
func WriteDelayEnded(w http.ResponseWriter, r *http.Request) {
	WriteRefusal(w, r, rules.Response{Status: http.StatusServiceUnavailable, ContentType: rules.ContentTypeProblem, Body: delayEndedBody})
}

// Sleep waits d or until ctx is done, and returns ctx.Err() in the latter
// case. It is the default Config.Wait.
func Sleep(ctx context.Context, d time.Duration) error {
	return ctxsleep.Sleep(ctx, d)
}
