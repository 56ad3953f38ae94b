package config

import (
	"crypto/tls"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/tollgate-dev/tollgate/limit"
)

var ruleNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// validate records every impossible value in c, which has its defaults.
func (c *Config) validate(ps *problems) {
	checkAddr(ps, c.Listen.Pos.Of("addr"), "listen.addr", c.Listen.Addr)
	if t := c.Listen.TLS; t != nil {
		c.validateTLS(ps, t)
	}
	if c.Listen.MaxConns < 0 {
		ps.add(c.Listen.Pos.Of("max_conns"), "listen.max_conns %d must not be negative", c.Listen.MaxConns)
	}
	if c.Listen.MaxRequestBody < 0 {
		ps.add(c.Listen.Pos.Of("max_request_body"), "listen.max_request_body %d must not be negative", c.Listen.MaxRequestBody)
	}
	if c.Admin.Addr != "off" {
		checkAddr(ps, c.Admin.Pos.Of("addr"), "admin.addr", c.Admin.Addr)
		if samePort(c.Admin.Addr, c.Listen.Addr) {
			ps.add(c.Admin.Pos.Of("addr"), "admin.addr %q must not share the traffic listener's port (%q)", c.Admin.Addr, c.Listen.Addr)
		}
	}
	if c.Upstream.MaxConns < 0 {
		ps.add(c.Upstream.Pos.Of("max_conns"), "upstream.max_conns %d must not be negative", c.Upstream.MaxConns)
	}
	c.validateRoutes(ps)
	c.validateStore(ps)
	c.validateClientIP(ps)
	c.validateHeaders(ps)
	if s := c.Refusal.Status; s < 400 || s > 599 {
		ps.add(c.Refusal.Pos.Of("status"), "refusal.status %d must be a 4xx or 5xx status", s)
	}
	c.validateRules(ps)
	c.validateAccessLog(ps)
}

func checkAddr(ps *problems, p Pos, what, addr string) {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		ps.add(p, "%s %q: want host:port such as :8080 or 127.0.0.1:9090", what, addr)
		return
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		ps.add(p, "%s %q: port %q is not a number from 0 to 65535", what, addr, port)
	}
}

func samePort(a, b string) bool {
	ha, pa, err1 := net.SplitHostPort(a)
	hb, pb, err2 := net.SplitHostPort(b)
	if err1 != nil || err2 != nil || pa != pb || pa == "0" {
		return false
	}
	any := func(h string) bool { return h == "" || h == "0.0.0.0" || h == "::" }
	return ha == hb || any(ha) || any(hb)
}

func (c *Config) validateTLS(ps *problems, t *TLS) {
	ok := true
	for _, f := range []struct{ key, path string }{{"cert", t.Cert}, {"key", t.Key}} {
		if f.path == "" {
			ps.add(t.Pos, "listen.tls.%s is required", f.key)
			ok = false
			continue
		}
		if _, err := os.Stat(c.Resolve(f.path)); err != nil {
			ps.add(t.Pos.Of(f.key), "listen.tls.%s: %v", f.key, err)
			ok = false
		}
	}
	if ok {
		if _, err := tls.LoadX509KeyPair(c.Resolve(t.Cert), c.Resolve(t.Key)); err != nil {
			ps.add(t.Pos, "listen.tls: %v", err)
		}
	}
}

func (c *Config) validateRoutes(ps *problems) {
	seen := map[string]bool{}
	for i, r := range c.Routes {
		what := fmt.Sprintf("routes[%d]", i)
		if !strings.HasPrefix(r.Path, "/") {
			ps.add(r.Pos.Of("path"), "%s.path %q must start with /", what, r.Path)
		}
		if k := r.Host + " " + r.Path; seen[k] {
			ps.add(r.Pos, "%s: another route already has host %q and path %q", what, r.Host, r.Path)
		} else {
			seen[k] = true
		}
		switch {
		case r.Upstream == "":
			ps.add(r.Pos, "%s.upstream is required (an http:// URL, or demo)", what)
		case r.Upstream == "demo":
		default:
			u, err := url.Parse(r.Upstream)
			switch {
			case err != nil:
				ps.add(r.Pos.Of("upstream"), "%s.upstream: %v", what, err)
			case u.Scheme != "http" && u.Scheme != "https":
				ps.add(r.Pos.Of("upstream"), "%s.upstream %q: scheme must be http or https", what, r.Upstream)
			case u.Host == "":
				ps.add(r.Pos.Of("upstream"), "%s.upstream %q has no host", what, r.Upstream)
			case u.RawQuery != "" || u.Fragment != "":
				ps.add(r.Pos.Of("upstream"), "%s.upstream %q must not have a query or fragment", what, r.Upstream)
			}
		}
	}
}

func (c *Config) validateStore(ps *problems) {
	s := c.Store
	if s.Memory != nil && s.Redis != nil {
		ps.add(s.Pos, "store: choose one of memory or redis, not both")
	}
	if m := s.Memory; m != nil && m.MaxKeys < 0 {
		ps.add(m.Pos.Of("max_keys"), "store.memory.max_keys %d must be positive", m.MaxKeys)
	}
	if r := s.Redis; r != nil {
		u, err := url.Parse(r.URL)
		switch {
		case r.URL == "":
			ps.add(r.Pos, "store.redis.url is required")
		case err != nil:
			ps.add(r.Pos.Of("url"), "store.redis.url: %v", redactErr(err))
		case u.Scheme != "redis" && u.Scheme != "rediss":
			ps.add(r.Pos.Of("url"), "store.redis.url: scheme must be redis or rediss, got %q", u.Scheme)
		}
		if !slices.Contains([]string{"open", "closed", "local"}, r.OnError) {
			ps.add(r.Pos.Of("on_error"), "store.redis.on_error %q: want open, closed or local", r.OnError)
		}
	}
}

// redactErr keeps url.Parse errors from echoing a password.
func redactErr(err error) string {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err.Error()
	}
	return err.Error()
}

func (c *Config) validateClientIP(ps *problems) {
	ci := c.ClientIP
	for i, s := range ci.TrustedProxies {
		if _, err := ParsePrefix(s); err != nil {
			ps.add(ci.Pos.Of("trusted_proxies"), "client_ip.trusted_proxies[%d] %q is not a CIDR or IP address", i, s)
		}
	}
	if !slices.Contains([]string{"x-forwarded-for", "forwarded", "x-real-ip"}, strings.ToLower(ci.Header)) {
		ps.add(ci.Pos.Of("header"), "client_ip.header %q: want x-forwarded-for, forwarded or x-real-ip", ci.Header)
	}
	if ci.IPv6Prefix < 1 || ci.IPv6Prefix > 128 {
		ps.add(ci.Pos.Of("ipv6_prefix"), "client_ip.ipv6_prefix %d must be from 1 to 128", ci.IPv6Prefix)
	}
	if ci.IPv4Prefix < 1 || ci.IPv4Prefix > 32 {
		ps.add(ci.Pos.Of("ipv4_prefix"), "client_ip.ipv4_prefix %d must be from 1 to 32", ci.IPv4Prefix)
	}
}

// ParsePrefix reads a CIDR ("10.0.0.0/8") or a single address, which stands
// for its own /32 or /128.
func ParsePrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(strings.TrimSpace(s))
		return p.Masked(), err
	}
	a, err := netip.ParseAddr(strings.TrimSpace(s))
	if err != nil {
		return netip.Prefix{}, err
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}

func (c *Config) validateHeaders(ps *problems) {
	h := c.Headers
	for i, s := range h.Styles {
		if !slices.Contains([]string{"ietf", "draft-6", "x-ratelimit", "none"}, s) {
			ps.add(h.Pos.Of("styles"), "headers.styles[%d] %q: want ietf, draft-6, x-ratelimit or none", i, s)
		}
	}
	if slices.Contains(h.Styles, "none") && len(h.Styles) > 1 {
		ps.add(h.Pos.Of("styles"), "headers.styles: none cannot be combined with other styles")
	}
	if h.XReset != "delta" && h.XReset != "epoch" {
		ps.add(h.Pos.Of("x_reset"), "headers.x_reset %q: want delta or epoch", h.XReset)
	}
}

var keyParts = []string{"ip", "path", "method", "host", "global"}

// validKey reports a problem with a rule key expression, or "".
func validKey(k string) string {
	for part := range strings.SplitSeq(k, "+") {
		part = strings.TrimSpace(part)
		if slices.Contains(keyParts, part) {
			continue
		}
		if kind, name, ok := strings.Cut(part, ":"); ok && (kind == "header" || kind == "query") {
			if name == "" {
				return fmt.Sprintf("%q names no %s", part, kind)
			}
			continue
		}
		return fmt.Sprintf("%q: want ip, path, method, host, global, header:NAME or query:NAME, joined with +", part)
	}
	return ""
}

func (c *Config) validateRules(ps *problems) {
	names := map[string]bool{}
	for i := range c.Rules {
		r := &c.Rules[i]
		what := fmt.Sprintf("rules[%d]", i)
		switch {
		case r.Name == "":
			ps.add(r.Pos, "%s.name is required", what)
		case !ruleNameRE.MatchString(r.Name):
			ps.add(r.Pos.Of("name"), "%s.name %q: use letters, digits, '.', '-' and '_' (at most 64)", what, r.Name)
		case names[r.Name]:
			ps.add(r.Pos.Of("name"), "%s.name %q is used by another rule", what, r.Name)
		default:
			names[r.Name] = true
		}
		if r.Name != "" {
			what = fmt.Sprintf("rule %q", r.Name)
		}
		if msg := validKey(r.Key); msg != "" {
			ps.add(r.Pos.Of("key"), "%s: key %s", what, msg)
		}
		if r.OnMissingKey != "skip" && r.OnMissingKey != "anonymous" {
			ps.add(r.Pos.Of("on_missing_key"), "%s: on_missing_key %q: want skip or anonymous", what, r.OnMissingKey)
		}
		if *r.Cost < 0 {
			ps.add(r.Pos.Of("cost"), "%s: cost %d must not be negative", what, *r.Cost)
		}
		for j, k := range r.Costs {
			if k.Cost < 0 {
				ps.add(k.Pos.Of("cost"), "%s: costs[%d].cost %d must not be negative", what, j, k.Cost)
			}
			if k.Path != "" && !strings.HasPrefix(k.Path, "/") {
				ps.add(k.Pos.Of("path"), "%s: costs[%d].path %q must start with /", what, j, k.Path)
			}
			if k.Method == "" && k.Path == "" {
				ps.add(k.Pos, "%s: costs[%d] needs a method or a path", what, j)
			}
		}
		validateMatch(ps, what, r.Match)
		if r.Tiers == nil {
			if r.Policy.empty() {
				ps.add(r.Pos, "%s: needs a policy (algorithm with rate or limit/window) or tiers", what)
			} else {
				r.Policy.check(ps, what)
			}
			continue
		}
		if !r.Policy.empty() {
			ps.add(r.Tiers.Pos, "%s: give either an inline policy or tiers, not both", what)
		}
		c.validateTiers(ps, what, r.Tiers)
	}
}

func validateMatch(ps *problems, what string, m Match) {
	n := 0
	for _, k := range []struct{ key, v string }{{"path", m.Path}, {"path_exact", m.PathExact}, {"pattern", m.Pattern}} {
		if k.v == "" {
			continue
		}
		n++
		if !strings.HasPrefix(k.v, "/") {
			ps.add(m.Pos.Of(k.key), "%s: match.%s %q must start with /", what, k.key, k.v)
		}
	}
	if n > 1 {
		ps.add(m.Pos, "%s: match takes one of path, path_exact or pattern", what)
	}
	for i, meth := range m.Methods {
		if meth == "" || strings.ToUpper(meth) != meth || strings.ContainsAny(meth, " \t/:") {
			ps.add(m.Pos.Of("methods"), "%s: match.methods[%d] %q: want an upper-case method such as GET", what, i, meth)
		}
	}
}

// empty reports whether no policy parameter was written.
func (p Policy) empty() bool {
	return p.Algorithm == "" && p.Rate == "" && p.Burst == nil && p.Limit == 0 &&
		p.Window == "" && p.Mode == "" && p.Delay == 0
}

// check validates a policy's parameters against its algorithm.
func (p *Policy) check(ps *problems, what string) {
	if _, err := p.Build(); err != nil {
		ps.add(p.problemPos(err), "%s: %v", what, err)
	}
	// Parameters that the algorithm ignores would be silently dropped.
	alg := p.Algorithm
	extra := func(key string, set bool) {
		if set {
			ps.add(p.Pos.Of(key), "%s: %s does not take %s", what, alg, key)
		}
	}
	switch alg {
	case "token_bucket", "leaky_bucket":
		extra("limit", p.Limit != 0)
		extra("window", p.Window != "")
		if alg == "token_bucket" {
			extra("mode", p.Mode != "")
			extra("delay", p.Delay != 0)
		}
	case "fixed_window", "sliding_window", "sliding_log":
		extra("rate", p.Rate != "")
		extra("burst", p.Burst != nil)
		extra("mode", p.Mode != "")
		extra("delay", p.Delay != 0)
	}
}

// policyError carries the key of the parameter at fault.
type policyError struct {
	key string
	err error
}

func (e *policyError) Error() string { return e.err.Error() }
func (e *policyError) Unwrap() error { return e.err }

func (p *Policy) problemPos(err error) Pos {
	if pe, ok := err.(*policyError); ok {
		return p.Pos.Of(pe.key)
	}
	return p.Pos
}

// Build returns the limit.Policy p describes, or an error naming the
// parameter at fault.
func (p Policy) Build() (limit.Policy, error) {
	fail := func(key string, format string, args ...any) (limit.Policy, error) {
		return nil, &policyError{key: key, err: fmt.Errorf(format, args...)}
	}
	alg, err := limit.ParseAlgorithm(p.Algorithm)
	if err != nil {
		return fail("algorithm", "%v", err)
	}
	var burst int64
	if p.Burst != nil {
		burst = *p.Burst
		if burst < 0 {
			return fail("burst", "burst %d must not be negative", burst)
		}
	}
	var pol limit.Policy
	switch alg {
	case limit.AlgTokenBucket, limit.AlgLeakyBucket:
		if p.Rate == "" {
			return fail("rate", "%s needs a rate such as 100/s", alg)
		}
		rate, err := limit.ParseRate(p.Rate)
		if err != nil {
			return fail("rate", "rate: %v", err)
		}
		if alg == limit.AlgTokenBucket {
			pol = limit.TokenBucket{Rate: rate, Burst: burst}
			break
		}
		lb := limit.LeakyBucket{Rate: rate, Burst: burst, Delay: p.Delay}
		switch p.Mode {
		case "shape", "":
		case "police", "nodelay":
			lb.Mode = limit.Police
		default:
			return fail("mode", "mode %q: want shape or police", p.Mode)
		}
		pol = lb
	default:
		if p.Limit <= 0 {
			return fail("limit", "%s needs a positive limit, got %d", alg, p.Limit)
		}
		if p.Window == "" {
			return fail("window", "%s needs a window such as 1m", alg)
		}
		w, err := limit.ParsePeriod(p.Window)
		if err != nil {
			return fail("window", "window: %v", err)
		}
		switch alg {
		case limit.AlgFixedWindow:
			pol = limit.FixedWindow{Limit: p.Limit, Window: w}
		case limit.AlgSlidingWindow:
			pol = limit.SlidingWindow{Limit: p.Limit, Window: w}
		default:
			pol = limit.SlidingLog{Limit: p.Limit, Window: w}
		}
	}
	if err := pol.Validate(); err != nil {
		return nil, err
	}
	return pol, nil
}

func (c *Config) validateTiers(ps *problems, what string, t *Tiers) {
	if len(t.Plans) == 0 {
		ps.add(t.Pos, "%s: tiers.plans needs at least one plan", what)
	}
	for _, name := range slices.Sorted(maps.Keys(t.Plans)) {
		p := t.Plans[name]
		if p.Algorithm == "" {
			ps.add(p.Pos, "%s: tiers.plans.%s needs an algorithm or a rate", what, name)
			continue
		}
		p.check(ps, fmt.Sprintf("%s: plan %q", what, name))
	}
	if t.Default == "" {
		ps.add(t.Pos, "%s: tiers.default (the plan of unlisted identities) is required", what)
	} else if _, ok := t.Plans[t.Default]; !ok {
		ps.add(t.Pos.Of("default"), "%s: tiers.default %q is not one of the plans", what, t.Default)
	}
	t.assigned = make(map[string]string, len(t.Assign))
	for _, id := range slices.Sorted(maps.Keys(t.Assign)) {
		plan := t.Assign[id]
		if _, ok := t.Plans[plan]; !ok {
			ps.add(t.Pos.Of("assign"), "%s: tiers.assign: plan %q of %q is not one of the plans", what, plan, id)
		}
		t.assigned[id] = plan
	}
	if t.File == "" {
		return
	}
	path := c.Resolve(t.File)
	data, err := os.ReadFile(path)
	if err != nil {
		ps.add(t.Pos.Of("file"), "%s: tiers.file: %v", what, err)
		return
	}
	var m map[string]string
	fd := &decoder{file: path, ps: ps}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		ps.add(syntaxPos(path, err), "%s", strings.TrimPrefix(err.Error(), "yaml: "))
		return
	}
	if len(doc.Content) == 0 {
		return
	}
	root := doc.Content[0]
	before := len(ps.list)
	fd.value(root, reflect.ValueOf(&m).Elem(), "plans file")
	if len(ps.list) > before {
		return
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		id, plan := root.Content[i].Value, root.Content[i+1].Value
		at := Pos{File: path, Line: root.Content[i].Line, Col: root.Content[i].Column}
		if _, ok := t.Plans[plan]; !ok {
			ps.add(at, "plan %q of %q is not one of %s's plans", plan, id, what)
		}
		if _, dup := t.assigned[id]; dup {
			ps.add(at, "%q is also assigned in tiers.assign", id)
		}
		t.assigned[id] = plan
	}
}

func (c *Config) validateAccessLog(ps *problems) {
	a := c.AccessLog
	if a.Path == "" {
		if a.Format != "" {
			ps.add(a.Pos.Of("format"), "access_log.format is set but access_log.path is not")
		}
		return
	}
	if a.Format != "json" && a.Format != "combined" {
		ps.add(a.Pos.Of("format"), "access_log.format %q: want json or combined", a.Format)
	}
	if a.Path != "-" {
		dir := filepath.Dir(c.Resolve(a.Path))
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			ps.add(a.Pos.Of("path"), "access_log.path %q: directory %s does not exist", a.Path, dir)
		}
	}
}
