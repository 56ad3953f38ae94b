package rules

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/tollgate-dev/tollgate/limit"
)

// Scale is a live fraction of a policy's quota, in permille: what an
// adaptive controller publishes (adaptive.Factor implements it). Permille
// is read at every decision of a policy that names the controller, so it
// must be cheap and safe for concurrent use; it returns 1-1000 (values
// outside are clamped).
type Scale interface {
	Permille() int64
}

// ScaleFunc returns the Scale of the adaptive controller named name, or
// nil when there is no such controller.
type ScaleFunc func(name string) Scale

// ErrNoScales reports a policy naming an adaptive controller in an
// engine built without Config.Scales.
var ErrNoScales = errors.New("rules: a policy names an adaptive controller but Config.Scales is not set")

// scaledPolicy is an adaptive policy's link to its controller: the
// policy as configured (base) and its form at the controller's current
// factor, rebuilt when the factor changes.
type scaledPolicy struct {
	scale Scale
	ns    string // the store-key namespace compilePolicy took
	base  *compiledPolicy
	cur   atomic.Pointer[compiledPolicy]
}

// current returns p as it applies now: p itself when it is not adaptive,
// else its form at the controller's factor. Reading an unchanged factor
// does not allocate; a changed one builds the scaled policy once (a few
// small allocations per change, not per request).
func (p *compiledPolicy) current() *compiledPolicy {
	s := p.scaled
	if s == nil {
		return p
	}
	pm := min(max(s.scale.Permille(), 1), 1000)
	if c := s.cur.Load(); c != nil && c.permille == pm {
		return c
	}
	c := s.at(pm)
	s.cur.Store(c)
	return c
}

// at builds the base policy scaled to pm permille. The base policy is
// valid, and limit.Scale keeps every scale of it valid but for a bucket
// slowed past limit.MaxSpan: then the base applies (the lowest factor a
// limit can express is its floor).
func (s *scaledPolicy) at(pm int64) *compiledPolicy {
	if pm == 1000 {
		return s.base
	}
	if in, ok := s.base.policy.(inFlight); ok {
		in.max = max(in.max*pm/1000, 1)
		c := compilePolicy(s.ns, s.base.name, in)
		c.keyPrefix, c.concurrency, c.retryAfter = s.base.keyPrefix, true, s.base.retryAfter
		c.index, c.permille = s.base.index, pm
		return c
	}
	lp, err := limit.Scale(s.base.policy, pm)
	if err != nil {
		return s.base
	}
	c := compilePolicy(s.ns, s.base.name, lp)
	c.index = s.base.index
	c.permille = pm
	c.pen = s.base.pen
	return c
}

// ValidName reports whether s is usable as a rule, policy or adaptive
// controller name: 1-64 letters, digits, '-', '_' or '.'.
func ValidName(s string) bool { return validName(s) }

// bindScale makes cp follow the controller named name.
func (e *Engine) bindScale(cp *compiledPolicy, ns, name, at string, ps *problems) {
	if !validName(name) {
		ps.add(at, "%q: %s", name, nameRule)
		return
	}
	if e.scales == nil {
		// Validate without controllers: the configuration layer checks
		// the name against its adaptive section; New refuses to run.
		e.unscaled = true
		return
	}
	sc := e.scales(name)
	if sc == nil {
		ps.add(at, "unknown adaptive controller %q", name)
		return
	}
	cp.scaled = &scaledPolicy{scale: sc, ns: ns, base: cp}
}

// checkScales is New's refusal of an adaptive policy with nothing to
// scale it.
func (e *Engine) checkScales() error {
	if e.unscaled {
		return fmt.Errorf("%w", ErrNoScales)
	}
	return nil
}
