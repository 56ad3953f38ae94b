package rules

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"strconv"
	"sync"
	"text/template"
	"time"

	"github.com/tollgate-dev/tollgate/internal/logthrottle"
	"github.com/tollgate-dev/tollgate/internal/redact"
	"github.com/tollgate-dev/tollgate/limit"
)

// Engine is a compiled, immutable rule set over a store. It is safe for
// concurrent use; build a new Engine to change rules (counters live in the
// store, so an unchanged rule keeps its counts).
type Engine struct {
	store     limit.Store
	groups    []storeGroup // nil when every rule is charged on store
	enforced  []*compiledRule
	shadow    []*compiledRule
	ip        ipResolver
	maxKeyLen int
	keys      *keyCache

	styleDraft10, styleDraft6, styleLegacy bool
	resetEpoch                             bool

	status, errorStatus int
	problemType, title  string
	detail              string
	// The problem+json body's fixed parts (compileProblem): its opening
	// up to the detail member for the refusal and the store-error
	// status, and the detail member's value when the configuration fixes
	// it.
	problemRefused, problemErrored string
	problemDetail                  string
	bodyTmpl                       *template.Template
	contentType                    string

	observer  Observer
	logger    *logthrottle.Logger // store errors, rate-limited
	shadowLog *slog.Logger
	now       func() time.Time

	batches sync.Pool // *[]limit.Request
}

type compiledRule struct {
	name      string
	match     matcher
	key       []keyPart
	anonymous bool
	policies  []*compiledPolicy // nil for a tiered rule
	tiers     *compiledTiers
	cost      compiledCost
	shadow    bool
	headers   bool // shown in headers
	maxDelay  time.Duration
	index     int  // position in Config.Rules
	tier      tier // consistency tier
	group     int  // index in Engine.groups
	// failClosed: the rule's failure mode (Config.OnErrorOf) is closed.
	failClosed bool
}

type compiledTiers struct {
	identity []keyPart // nil: the rule's key value
	members  map[string]*compiledPlan
	fallback *compiledPlan
	all      []*compiledPolicy // every plan's, plans in name order
}

type compiledPlan struct {
	name     string
	policies []*compiledPolicy
}

type compiledCost struct {
	fallback int64
	by       []compiledCostBy
}

type compiledCostBy struct {
	match matcher
	cost  int64
}

// ErrStore wraps a store failure returned by Decide.
var ErrStore = errors.New("rate-limit store failed")

// New validates cfg and compiles it into an Engine that charges store. It
// reports every problem at once (see Config.Validate). The Engine keeps no
// reference to cfg's slices or maps.
func New(cfg Config, store limit.Store) (*Engine, error) {
	if store == nil {
		return nil, errors.New("rules: New: nil store")
	}
	e, ps := compile(&cfg)
	if len(ps) > 0 {
		return nil, errors.Join(ps...)
	}
	e.store = store
	if cfg.Stores != nil {
		if err := e.bindStores(&cfg); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// Validate reports every problem with c at once (errors.Join of
// *FieldError, each matching ErrInvalidConfig and starting with the path of
// its field, "rules[2].policies[0].rate: ..."), so a YAML layer can map it
// to file:line. It reads no files (see Tiers.FileMembers).
func (c *Config) Validate() error {
	_, ps := compile(c)
	return errors.Join(ps...)
}

func compile(c *Config) (*Engine, problems) {
	var ps problems
	e := &Engine{
		maxKeyLen: 128,
		observer:  c.Observer,
		shadowLog: c.Logger,
		now:       c.Now,
	}
	e.batches.New = func() any { s := make([]limit.Request, 0, 8); return &s }
	if e.now == nil {
		e.now = time.Now
	}
	if c.MaxKeyLength < 0 {
		ps.add("max_key_length", "%d must not be negative", c.MaxKeyLength)
	} else if c.MaxKeyLength > 0 {
		e.maxKeyLen = c.MaxKeyLength
	}
	keyCache := c.KeyCache
	if keyCache == 0 {
		keyCache = 65536
	}
	e.keys = newKeyCache(keyCache)
	maxDelay := 30 * time.Second
	if c.MaxDelay < 0 {
		ps.add("max_delay", "%v must not be negative", c.MaxDelay)
	} else if c.MaxDelay > 0 {
		maxDelay = c.MaxDelay
	}
	if c.Logger != nil {
		e.logger = logthrottle.New(c.Logger, logthrottle.Config{})
	}
	checkOnError(c.OnError, "on_error", &ps)
	if c.OnStoreError != "" {
		if now, ok := oldOnError[c.OnStoreError]; ok {
			ps.add("on_store_error", "the old spelling of on_error: write on_error: %s", now)
		} else {
			ps.add("on_store_error", "the old spelling of on_error: write on_error: open, closed or local")
		}
	}
	e.ip = compileClientIP(c.ClientIP, &ps)
	e.compileHeaders(c.Headers, &ps)
	e.compileRefusal(c.Refusal, &ps)

	seen := map[string]bool{}
	for i := range c.Rules {
		r := &c.Rules[i]
		where := fmt.Sprintf("rules[%d]", i)
		if r.Name != "" && seen[r.Name] {
			ps.add(where+".name", "duplicate rule name %q", r.Name)
		}
		seen[r.Name] = true
		cr := e.compileRule(r, where, maxDelay, &ps)
		cr.index = i
		cr.failClosed = c.OnErrorOf(r) == OnErrorClosed
		if cr.shadow {
			e.shadow = append(e.shadow, cr)
		} else {
			e.enforced = append(e.enforced, cr)
		}
	}
	return e, ps
}

const nameRule = "want 1-64 letters, digits, '-', '_' or '.'"

func (e *Engine) compileRule(r *Rule, where string, maxDelay time.Duration, ps *problems) *compiledRule {
	if !validName(r.Name) {
		ps.add(where+".name", "%q: %s", r.Name, nameRule)
	}
	cr := &compiledRule{
		name:      r.Name,
		anonymous: r.Anonymous,
		shadow:    r.Shadow,
		headers:   !r.Shadow || r.ShadowHeaders,
		maxDelay:  maxDelay,
	}
	if r.ShadowHeaders && !r.Shadow {
		ps.add(where+".shadow_headers", "set but the rule is not shadow")
	}
	if r.MaxDelay < 0 {
		ps.add(where+".max_delay", "%v must not be negative", r.MaxDelay)
	} else if r.MaxDelay > 0 {
		cr.maxDelay = r.MaxDelay
	}
	cr.tier = compileTier(r, where, ps)
	cr.match = compileMatch(r.Match, where+".match", ps)
	cr.key = compileKey(r.Key, where+".key", ps)

	switch {
	case len(r.Policies) > 0 && r.Tiers != nil:
		ps.add(where, "set policies or tiers, not both")
	case len(r.Policies) == 0 && r.Tiers == nil:
		ps.add(where, "no policies and no tiers: the rule would limit nothing")
	case r.Tiers != nil:
		cr.tiers = e.compileTiers(r.Name, r.Tiers, cr.tier, where+".tiers", ps)
	default:
		cr.policies = compilePolicies(r.Name, r.Name, "", r.Policies, cr.tier, where+".policies", ps)
	}
	for i, p := range cr.allPolicies() {
		p.index = i
	}

	switch {
	case r.Cost.Default < 0:
		ps.add(where+".cost.default", "%d must not be negative", r.Cost.Default)
	case r.Cost.Default == 0:
		cr.cost.fallback = 1
	default:
		cr.cost.fallback = r.Cost.Default
	}
	for i, b := range r.Cost.By {
		at := fmt.Sprintf("%s.cost.by[%d]", where, i)
		m := compileMatch(b.Match, at+".match", ps)
		if b.Cost <= 0 {
			ps.add(at+".cost", "%d must be positive", b.Cost)
		}
		cr.cost.by = append(cr.cost.by, compiledCostBy{match: m, cost: b.Cost})
	}
	return cr
}

// compilePolicies compiles a rule's (or a plan's) policies. Default names
// are base, base-2, base-3...; keys are namespaced by rule, plan and name.
func compilePolicies(rule, base, plan string, list []Policy, t tier, where string, ps *problems) []*compiledPolicy {
	var out []*compiledPolicy
	names := map[string]bool{}
	for i, p := range list {
		at := fmt.Sprintf("%s[%d]", where, i)
		name := p.Name
		if name == "" {
			name = base
			if i > 0 {
				name += "-" + strconv.Itoa(i+1)
			}
		}
		if !validName(name) {
			ps.add(at+".name", "%q: %s", name, nameRule)
		}
		if names[name] {
			ps.add(at+".name", "duplicate policy name %q", name)
		}
		names[name] = true
		lp, field, err := p.toLimit()
		if err == nil {
			lp, field, err = t.tierPolicy(lp)
		}
		if err != nil {
			if field != "" {
				at += "." + field
			}
			ps.add(at, "%w", err)
			continue
		}
		ns := rule
		if plan != "" {
			ns += keySep + plan
		}
		out = append(out, compilePolicy(ns, name, lp))
	}
	return out
}

func (e *Engine) compileTiers(rule string, t *Tiers, rt tier, where string, ps *problems) *compiledTiers {
	ct := &compiledTiers{members: map[string]*compiledPlan{}}
	if len(t.Identity) > 0 {
		ct.identity = compileKey(t.Identity, where+".identity", ps)
	}
	plans := map[string]*compiledPlan{}
	if len(t.Plans) == 0 {
		ps.add(where+".plans", "no plans")
	}
	for _, name := range sortedKeys(t.Plans) {
		at := where + ".plans." + name
		if !validName(name) {
			ps.add(at, "plan name %q: %s", name, nameRule)
		}
		if len(t.Plans[name]) == 0 {
			ps.add(at, "no policies")
		}
		list := compilePolicies(rule, rule+"-"+name, name, t.Plans[name], rt, at, ps)
		plans[name] = &compiledPlan{name: name, policies: list}
		ct.all = append(ct.all, list...)
	}
	if t.Default == "" {
		ps.add(where+".default", "no default plan for unknown identities")
	} else if ct.fallback = plans[t.Default]; ct.fallback == nil {
		ps.add(where+".default", "unknown plan %q", t.Default)
	}
	members := maps.Clone(t.FileMembers)
	if members == nil {
		members = map[string]string{}
	}
	for k, v := range t.Members {
		members[k] = v
	}
	for _, id := range sortedKeys(members) {
		plan := plans[members[id]]
		if plan == nil {
			// Name the plan, never the identity: it may be a secret.
			ps.add(where+".members", "unknown plan %q", members[id])
			continue
		}
		// Identities are looked up as keys are built: long or unusual
		// ones by their hash.
		ct.members[string(e.appendClientValue(nil, id))] = plan
	}
	return ct
}

// decision is the state of one Decide call.
type decision struct {
	e                  *Engine
	req                Request
	method, host, path string
	ip                 netip.Addr
	ipDone             bool
}

func (d *decision) clientIP() netip.Addr {
	if !d.ipDone {
		d.ip, d.ipDone = d.e.ip.clientAddr(d.req), true
	}
	return d.ip
}

// batch collects the limit.Requests of one group (enforced or shadow)
// without allocating while it holds only one.
type batch struct {
	first limit.Request
	n     int
	more  *[]limit.Request
}

func (b *batch) add(e *Engine, r limit.Request) {
	switch b.n {
	case 0:
		b.first = r
	case 1:
		b.more = e.batches.Get().(*[]limit.Request)
		*b.more = append((*b.more)[:0], b.first, r)
	default:
		*b.more = append(*b.more, r)
	}
	b.n++
}

// apply charges the batch (of at least one request), whose first request
// is res.at(from), on the engine's store in one call, or, when rules have
// stores of their own, store group by store group (applyGroups).
func (b *batch) apply(ctx context.Context, e *Engine, res *Result, from int) (limit.Decision, error) {
	if b.n == 1 {
		st := e.store
		if e.groups != nil {
			st = e.groups[res.at(from).rule.group].store
		}
		d, err := st.Apply(ctx, b.first.Key, b.first.Policy, b.first.Cost)
		if err != nil {
			err = hideKeys(err, b.first)
		}
		return d, err
	}
	var d limit.Decision
	var err error
	if e.groups == nil {
		d, err = e.store.ApplyAll(ctx, *b.more)
	} else {
		d, err = e.applyGroups(ctx, *b.more, res, from)
	}
	if err != nil {
		err = hideKeys(err, *b.more...)
	}
	clear(*b.more)
	e.batches.Put(b.more)
	b.more = nil
	return d, err
}

// Decide applies every rule matching req and returns the result. It does
// not allocate for an allowed request keyed by IP whose key was seen
// recently. The error is the store's, wrapping ErrStore; the Result is
// still usable then (Outcome Errored, refused when the failure mode of a
// matched enforced rule is closed).
func (e *Engine) Decide(ctx context.Context, req Request) (Result, error) {
	res := Result{e: e, Outcome: Allowed}
	if len(e.enforced) == 0 && len(e.shadow) == 0 {
		return res, nil
	}
	d := decision{e: e, req: req, method: req.Method(), host: HostOnly(req.Host()), path: req.Path()}
	res.path = d.path

	var b batch
	for _, r := range e.enforced {
		e.collect(&d, &res, &b, r)
	}
	res.enforced = res.n
	var err error
	if b.n > 0 {
		res.Decision, err = b.apply(ctx, e, &res, 0)
		if err != nil {
			err = fmt.Errorf("%w: %w", ErrStore, err)
			res.Outcome = Errored
			// A full store (limit.ErrFull) is refused whatever the failure
			// mode: allowing would let a store filled with limited keys
			// switch limiting off for every new client.
			res.failClosed = errors.Is(err, limit.ErrFull)
			for i := range res.enforced {
				if res.at(i).rule.failClosed {
					res.failClosed = true
					break
				}
			}
			res.Decision = limit.Decision{Allowed: !res.failClosed}
			e.logError(ctx, &res, 0, err)
		} else {
			switch {
			case !res.Decision.Allowed:
				res.Outcome = Refused
			case res.Decision.Delay > 0:
				res.Outcome = Delayed
				res.Delay = min(res.Decision.Delay, res.shapingCap())
			}
		}
		e.observe(&res, 0, res.enforced, res.Outcome, res.Decision, err)
	}

	if len(e.shadow) > 0 {
		var sb batch
		for _, r := range e.shadow {
			e.collect(&d, &res, &sb, r)
		}
		if sb.n > 0 {
			res.shadowMatched = true
			sd, serr := sb.apply(ctx, e, &res, res.enforced)
			out := ShadowAllowed
			if serr != nil {
				serr = fmt.Errorf("%w: %w", ErrStore, serr)
				out = Errored
				e.logError(ctx, &res, res.enforced, serr)
				if err == nil {
					err = serr
				}
			} else if !sd.Allowed {
				out = ShadowRefused
				if e.shadowLog != nil {
					r := res.at(res.enforced + sd.Index)
					e.shadowLog.LogAttrs(ctx, slog.LevelInfo, "rate limit: shadow refusal",
						slog.String("rule", r.rule.name), slog.String("policy", r.policy.name),
						slog.Duration("retry_after", sd.RetryAfter))
				}
			}
			res.Shadow = sd
			e.observe(&res, res.enforced, res.n, out, sd, serr)
		}
	}
	return res, err
}

// collect appends rule r's requests to b if it matches.
func (e *Engine) collect(d *decision, res *Result, b *batch, r *compiledRule) {
	if !r.match.match(d.req, d.method, d.host, d.path) {
		return
	}
	var kb [192]byte
	val, ok := d.appendKey(kb[:0], r.key)
	if !ok {
		if !r.anonymous {
			return
		}
		val = append(val[:0], anonymousValue...)
	}
	valLen := len(val)
	policies := r.policies
	plan := ""
	if r.tiers != nil {
		p := r.tiers.fallback
		id := val
		idOK := ok
		if r.tiers.identity != nil {
			id, idOK = d.appendKey(val[valLen:], r.tiers.identity)
		}
		if idOK {
			if m, found := r.tiers.members[string(id)]; found {
				p = m
			}
		}
		policies, plan = p.policies, p.name
		val = val[:valLen]
	}
	cost := r.cost.fallback
	for i := range r.cost.by {
		if r.cost.by[i].match.match(d.req, d.method, d.host, d.path) {
			cost = r.cost.by[i].cost
			break
		}
	}
	for _, p := range policies {
		var fb [256]byte
		full := append(append(fb[:0], p.keyPrefix...), val...)
		key := e.keys.intern(full)
		res.add(applied{rule: r, policy: p, plan: plan})
		b.add(e, limit.Request{Key: key, Policy: p.policy, Cost: cost})
	}
}

// observe reports the rules of res.applied[from:to], a group decided
// out, to the observer: one event per rule, with the rule's own outcome
// (ruleOutcome).
func (e *Engine) observe(res *Result, from, to int, out Outcome, dec limit.Decision, err error) {
	if e.observer == nil {
		return
	}
	for i := from; i < to; {
		a := res.at(i)
		ev := Event{Rule: a.rule.name, RuleIndex: a.rule.index, Policy: a.policy.name, PolicyIndex: a.policy.index,
			Plan: a.plan, Outcome: out, Decision: dec, Err: err}
		j := i
		for ; j < to && res.at(j).rule == a.rule; j++ {
			if j-from == dec.Index {
				ev.Decisive = true
				ev.Policy = res.at(j).policy.name
				ev.PolicyIndex = res.at(j).policy.index
			}
		}
		ev.Outcome = e.ruleOutcome(res, from, a.rule, out, dec, ev.Decisive)
		e.observer.Observe(ev)
		i = j
	}
}

// logError logs a store error (its keys hashed by batch.apply), at most
// one line every 10s plus a count of the others (package
// internal/logthrottle).
// from is the index of the batch's first applied policy: 0 for the
// enforced rules, Result.enforced for the shadow ones.
func (e *Engine) logError(ctx context.Context, res *Result, from int, err error) {
	if e.logger == nil {
		return
	}
	e.logger.Log(ctx, slog.LevelError, "rate limit: store failed",
		slog.String("rule", res.at(from).rule.name), slog.Bool("refused", from == 0 && res.failClosed),
		slog.String("error", err.Error()))
}

// keyError is a store error whose text has the store keys of its
// decision hashed (package internal/redact): a store may name the key it
// failed on, and keys carry client IPs and API keys.
type keyError struct {
	msg string
	err error
}

func (k *keyError) Error() string { return k.msg }
func (k *keyError) Unwrap() error { return k.err }

// hideKeys returns err with reqs' keys hashed in its text.
func hideKeys(err error, reqs ...limit.Request) error {
	keys := make([]string, len(reqs))
	for i, r := range reqs {
		keys[i] = r.Key
	}
	return &keyError{msg: redact.Keys(err.Error(), keys...), err: err}
}
