// Package client is the polite half of rate limiting: an http.RoundTripper
// that waits as the server asks and backs off with jitter so that refused
// clients do not come back together.
//
// A [Transport] wraps another RoundTripper (http.DefaultTransport by
// default). For each request it:
//
//   - waits first if the host's allowance is spent, until the advertised
//     reset, instead of sending the request into a 429 ("pacing before
//     refusal"). The allowance is the remaining count a response gave
//     (RateLimit "r", RateLimit-Remaining or X-RateLimit-Remaining, with a
//     reset) less the requests to that host still in flight, spent as
//     requests go and never raised again before the reset, so concurrent
//     callers sharing the Transport do not all spend the same last unit;
//   - on 429 and 503, honours Retry-After in both forms (delay-seconds and
//     the three HTTP-date formats of RFC 9110), up to [Config.MaxWait], as
//     a floor: up to [Config.RetryJitter] (1s) is added so that clients
//     refused together do not return together; Retry-After takes
//     precedence over the RateLimit fields;
//   - otherwise, on 429, 502, 503, 504 and transport errors, retries with
//     capped exponential backoff and full jitter, rand(0, min(cap,
//     base·2^n)), up to [Config.MaxAttempts] attempts;
//   - retries only requests it can replay: the body must be absent or
//     rewindable (GetBody, which http.NewRequest sets for in-memory bodies);
//     after a transport error, 502 or 504 the method must also be
//     idempotent, because the server may have acted on the request;
//   - never waits past the request context's deadline: when the wait would
//     outlast it, it returns at once with a [*WaitError] that carries the
//     wait the server asked for and unwraps to context.DeadlineExceeded.
//
// Malformed rate-limit headers are ignored, as the IETF draft requires.
// [ParseRetryAfter] and [ParseAllowance] expose the header parsing.
//
// A Transport is safe for concurrent use; make one per process (or per
// upstream) and share it, so that its pacing table sees every response.
//
// Machine-to-machine callers compose it with golang.org/x/oauth2: a
// clientcredentials token source wrapped in oauth2.ReuseTokenSourceWithExpiry
// caches and refreshes the token, oauth2.Transport adds it, and this
// Transport retries (see the ClientCredentials example). The token endpoint
// is called once per token lifetime, not once per API call.
package client
