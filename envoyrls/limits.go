package envoyrls

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/rules"
)

// Limits is a loaded set of envoyproxy/ratelimit configuration files: one
// descriptor tree per domain. It is immutable once built and safe for
// concurrent use; a reload builds a new one.
type Limits struct {
	domains map[string]*node
	// Files are the files it was read from, in load order.
	Files []string
}

// Domains returns the number of domains configured.
func (l *Limits) Domains() int { return len(l.domains) }

// node is one level of a domain's descriptor tree: the descriptors under
// it by "key" or "key_value", and the rate limit at it, if any.
type node struct {
	children  map[string]*node
	wildcards []wildcard // children whose "key_value" ends in '*', in file order
	limit     *Limit
	// valueToMetric, shareThreshold and pattern are the level's metric and
	// counter options; pattern is its "key_value" when shareThreshold.
	valueToMetric  bool
	shareThreshold bool
	pattern        string
}

// wildcard is a child whose "key_value" ends in '*', and the prefix
// before it.
type wildcard struct {
	key    string
	prefix string
}

// Limit is the rate_limit of one configured descriptor.
type Limit struct {
	// Path is the descriptor's configured path below its domain, as
	// envoyproxy/ratelimit names its stats: "key1_value1.subkey1". It
	// comes from the configuration only, so it is a bounded metric label.
	Path string
	// Domain is the domain the descriptor belongs to.
	Domain string
	// Name and Replaces are the rate_limit's name and the names it
	// replaces.
	Name     string
	Replaces []string
	// Unlimited admits everything without counting.
	Unlimited bool
	// RequestsPerUnit and Unit are the limit as configured.
	RequestsPerUnit uint32
	Unit            rlsv3.RateLimitResponse_RateLimit_Unit
	// Policy is the tollgate policy deciding it: a fixed window of Unit
	// unless tollgate_algorithm says otherwise. Nil when Unlimited or
	// when RequestsPerUnit is zero (every request is over the limit).
	Policy limit.Policy
	// ShadowMode, QuotaMode and DetailedMetric are the descriptor's flags.
	ShadowMode, QuotaMode, DetailedMetric bool
	// File and Line are where the descriptor is configured.
	File string
	Line int

	derived
}

// derived are a Limit's figures that every decision repeats, computed
// once when the limit is loaded (prepare), so that a decision formats
// none of them.
type derived struct {
	prepared bool
	// keyTag is the policy's algorithm and window, part of the Store
	// key of a limit of tollgate's algorithms (counterKey); not its
	// figures, so that an edited limit keeps its state.
	keyTag string
	// name is the draft-10 item name (sfName) and policyItem its
	// RateLimit-Policy item: name;q=N;w=S.
	name, policyItem string
	// current is the response's current_limit, shared by every response:
	// read only.
	current *rlsv3.RateLimitResponse_RateLimit
}

// prepare computes l's derived figures. A Limit is immutable once
// prepared.
func (l *Limit) prepare() {
	d := derived{prepared: true, name: sfName(l), current: l.proto()}
	window := unitLength(l.Unit)
	if l.Policy != nil {
		window = l.Policy.Quota().Window
		d.keyTag = l.Policy.Algorithm().String() + "/" + strconv.FormatInt(int64(window), 10)
	}
	d.policyItem = string(rules.AppendPolicyItem(nil, d.name, int64(l.RequestsPerUnit), window))
	l.derived = d
}

// figures returns l's derived figures, computing them for a Limit that
// was not loaded by Build (a test's).
func (l *Limit) figures() *derived {
	if !l.derived.prepared {
		c := *l
		c.prepare()
		return &c.derived
	}
	return &l.derived
}

// proto returns the limit as the response's current_limit.
func (l *Limit) proto() *rlsv3.RateLimitResponse_RateLimit {
	return &rlsv3.RateLimitResponse_RateLimit{Name: l.Name, RequestsPerUnit: l.RequestsPerUnit, Unit: l.Unit}
}

// unitLength is the length of a unit as envoyproxy/ratelimit counts it
// (utils.UnitToDivider): a month is 30 days and a year 365. Zero for
// UNKNOWN or an unknown value.
func unitLength(u rlsv3.RateLimitResponse_RateLimit_Unit) time.Duration {
	switch u {
	case rlsv3.RateLimitResponse_RateLimit_SECOND:
		return time.Second
	case rlsv3.RateLimitResponse_RateLimit_MINUTE:
		return time.Minute
	case rlsv3.RateLimitResponse_RateLimit_HOUR:
		return time.Hour
	case rlsv3.RateLimitResponse_RateLimit_DAY:
		return 24 * time.Hour
	case rlsv3.RateLimitResponse_RateLimit_WEEK:
		return 7 * 24 * time.Hour
	case rlsv3.RateLimitResponse_RateLimit_MONTH:
		return 30 * 24 * time.Hour
	case rlsv3.RateLimitResponse_RateLimit_YEAR:
		return 365 * 24 * time.Hour
	}
	return 0
}

// parseUnit returns the unit named s, in any case, as
// envoyproxy/ratelimit accepts it: second, minute, hour, day, week,
// month, year.
func parseUnit(s string) (rlsv3.RateLimitResponse_RateLimit_Unit, bool) {
	v, ok := rlsv3.RateLimitResponse_RateLimit_Unit_value[strings.ToUpper(s)]
	if !ok || v == int32(rlsv3.RateLimitResponse_RateLimit_UNKNOWN) {
		return 0, false
	}
	return rlsv3.RateLimitResponse_RateLimit_Unit(v), true
}

// policyFor is the tollgate policy for requests per unit under alg:
//
//   - fixed_window (the default): Limit per window of the unit, aligned
//     to the epoch as envoyproxy/ratelimit's counters are;
//   - sliding_window, sliding_log: Limit per sliding window of the unit;
//   - token_bucket: refills requests per unit, a burst of as many;
//   - leaky_bucket: leaks requests per unit, policing (a gRPC answer
//     cannot delay), a burst of requests per unit less the one served.
func policyFor(alg limit.Algorithm, rpu uint32, unit time.Duration) (limit.Policy, error) {
	n := int64(rpu)
	var p limit.Policy
	switch alg {
	case limit.AlgFixedWindow:
		p = limit.FixedWindow{Limit: n, Window: unit}
	case limit.AlgSlidingWindow:
		p = limit.SlidingWindow{Limit: n, Window: unit}
	case limit.AlgSlidingLog:
		p = limit.SlidingLog{Limit: n, Window: unit}
	case limit.AlgTokenBucket:
		p = limit.TokenBucket{Rate: limit.Per(n, unit), Burst: n}
	case limit.AlgLeakyBucket:
		p = limit.LeakyBucket{Rate: limit.Per(n, unit), Burst: n - 1, Mode: limit.Police}
	default:
		return nil, fmt.Errorf("%w: %v", limit.ErrUnknownAlgorithm, alg)
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return p, nil
}
