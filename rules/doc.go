// Package rules is tollgate's HTTP-stack-free rule engine: it decides what
// a request costs, against which limits, under which key, and what the
// response must say about it, without importing net/http.
//
// A [Config] (plain data with documented zero-value defaults, usually
// decoded from YAML by package config) lists [Rule]s. Each rule has a
// [Match] (method, host, path exact/prefix/ServeMux-style pattern, header
// presence or value), a [Key] (client IP, header, query parameter, path,
// method, host, or a composite), one or more [Policy] entries or [Tiers]
// (plans chosen by identity), a [Cost], and flags for shadow mode and for an
// anonymous bucket when the key is missing.
//
// [New] compiles a validated Config into an immutable [Engine] over a
// limit.Store. [Engine.Decide] reads a small [Request] view, which net/http
// (package httplimit) and fasthttp adapters provide without allocating,
// applies every matching rule's policies as one all-or-nothing
// limit.Store.ApplyAll (shadow rules in a separate one, so that they never
// change what enforced rules charge), and returns a [Result]. The Result
// produces the response header fields ([Result.AppendHeaders]: IETF
// draft-10 RateLimit-Policy and RateLimit, the older RateLimit-Limit /
// -Remaining / -Reset, X-RateLimit-* with delta or epoch reset, and
// Retry-After on refusal) and the refusal ([Result.Refusal]: status,
// Cache-Control: no-store, an RFC 9457 application/problem+json body with
// violated-policies), so no header or body logic is written twice.
// [Result.AppendRawHeaders] and [Result.AppendRefusal] write the same
// values into the caller's reused buffers; the fixed parts (the body's
// type, title and status, each policy's RateLimit-Policy item and
// violated-policies member) are built once by [New]. The field values are
// written by one writer ([AppendPolicyItem], [AppendMember],
// [AppendRateLimitMember], [AppendTrio]), which envoy-rls's answers use
// too, in its upstream-compatible modes. Every front end (the gateway's
// HTTP/1.1, HTTP/2 and gRPC paths, forward-auth, the middlewares)
// carries out a Result with the same three steps, httplimit's and
// fastlimit's Decide, Enforce and Finish.
//
// # Country, ASN and TLS fingerprint
//
// The country and asn key parts and matchers ask [Config.Geo] about the
// client IP as [ClientIP] resolves it. An address the database does not
// place has the country [UnknownCountry] ("XX", as Cloudflare's
// CF-IPCountry) and ASN 0, and is counted under those values: a
// deliberate difference from nginx's geoip2 module, whose default empty
// value limit_req does not count, so that no address escapes a
// per-country limit because the database misses it. Countries are
// written as two letters in either case ("de" is DE). The ja4 key part
// and matcher read [TLSFingerprint], which the server computes from the
// ClientHello; a request without one (not TLS) has no ja4 part.
//
// # Consistency tiers
//
// A rule may choose where its counters live with [Rule].Consistency:
// "strict" (one atomic script on the shared Redis, exact across gateways;
// [Rule].OnError may give it its own failure mode), "eventual"
// (decided in process against a view of the global count synced every
// [Rule].SyncInterval), "gossip" (decided in process against this
// gateway's counters plus the other gateways', shared by gossip with no
// central store; [Rule].OnError answers until the gateway is warm) or
// "local" (this process only, each of
// [Rule].Nodes gateways enforcing its share: the policies divided by
// limit.Divide). [Config].Stores supplies each tier's store; a
// rule without a tier, or every rule when Stores is nil, is charged on
// the store given to New, exactly as before tiers existed.
//
// All or nothing holds per store. The requests of one decision are grouped
// by store; each group is one ApplyAll, atomic on its store. The groups
// are charged one after the other, cheapest first (local, eventual,
// gossip, the engine's store, strict), and the first refusal (or store error) stops
// the rest, which are not charged. A group charged before the refusal
// stays charged, since no store can take a charge back: a request refused
// by a strict rule still counts against the local and eventual rules it
// matched (this gateway's own counts), while a request refused by a local
// rule never reaches Redis, so the shared counts only ever see requests
// every cheaper tier admitted. The merged decision, headers and
// violated-policies are those of the groups charged. When every rule is
// on one store (all default, or tiers the Stores function maps to the
// same store) the decision is one ApplyAll as before, and the allowed path
// allocates nothing in either case.
//
// # Failure modes
//
// What a rule answers when its store fails is one setting in one
// vocabulary: [Config].OnError for every rule, [Rule].OnError for a strict
// rule that wants another, each "open" (allow), "closed" (refuse) or
// "local" (decide in this process alone; the default): a failmode.Mode,
// the one type of the failure mode, shared with the store opener and
// store/redis, its old spellings in failmode's one table.
// [Config.OnErrorOf] is the one place a rule's effective mode is decided:
// the engine refuses an error its store returns when a matched enforced
// rule's mode is closed, and a front end gives each rule a store that
// answers its own failures (store/redis's WithFailure) by the same mode.
// Log lines about store errors carry rule names and hashed keys, never raw
// keys, at most one line per kind every 10s with a count of the rest.
//
// # Counting on the answer
//
// A rule with [Rule].Count charges a request only when its answer is one
// Count names (statuses "401", classes "4xx", ranges "500-599", a
// response header): the login defence counts failed attempts, not
// attempts. [Engine.Decide] charges such a rule nothing: it peeks each of
// its policies (a cost-0 Apply on the same store key) and refuses at once
// a key with less left than the rule's cost, with Retry-After the time
// until one unit is back (for a cost above 1, until the whole allowance
// is: never early). The peeks are decided before the other rules are
// charged, so a request a peek refuses charges nothing anywhere (all or
// nothing holds). After the answer, [Result.Charge] charges the rule's
// policies with its cost, each in one atomic Apply; [Result.Counts] tells
// a front end whether to call it. No answer (status 0: the upstream
// failed, the client went away) is counted as 502, what the gateway
// answers. Like Cloudflare's counting expressions, the decision and the
// charge are apart: under concurrency a key admits at most its limit
// plus the requests in flight between their peek and their charge (the
// charges themselves are exact; a charge that finds the limit full
// charges nothing, and starts the policy's penalty). A counting rule
// never delays (Validate refuses a shaping leaky bucket in it) and holds
// no concurrency slots. A shadow counting rule peeks and charges the
// same way and never refuses; a request the shadow rules would have
// refused is not charged after its answer, as an enforced rule's would
// not be. A counting rule's policies are listed after the other rules'
// in RateLimit-Policy (they are decided apart). Envoy's, nginx's, Kong's
// and Traefik's limiters cannot count on the answer at all.
//
// # Penalties
//
// [Policy].Penalty (or the rule's [Rule].Penalty for all its rate
// policies), between 1s and 30 days, refuses a key for that long once
// the policy has refused it (Cloudflare's mitigation timeout, fail2ban's
// bantime), where the window alone would let it back as soon as a unit
// frees. The penalty is a key of its own in the policy's store (the
// policy's key prefix, then a marker no key value can spell): a token
// bucket of burst 1 refilling once per penalty. Starting it charges 1;
// checking it is a cost-0 peek, in force while nothing remains, for
// exactly what it has left (the Retry-After, rounded up to a second, and
// [Result.Penalty], [Event].Penalty). A running penalty is not extended
// by further refusals: its term runs from the refusal that started it,
// as fail2ban's does. Every decision of a rule with a penalty checks the
// penalty keys first, with the counting rules' peeks (one ApplyEach per
// store that has it, as Redis does; in-process stores answer each
// check in turn), so it costs one store call more; refusals cost one more
// to start the penalty. A key under a penalty, and a counting rule's key
// found with nothing left, are then refused from memory, with no store
// call, until the instant the store said they could pass (other requests
// only push that instant later), as store/redis's over-limit cache does
// for a plain rule's refusals: a brute force under its penalty costs the
// store nothing. Because it is only a store key, it works on
// every store and tier (memory, Redis strict, eventual, gossip), with the
// tier's own consistency: on the eventual and gossip tiers a gateway
// hears of another's penalty within their sync (a sync interval, a few
// gossip rounds), and gateways that start the same key's penalty before
// hearing of each other's add up (two starts, twice the term), the
// tiers' overshoot turned into a longer penalty, never a shorter one.
// When several policies refuse one charge, the store reports the most
// restrictive, and only its penalty starts. A shadow rule's penalty runs
// the same way and refuses nothing: its events (ShadowRefused, with
// [Event].Penalty) show what it would have refused.
//
// Client IPs come from the peer address; forwarding headers
// (X-Forwarded-For, Forwarded per RFC 7239, or X-Real-IP) are read only when
// the peer is inside [ClientIP].TrustedProxies, walking right to left past
// trusted hops. No proxy is trusted by default. IPv6 clients are aggregated
// to a /64 by default.
//
// Keys are namespaced by rule and policy, so two rules never share a store
// key, and a client-chosen key part longer than [Config].MaxKeyLength is
// replaced by its SHA-256. The allowed path for an IP-keyed rule does not
// allocate.
package rules
