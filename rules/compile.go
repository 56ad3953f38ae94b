package rules

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/tollgate-dev/tollgate/failmode"
	"github.com/tollgate-dev/tollgate/internal/logthrottle"
	"github.com/tollgate-dev/tollgate/limit"
)

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
		scales:    c.Scales,
		geo:       c.Geo,
	}
	e.batches.New = func() any { s := make([]limit.Request, 0, 8); return &s }
	e.decisions.New = func() any { s := make([]limit.Decision, 0, 8); return &s }
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
	checkGeo(c, &ps)
	if len(c.Except) > 0 {
		ps.add("except", "exemptions are not available in this build")
	}
	if c.OnStoreError != "" {
		if now, ok := failmode.Old(c.OnStoreError); ok {
			ps.add("on_store_error", "the old spelling of on_error: write on_error: %s", now)
		} else {
			ps.add("on_store_error", "the old spelling of on_error: write on_error: %s", failmode.Words)
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
		cr.failClosed = c.OnErrorOf(r) == failmode.Closed
		if cr.shadow {
			e.shadow = append(e.shadow, cr)
		} else {
			e.enforced = append(e.enforced, cr)
		}
	}
	// Counting rules last in each group, so that a decision's charged
	// policies come first (its batch) and its peeked ones after
	// (decideGroup).
	countingLast := func(a, b *compiledRule) int { return countRank(a) - countRank(b) }
	slices.SortStableFunc(e.enforced, countingLast)
	slices.SortStableFunc(e.shadow, countingLast)
	if e.hasChecks() {
		e.refusals = newRefusalCache()
		if c.Now != nil {
			now := c.Now
			e.mono = func() int64 { return now().UnixNano() }
		} else {
			// Not the wall clock: a step back would stretch every
			// remembered refusal by the step.
			start := time.Now()
			e.mono = func() int64 { return int64(time.Since(start)) }
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
	// Not yet built (issue 26): refused until each is.
	if len(r.Except) > 0 {
		ps.add(where+".except", "exemptions are not available in this build")
	}
	for _, m := range []Match{r.Match} {
		if len(m.Clients) > 0 {
			ps.add(where+".match", "clients matchers are not available in this build")
		}
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
		cr.tiers = e.compileTiers(r.Name, r.Tiers, cr.tier, r.Penalty, where+".tiers", ps)
	default:
		cr.policies = e.compilePolicies(r.Name, r.Name, "", r.Policies, cr.tier, r.Penalty, where+".policies", ps)
		cr.policies, cr.conc = splitConcurrency(cr.policies)
		if len(cr.conc) > 0 {
			e.conc = true
			switch {
			case r.Shadow:
				ps.add(where+".shadow", "a shadow rule cannot hold concurrency slots (it never refuses)")
			case r.Consistency != "":
				ps.add(where+".consistency", "a rule with a concurrency policy holds its slots in the engine's slot store (the store section): it takes no consistency tier")
			}
		}
	}
	for i, p := range cr.allPolicies() {
		p.index = i
	}
	if r.Penalty != 0 {
		e.checkRulePenalty(r.Penalty, cr, where+".penalty", ps)
	}
	if r.Count != nil {
		cr.count = compileCount(r, cr, where, ps)
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
// A policy's penalty is its own Penalty, else rulePenalty (which a
// concurrency policy does not take).
func (e *Engine) compilePolicies(rule, base, plan string, list []Policy, t tier, rulePenalty time.Duration, where string, ps *problems) []*compiledPolicy {
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
		if p.Algorithm == AlgConcurrency {
			if plan != "" {
				ps.add(at+".algorithm", "concurrency goes in a rule's policies, not in a plan")
				continue
			}
			if cp := compileConcurrency(p, rule, name, at, ps); cp != nil {
				compilePenalty(cp, p.Penalty, at+".penalty", ps)
				if p.Adaptive != "" {
					e.bindScale(cp, rule, p.Adaptive, at+".adaptive", ps)
				}
				out = append(out, cp)
			}
			continue
		}
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
		cp := compilePolicy(ns, name, lp)
		if p.Penalty != 0 {
			compilePenalty(cp, p.Penalty, at+".penalty", ps)
		} else if penaltyInBounds(rulePenalty) { // else checkRulePenalty says so
			compilePenalty(cp, rulePenalty, at, ps)
		}
		if p.Adaptive != "" {
			e.bindScale(cp, ns, p.Adaptive, at+".adaptive", ps)
		}
		out = append(out, cp)
	}
	return out
}

func (e *Engine) compileTiers(rule string, t *Tiers, rt tier, rulePenalty time.Duration, where string, ps *problems) *compiledTiers {
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
		list := e.compilePolicies(rule, rule+"-"+name, name, t.Plans[name], rt, rulePenalty, at, ps)
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

// splitConcurrency separates the concurrency policies from the others.
func splitConcurrency(list []*compiledPolicy) (rates, conc []*compiledPolicy) {
	for _, p := range list {
		if p.concurrency {
			conc = append(conc, p)
		} else {
			rates = append(rates, p)
		}
	}
	return rates, conc
}

// countRank orders counting rules after the others.
func countRank(r *compiledRule) int {
	if r.count != nil {
		return 1
	}
	return 0
}

// hasChecks reports whether a rule counts on the answer or a policy has
// a penalty: whether Decide may precheck.
func (e *Engine) hasChecks() bool {
	for _, list := range [][]*compiledRule{e.enforced, e.shadow} {
		for _, r := range list {
			if r.count != nil {
				return true
			}
			for _, p := range r.allPolicies() {
				if p.pen != nil {
					return true
				}
			}
		}
	}
	return false
}
