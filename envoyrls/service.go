package envoyrls

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync/atomic"
	"time"
	"unicode/utf8"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/rules"
)

// Config configures a Service. Every field has a documented zero-value
// default; Store is required.
type Config struct {
	// Store decides. Any tollgate store: memory, Redis (strict) or
	// eventual. Required.
	Store limit.Store
	// Headers is the response_headers_to_add style. Zero is HeadersNone,
	// envoyproxy/ratelimit's default (LIMIT_RESPONSE_HEADERS_ENABLED
	// unset).
	Headers HeaderStyle
	// LimitHeader, RemainingHeader and ResetHeader name the HeadersLegacy
	// trio. Empty means RateLimit-Limit, RateLimit-Remaining and
	// RateLimit-Reset (envoyproxy/ratelimit's LIMIT_*_HEADER defaults).
	LimitHeader, RemainingHeader, ResetHeader string
	// Charging is how descriptors are counted (charge.go).
	Charging
	// ShadowMode answers an overall OK whatever the limits say, each
	// descriptor's status still telling, and counts what would have been
	// refused (envoyproxy/ratelimit's SHADOW_MODE).
	ShadowMode bool
	// QuotaMode treats every limit as a quota_mode one: a descriptor over
	// its limit answers OK, with its current_limit and limit_remaining 0
	// and no duration_until_reset, and never makes the overall code
	// OVER_LIMIT (envoyproxy/ratelimit's QUOTA_MODE).
	QuotaMode bool
	// NearLimitRatio is the share of a limit from which hits count as
	// near_limit. Zero means 0.8 (NEAR_LIMIT_RATIO).
	NearLimitRatio float64
	// MaxDescriptors bounds the descriptors in one request. Zero means 256.
	MaxDescriptors int
	// MaxEntries bounds the entries in one descriptor. Zero means 64.
	MaxEntries int
	// MaxBytes bounds the bytes of the domain and of each entry's key;
	// an entry's value longer than MaxBytes (a request header a client
	// chose, say) is matched as it is and counted under its digest
	// (boundedValue), so that it neither fails the call (which Envoy's
	// failure_mode_deny=false would let through, every other descriptor
	// of the request with it) nor makes a key of its size. Zero means 8192.
	MaxBytes int
	// MaxHitsAddend bounds hits_addend, per request and per descriptor.
	// Zero means 4294967295, the largest request-level hits_addend.
	MaxHitsAddend uint64
	// Metrics counts decisions; nil counts nothing.
	Metrics *Metrics
	// Now is the clock for the legacy Reset header when a decision has
	// none. Nil means time.Now.
	Now func() time.Time
}

// HeaderStyle chooses the response_headers_to_add.
type HeaderStyle uint8

// The header styles.
const (
	// HeadersNone adds none (envoyproxy/ratelimit's default).
	HeadersNone HeaderStyle = iota
	// HeadersLegacy adds envoyproxy/ratelimit's RateLimit-Limit,
	// RateLimit-Remaining and RateLimit-Reset
	// (LIMIT_RESPONSE_HEADERS_ENABLED=true), of the descriptor it picks:
	// the last one over its limit, else the first with the least
	// remaining.
	HeadersLegacy
	// HeadersDraft10 adds RateLimit-Policy and RateLimit
	// (draft-ietf-httpapi-ratelimit-headers-10), one item per limited
	// descriptor: tollgate's, opt-in.
	HeadersDraft10
)

// ParseHeaderStyle returns the style named none, legacy or draft10 (""
// is none).
func ParseHeaderStyle(s string) (HeaderStyle, error) {
	switch s {
	case "none", "":
		return HeadersNone, nil
	case "draft10":
		return HeadersDraft10, nil
	case "legacy":
		return HeadersLegacy, nil
	}
	return 0, fmt.Errorf("unknown header style %q (want none, legacy or draft10)", s)
}

// ErrNoStore reports a Config without a Store.
var ErrNoStore = errors.New("envoyrls: no store")

// Validate reports a missing store or a bound out of range.
func (c Config) Validate() error {
	var errs []error
	if c.Store == nil {
		errs = append(errs, ErrNoStore)
	}
	if c.NearLimitRatio < 0 || c.NearLimitRatio > 1 {
		errs = append(errs, fmt.Errorf("envoyrls: near limit ratio %v is not within [0, 1]", c.NearLimitRatio))
	}
	if c.MaxDescriptors < 0 || c.MaxEntries < 0 || c.MaxBytes < 0 {
		errs = append(errs, errors.New("envoyrls: negative bound"))
	}
	if c.Headers > HeadersDraft10 {
		errs = append(errs, fmt.Errorf("envoyrls: unknown header style %d", c.Headers))
	}
	if err := c.Charging.validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Service answers envoy.service.ratelimit.v3.RateLimitService from the
// current Limits. It is safe for concurrent use; SetLimits swaps the
// configuration atomically.
type Service struct {
	rlsv3.UnimplementedRateLimitServiceServer
	cfg    Config
	limits atomic.Pointer[Limits]
	health healthState
	ch     charging
}

// New returns a Service deciding with cfg.Store. It answers with every
// descriptor unmatched (OK) until SetLimits.
func New(cfg Config) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.NearLimitRatio == 0 {
		cfg.NearLimitRatio = 0.8
	}
	if cfg.MaxDescriptors == 0 {
		cfg.MaxDescriptors = 256
	}
	if cfg.MaxEntries == 0 {
		cfg.MaxEntries = 64
	}
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = 8192
	}
	if cfg.MaxHitsAddend == 0 {
		cfg.MaxHitsAddend = math.MaxUint32
	}
	if cfg.LimitHeader == "" {
		cfg.LimitHeader = "RateLimit-Limit"
	}
	if cfg.RemainingHeader == "" {
		cfg.RemainingHeader = "RateLimit-Remaining"
	}
	if cfg.ResetHeader == "" {
		cfg.ResetHeader = "RateLimit-Reset"
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Service{cfg: cfg}
	s.setupCharging()
	s.limits.Store(&Limits{domains: map[string]*node{}})
	return s, nil
}

// SetLimits makes l the configuration answered from.
func (s *Service) SetLimits(l *Limits) { s.limits.Store(l) }

// Limits returns the configuration answered from.
func (s *Service) Limits() *Limits { return s.limits.Load() }

// ErrInvalidRequest reports a request refused before any counter moved.
var ErrInvalidRequest = errors.New("invalid rate limit request")

// check reports what is wrong with req, before anything is counted. A
// limit override's unit is checked only in a known domain: elsewhere the
// request is answered a bare OK, as envoyproxy/ratelimit answers it.
func (s *Service) check(req *rlsv3.RateLimitRequest, known bool) error {
	c := &s.cfg
	if req.GetDomain() == "" {
		return fmt.Errorf("%w: rate limit domain must not be empty", ErrInvalidRequest)
	}
	if len(req.GetDomain()) > c.MaxBytes || !utf8.ValidString(req.GetDomain()) {
		return fmt.Errorf("%w: domain is longer than %d bytes or not UTF-8", ErrInvalidRequest, c.MaxBytes)
	}
	if len(req.GetDescriptors()) == 0 {
		return fmt.Errorf("%w: rate limit descriptor list must not be empty", ErrInvalidRequest)
	}
	if n := len(req.GetDescriptors()); n > c.MaxDescriptors {
		return fmt.Errorf("%w: %d descriptors, more than %d", ErrInvalidRequest, n, c.MaxDescriptors)
	}
	if uint64(req.GetHitsAddend()) > c.MaxHitsAddend {
		return fmt.Errorf("%w: hits_addend %d exceeds %d", ErrInvalidRequest, req.GetHitsAddend(), c.MaxHitsAddend)
	}
	for i, d := range req.GetDescriptors() {
		if n := len(d.GetEntries()); n > c.MaxEntries {
			return fmt.Errorf("%w: descriptor %d has %d entries, more than %d", ErrInvalidRequest, i, n, c.MaxEntries)
		}
		for j, e := range d.GetEntries() {
			if len(e.GetKey()) > c.MaxBytes {
				return fmt.Errorf("%w: descriptor %d entry %d: key longer than %d bytes", ErrInvalidRequest, i, j, c.MaxBytes)
			}
			if !utf8.ValidString(e.GetKey()) || !utf8.ValidString(e.GetValue()) {
				return fmt.Errorf("%w: descriptor %d entry %d: key or value is not UTF-8", ErrInvalidRequest, i, j)
			}
		}
		if h := d.GetHitsAddend(); h != nil && h.GetValue() > c.MaxHitsAddend {
			return fmt.Errorf("%w: descriptor %d: hits_addend %d exceeds %d", ErrInvalidRequest, i, h.GetValue(), c.MaxHitsAddend)
		}
		if o := d.GetLimit(); o != nil && known && unitLength(rlsv3.RateLimitResponse_RateLimit_Unit(o.GetUnit())) == 0 {
			return fmt.Errorf("%w: descriptor %d: limit override has no valid unit", ErrInvalidRequest, i)
		}
	}
	return nil
}

// hits is the cost of descriptor d: its own hits_addend when set (zero
// only looks), else the request's, where zero means one.
func hits(req *rlsv3.RateLimitRequest, d *rlv3.RateLimitDescriptor) int64 {
	if h := d.GetHitsAddend(); h != nil {
		return int64(h.GetValue())
	}
	return int64(max(1, req.GetHitsAddend()))
}

// item is one descriptor being decided.
type item struct {
	limit    *Limit
	key      string
	cost     int64
	detailed string // the metric label, when detailed
	d        limit.Decision
	decided  bool
}

// ShouldRateLimit decides a request: every descriptor is matched, the
// matched limits charged, and the answer OVER_LIMIT when any limit not in
// shadow or quota mode is over (or every quota-mode one is).
func (s *Service) ShouldRateLimit(ctx context.Context, req *rlsv3.RateLimitRequest) (*rlsv3.RateLimitResponse, error) {
	ls := s.limits.Load()
	known := ls.domains[req.GetDomain()] != nil
	if err := s.check(req, known); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	descs := req.GetDescriptors()
	var stack [4]item
	items := stack[:0]
	if len(descs) > len(stack) {
		items = make([]item, 0, len(descs))
	}
	items = items[:len(descs)]
	replaced := map[string]bool(nil)
	now := s.cfg.Now() // the counters' window
	for i, d := range descs {
		it := &items[i]
		it.cost = hits(req, d)
		if o := d.GetLimit(); o != nil {
			// envoyproxy/ratelimit applies an override only in a domain
			// it knows: elsewhere the descriptor is unmatched.
			if known {
				it.limit = overrideLimit(req.GetDomain(), o)
			}
		} else {
			m := ls.Match(req.GetDomain(), d.GetEntries())
			it.limit = m.Limit
			if m.Limit != nil && m.Detailed && s.cfg.Metrics != nil {
				it.detailed = detailedPath(d.GetEntries(), m.Shared, s.cfg.MaxBytes)
			}
			if m.Limit != nil {
				it.key = s.keyOf(req.GetDomain(), d.GetEntries(), m.Shared, m.Limit, now)
			}
		}
		if it.limit != nil && it.key == "" {
			it.key = s.keyOf(req.GetDomain(), d.GetEntries(), nil, it.limit, now)
		}
		if it.limit != nil {
			for _, r := range it.limit.Replaces {
				if replaced == nil {
					replaced = make(map[string]bool)
				}
				replaced[r] = true
			}
		}
	}
	for i := range items {
		// An unlimited limit stays unlimited even when named by a
		// replaces: envoyproxy/ratelimit sets it aside before replacing.
		if l := items[i].limit; l != nil && !l.Unlimited && l.Name != "" && replaced[l.Name] {
			items[i].limit = nil
		}
	}
	if err := s.charge(ctx, items, now); err != nil {
		return nil, err
	}
	return s.respond(req, items), nil
}

// decide charges the items with a policy.
func (s *Service) decide(ctx context.Context, items []item) error {
	var (
		reqStack [4]limit.Request
		idxStack [4]int
		outStack [4]limit.Decision
	)
	reqs, idx := reqStack[:0], idxStack[:0]
	for i := range items {
		if l := items[i].limit; l != nil && l.Policy != nil && !l.counted() {
			reqs = append(reqs, limit.Request{Key: items[i].key, Policy: l.Policy, Cost: items[i].cost})
			idx = append(idx, i)
		}
	}
	if len(reqs) == 0 {
		return nil
	}
	out := outStack[:0]
	if len(reqs) > len(outStack) {
		out = make([]limit.Decision, len(reqs))
	}
	out = out[:len(reqs)]
	if !s.cfg.StopIncrementWhenOverLimit {
		if err := s.applyEach(ctx, reqs, out); err != nil {
			return err
		}
		for j, i := range idx {
			items[i].d, items[i].decided = out[j], true
		}
		return nil
	}
	d, err := s.cfg.Store.ApplyAll(ctx, reqs)
	if err != nil {
		return err
	}
	// Then every descriptor's own state, by a peek (cost 0), so that each
	// reports its own remaining.
	for j := range reqs {
		reqs[j].Cost = 0
	}
	if err := s.applyEach(ctx, reqs, out); err != nil {
		return err
	}
	for j, i := range idx {
		pd := out[j]
		if d.Allowed {
			pd.Allowed = true
		} else {
			// Refused, nothing charged: each descriptor reports whether
			// it alone would fit.
			pd.Allowed = pd.Remaining >= items[i].cost && d.Index != j
		}
		items[i].d, items[i].decided = pd, true
	}
	return nil
}

// applyEach decides each of reqs on its own into out: in one round trip
// when the store can (limit.EachApplier, the Redis store pipelining
// them), else one Apply after another.
func (s *Service) applyEach(ctx context.Context, reqs []limit.Request, out []limit.Decision) error {
	if ea, ok := s.cfg.Store.(limit.EachApplier); ok && len(reqs) > 1 {
		return ea.ApplyEach(ctx, reqs, out)
	}
	for j, r := range reqs {
		d, err := s.cfg.Store.Apply(ctx, r.Key, r.Policy, r.Cost)
		if err != nil {
			return err
		}
		out[j] = d
	}
	return nil
}

// respond builds the response and counts the metrics, as
// envoyproxy/ratelimit's shouldRateLimitWorker does: a descriptor over
// its limit makes the overall code OVER_LIMIT unless it is in shadow
// mode (its status OK) or quota mode (its status OK, without
// duration_until_reset, the overall code untouched); ShadowMode turns an
// overall OVER_LIMIT into OK, leaving the statuses.
func (s *Service) respond(req *rlsv3.RateLimitRequest, items []item) *rlsv3.RateLimitResponse {
	resp, sts, durs := newResponse(len(items))
	over := false
	now := s.cfg.Now()
	var hdr headerBuilder
	for i := range items {
		it := &items[i]
		st := &sts[i]
		st.Code = rlsv3.RateLimitResponse_OK
		resp.Statuses[i] = st
		l := it.limit
		switch {
		case l == nil:
			continue
		case l.Unlimited:
			st.LimitRemaining = math.MaxUint32
			continue
		}
		st.CurrentLimit = l.figures().current
		var allowed bool
		var remaining int64
		var reset time.Duration
		if it.decided {
			allowed, remaining, reset = it.d.Allowed, it.d.Remaining, it.d.ResetAfter
		} else { // requests_per_unit: 0 refuses everything
			allowed = it.cost == 0
		}
		if _, fixed := l.Policy.(limit.FixedWindow); fixed || l.Policy == nil {
			// envoyproxy/ratelimit's CalculateReset: whole seconds to
			// the end of the unit's window, aligned to the epoch.
			reset = untilUnitEnd(now, l.Unit)
		} else {
			reset = time.Duration(rules.CeilSeconds(reset)) * time.Second
		}
		s.cfg.Metrics.count(l, it.detailed, it.cost, allowed, remaining, s.cfg.NearLimitRatio)
		if !allowed {
			remaining = 0
		}
		st.LimitRemaining = uint32(min(max(remaining, 0), math.MaxUint32))
		durs[i].Seconds = int64(reset / time.Second)
		st.DurationUntilReset = &durs[i]
		overHere := !allowed && !l.ShadowMode
		hdr.add(l, st, reset, overHere && !(s.cfg.QuotaMode || l.QuotaMode))
		if !overHere {
			continue
		}
		if s.cfg.QuotaMode || l.QuotaMode {
			// Quota mode: reported, never refused.
			st.DurationUntilReset = nil
			continue
		}
		st.Code = rlsv3.RateLimitResponse_OVER_LIMIT
		over = true
	}
	resp.OverallCode = rlsv3.RateLimitResponse_OK
	resp.ResponseHeadersToAdd = hdr.headers(&s.cfg)
	if over {
		resp.OverallCode = rlsv3.RateLimitResponse_OVER_LIMIT
		if s.cfg.ShadowMode {
			resp.OverallCode = rlsv3.RateLimitResponse_OK
			s.cfg.Metrics.globalShadow()
		}
	}
	return resp
}

// responseBlock is a response of up to four descriptors in one
// allocation: its statuses, their reset durations, and the slice of
// pointers the response holds.
type responseBlock struct {
	resp rlsv3.RateLimitResponse
	sts  [4]rlsv3.RateLimitResponse_DescriptorStatus
	durs [4]durationpb.Duration
	ptrs [4]*rlsv3.RateLimitResponse_DescriptorStatus
}

// newResponse returns a response with n statuses to fill (their pointers
// in resp.Statuses still nil), and the statuses and durations to point
// them at.
func newResponse(n int) (*rlsv3.RateLimitResponse, []rlsv3.RateLimitResponse_DescriptorStatus, []durationpb.Duration) {
	if n <= 4 {
		b := new(responseBlock)
		b.resp.Statuses = b.ptrs[:n]
		return &b.resp, b.sts[:n], b.durs[:n]
	}
	resp := &rlsv3.RateLimitResponse{Statuses: make([]*rlsv3.RateLimitResponse_DescriptorStatus, n)}
	return resp, make([]rlsv3.RateLimitResponse_DescriptorStatus, n), make([]durationpb.Duration, n)
}

// untilUnitEnd is envoyproxy/ratelimit's CalculateReset: the whole
// seconds from now (in seconds) to the end of the unit's current
// window, aligned to the epoch: from 1 to the unit's length.
func untilUnitEnd(now time.Time, u rlsv3.RateLimitResponse_RateLimit_Unit) time.Duration {
	w := int64(unitLength(u) / time.Second)
	if w == 0 {
		return 0
	}
	return time.Duration(w-now.Unix()%w) * time.Second
}

// overrideLimit is the limit a descriptor carries itself (the route's
// limit override) in a configured domain: a fixed window, never
// shadowed, as envoyproxy/ratelimit applies it. Its metric labels are
// the domain and the path "_override".
func overrideLimit(domain string, o *rlv3.RateLimitDescriptor_RateLimitOverride) *Limit {
	unit := rlsv3.RateLimitResponse_RateLimit_Unit(o.GetUnit())
	l := &Limit{Domain: domain, Path: "_override", RequestsPerUnit: o.GetRequestsPerUnit(), Unit: unit}
	if l.RequestsPerUnit > 0 {
		l.Policy = limit.FixedWindow{Limit: int64(l.RequestsPerUnit), Window: unitLength(unit)}
	}
	l.prepare()
	return l
}

// counterKey is the store key of a descriptor under l: a hash of the
// domain, every entry (a shared level's pattern in place of its value)
// and the policy, so that a reload changing a limit's algorithm or
// window starts afresh, and raw values never reach the store's keys.
// The hashed text is built on the stack up to 512 bytes: the key string
// is its one allocation.
func counterKey(domain string, entries []*rlv3.RateLimitDescriptor_Entry, shared []string, l *Limit) string {
	var stack [512]byte
	b := stack[:0]
	field := func(mark byte, s string) {
		n := len(s)
		if mark != 0 {
			n++
		}
		b = append(strconv.AppendInt(b, int64(n), 10), ':')
		if mark != 0 {
			b = append(b, mark)
		}
		b = append(b, s...)
	}
	field(0, domain)
	for i, e := range entries {
		field(0, e.GetKey())
		if i < len(shared) && shared[i] != "" {
			field('*', shared[i])
		} else {
			field('=', e.GetValue())
		}
	}
	if l.Policy != nil {
		field(0, l.figures().keyTag)
	}
	sum := sha256.Sum256(b)
	var key [4 + 32]byte
	copy(key[:], "rls:")
	hex.Encode(key[4:], sum[:16])
	return string(key[:])
}

// detailedPath is the descriptor's path with its values, as
// detailed_metric names the stat: "key1_value1.subkey1_x", a value over
// maxValue bytes by its digest (boundedValue).
func detailedPath(entries []*rlv3.RateLimitDescriptor_Entry, shared []string, maxValue int) string {
	var b []byte
	for i, e := range entries {
		if i > 0 {
			b = append(b, '.')
		}
		b = append(b, e.GetKey()...)
		v := boundedValue(e.GetValue(), maxValue)
		if i < len(shared) && shared[i] != "" {
			v = shared[i]
		}
		if v != "" {
			b = append(b, '_')
			b = append(b, v...)
		}
	}
	return string(b)
}
