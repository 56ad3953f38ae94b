package config

import (
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/failmode"
	"github.com/tollgate-dev/tollgate/rules"
	"github.com/tollgate-dev/tollgate/store/gossip/gossipconf"
)

// Describe writes what a valid configuration will do, in words: the
// listeners, the store, the routes, each rule's match, key, tier, failure
// mode and limits, the refusal and the headers. `tollgate check` prints
// it, and the admin dashboard shows it.
func (c *Config) Describe(w io.Writer) {
	name := c.File
	if name == "" {
		name = "(embedded default)"
	}
	fmt.Fprintf(w, "%s: valid\n\n", name)
	scheme := "http"
	if c.Listen.TLS != nil {
		scheme = "https"
	}
	fmt.Fprintf(w, "traffic  %s://%s", scheme, c.Listen.Addr)
	switch {
	case c.Listen.HTTP2 == HTTP2On && c.Listen.TLS != nil:
		fmt.Fprintf(w, " (h2 and http/1.1 by ALPN, on net/http)")
	case c.Listen.HTTP2 == HTTP2On:
		fmt.Fprintf(w, " (h2c and HTTP/1.1, on net/http)")
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "admin    %s\n", c.Admin.Addr)
	switch {
	case c.Store.Redis != nil:
		fmt.Fprintf(w, "store    redis %s (timeout %v)\n", c.Store.Redis.Describe(), c.Store.Redis.Timeout)
	default:
		fmt.Fprintf(w, "store    memory (at most %d keys)\n", c.Store.Memory.MaxKeys)
	}
	if g := c.Store.Gossip; g != nil {
		fmt.Fprintf(w, "gossip   %s\n", describeGossip(g))
	}
	c.describeGeoIP(w)
	fmt.Fprintf(w, "\nroutes:\n")
	for _, r := range c.Routes {
		host := r.Host
		if host == "" {
			host = "*"
		}
		fmt.Fprintf(w, "  %s%s -> %s", host, r.Path, r.Upstream)
		if r.Upstream == "demo" {
			fmt.Fprintf(w, " (the built-in demo origin, not a service of yours)")
		}
		switch {
		case r.GRPC:
			fmt.Fprintf(w, " (gRPC, over HTTP/2)")
		case r.Protocol == ProtocolHTTP2:
			fmt.Fprintf(w, " (over HTTP/2)")
		}
		fmt.Fprintln(w)
	}
	if len(c.Rules) == 0 {
		fmt.Fprintf(w, "\nrules: none (requests are proxied without limits)\n")
		return
	}
	fmt.Fprintf(w, "\nrules (every matching rule applies; all must allow):\n")
	for _, r := range c.Rules {
		flags := ""
		if r.Shadow {
			flags = " [shadow: counted, never refused]"
		}
		key := describeKey(r)
		fmt.Fprintf(w, "  %s%s\n    match  %s\n    key    %s\n", r.Name, flags, describeMatch(r.Match), key)
		if tier := describeTier(r); tier != "" {
			fmt.Fprintf(w, "    tier   %s\n", tier)
		}
		if c.Store.Redis != nil || r.Consistency == rules.ConsistencyGossip {
			fmt.Fprintf(w, "    error  %s\n", describeOnError(&c.Config, &r))
		}
		for _, p := range r.Policies {
			fmt.Fprintf(w, "    limit  %s\n", describePolicy(p))
		}
		if t := r.Tiers; t != nil {
			fmt.Fprintf(w, "    tiers  default plan %q, %d member(s) listed", t.Default, len(t.Members))
			if t.MembersFile != "" {
				fmt.Fprintf(w, " + file %s", c.Resolve(t.MembersFile))
			}
			fmt.Fprintln(w)
			for _, plan := range slices.Sorted(maps.Keys(t.Plans)) {
				for _, p := range t.Plans[plan] {
					fmt.Fprintf(w, "      %-10s %s\n", plan, describePolicy(p))
				}
			}
		}
		if r.Count != nil {
			fmt.Fprintf(w, "    count  counts only %s, charged after the answer (a key with nothing left is refused before it is proxied)\n", r.Count.Describe())
		}
		if r.Penalty != 0 {
			fmt.Fprintf(w, "    penalty a refused key is refused for %s\n", shortDuration(r.Penalty))
		}
		if r.Cost.Default > 1 || len(r.Cost.By) > 0 {
			fmt.Fprintf(w, "    cost   %d by default, %d override(s)\n", max(r.Cost.Default, 1), len(r.Cost.By))
		}
	}
	status := c.Refusal.Status
	if status == 0 {
		status = 429
	}
	fmt.Fprintf(w, "\nrefusal  %d", status)
	if c.Refusal.Body == "" {
		fmt.Fprintf(w, " with an application/problem+json body")
	}
	fmt.Fprintln(w)
	styles := c.Headers.Styles
	if styles == nil {
		styles = []string{rules.StyleDraft10}
	}
	fmt.Fprintf(w, "headers  %s, and Retry-After on refusals\n", strings.Join(styles, ", "))
	if c.AccessLog.Path != "" {
		fmt.Fprintf(w, "log      %s (%s, %s)\n", c.AccessLog.Path, c.AccessLog.Format, c.AccessLog.describeQuery())
	}
	c.describeAdaptive(w)
}

func describeMatch(m rules.Match) string {
	var parts []string
	add := func(what string, vs []string) {
		if len(vs) > 0 {
			parts = append(parts, what+" "+strings.Join(vs, "|"))
		}
	}
	add("method", m.Methods)
	add("host", m.Hosts)
	add("path", m.Paths)
	add("prefix", m.PathPrefixes)
	add("pattern", m.Patterns)
	for _, h := range m.Headers {
		if h.Value != "" {
			parts = append(parts, "header "+h.Name+"="+h.Value)
		} else {
			parts = append(parts, "header "+h.Name)
		}
	}
	parts = describeGeoMatch(parts, m)
	if len(parts) == 0 {
		return "every request"
	}
	return strings.Join(parts, ", ")
}

func describePolicy(p rules.Policy) string {
	alg := p.Algorithm
	if alg == "" {
		alg = "token_bucket"
	}
	var b strings.Builder
	b.WriteString(alg)
	if p.Rate != "" {
		fmt.Fprintf(&b, " rate %s", p.Rate)
	}
	if p.Burst != 0 {
		fmt.Fprintf(&b, " burst %d", p.Burst)
	}
	switch {
	case alg == rules.AlgConcurrency:
		fmt.Fprintf(&b, " limit %d in flight", p.Limit)
		if p.RetryAfter != 0 {
			fmt.Fprintf(&b, " retry_after %v", p.RetryAfter)
		}
	case p.Limit != 0:
		fmt.Fprintf(&b, " limit %d per %s", p.Limit, p.Window)
	}
	if p.Mode != "" {
		fmt.Fprintf(&b, " mode %s", p.Mode)
	}
	if p.Delay != 0 {
		fmt.Fprintf(&b, " delay %d", p.Delay)
	}
	if p.Adaptive != "" {
		fmt.Fprintf(&b, " scaled by adaptive %s", p.Adaptive)
	}
	if p.Penalty != 0 {
		fmt.Fprintf(&b, ", a refused key is refused for %s", shortDuration(p.Penalty))
	}
	if p.Name != "" {
		fmt.Fprintf(&b, " (%q)", p.Name)
	}
	return b.String()
}

// describeTier says which consistency tier decides a rule, or "" for the
// store's default.
func describeTier(r rules.Rule) string {
	switch r.Consistency {
	case "", "default":
		return ""
	case "strict":
		return "strict (one atomic Redis script per decision)"
	case "eventual":
		every := r.SyncInterval
		if every == 0 {
			every = rules.DefaultSyncInterval
		}
		return "eventual (decided locally, synced with Redis every " + every.String() + ")"
	case "gossip":
		return "gossip (decided locally, counters shared with the fleet by store.gossip)"
	case "local":
		if r.Nodes > 1 {
			return "local (this gateway only, its 1/" + strconv.Itoa(r.Nodes) + " share of the limits)"
		}
		return "local (this gateway only)"
	}
	return r.Consistency
}

// describeGossip says how this gateway gossips, never showing the key
// (only where it comes from).
func describeGossip(g *gossipconf.Config) string {
	var b strings.Builder
	port := 0
	if g.BindPort != nil {
		port = *g.BindPort
	}
	fmt.Fprintf(&b, "node %q on %s, every %v", g.Name, net.JoinHostPort(g.BindAddr, strconv.Itoa(port)), g.Interval)
	if g.AdvertiseAddr != "" || g.AdvertisePort != 0 {
		fmt.Fprintf(&b, ", advertised as %s", net.JoinHostPort(g.AdvertiseAddr, strconv.Itoa(g.AdvertisePort)))
	}
	if len(g.Seeds) > 0 {
		fmt.Fprintf(&b, ", seeds %s", strings.Join(g.Seeds, ", "))
	} else {
		b.WriteString(", no seeds (a fleet of one until another gateway joins it)")
	}
	switch {
	case g.SecretKeyFile != "":
		fmt.Fprintf(&b, ", encrypted (key from file %s)", g.SecretKeyFile)
	case g.SecretKeyEnv != "":
		fmt.Fprintf(&b, ", encrypted (key from $%s)", g.SecretKeyEnv)
	case g.SecretKey != "":
		b.WriteString(", encrypted (key in the file)")
	default:
		b.WriteString(", plaintext (no secret key: trusted network only)")
	}
	return b.String()
}

// describeOnError says what rule r answers while its store fails: its
// effective failure mode, as the rule engine decides it.
func describeOnError(c *rules.Config, r *rules.Rule) string {
	mode := c.OnErrorOf(r)
	what := map[failmode.Mode]string{
		failmode.Open:   "allow",
		failmode.Closed: "refuse",
		failmode.Local:  "decide in this gateway alone",
	}[mode]
	from := "on_error"
	if r.OnError != "" {
		from = "the rule's on_error"
	}
	switch r.Consistency {
	case rules.ConsistencyEventual, rules.ConsistencyLocal:
		return "none: decided in this gateway, a Redis outage does not fail it"
	case rules.ConsistencyGossip:
		return fmt.Sprintf("%s: %s until this gateway has exchanged state with the fleet (%s)", mode, what, from)
	}
	return fmt.Sprintf("%s: %s while the store fails (%s)", mode, what, from)
}

// describeQuery says what the access log keeps of query strings.
func (a AccessLog) describeQuery() string {
	switch a.Query {
	case "drop":
		return "query strings dropped"
	case "redact":
		if len(a.Redact) == 0 {
			return "every query value redacted"
		}
		return "query values of " + strings.Join(a.Redact, ", ") + " redacted"
	}
	return "query strings kept"
}

// shortDuration is d as time.Duration writes it without its zero tails:
// "15m", "24h", "1h30m".
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
