package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/tollgate-dev/tollgate/config"
	"github.com/tollgate-dev/tollgate/rules"
	"github.com/tollgate-dev/tollgate/store/eventual"
	"github.com/tollgate-dev/tollgate/store/memory"
)

var checkCommand = &command{
	Name:  "check",
	Args:  "FILE",
	Short: "validate a configuration file and print what it will do (exit 0 valid, 1 invalid; warnings, such as no routes, on stderr)",
	Flags: func(fs *flag.FlagSet) func(context.Context, []string, io.Writer, io.Writer) int {
		quiet := fs.Bool("q", false, "print nothing when the file is valid")
		return func(_ context.Context, args []string, stdout, stderr io.Writer) int {
			if len(args) != 1 {
				fmt.Fprintf(stderr, "usage: tollgate check [-q] FILE\n")
				return exitUsage
			}
			cfg, err := config.Load(args[0])
			if err != nil {
				ps := config.Problems(err)
				for _, p := range ps {
					fmt.Fprintln(stderr, p)
				}
				fmt.Fprintf(stderr, "%s: %d problem(s)\n", args[0], len(ps))
				return exitFail
			}
			// Compile the rules as serve will, so that anything the
			// validation did not catch shows here rather than at start.
			st, err := memory.New(memory.Config{MaxKeys: 1, SweepInterval: -1})
			if err == nil {
				defer st.Close()
				var rc rules.Config
				if rc, err = cfg.EngineConfig(); err == nil {
					rc.Scales = cfg.BaseScales()
					rc.Slots = memory.NewSlots()
					_, err = rules.New(rc, st)
				}
			}
			if err != nil {
				fmt.Fprintf(stderr, "%s: %v\n", args[0], err)
				return exitFail
			}
			// Warnings go to stderr, -q or not: a valid file that
			// proxies nowhere useful is worth a line.
			for _, w := range cfg.Warnings() {
				fmt.Fprintln(stderr, w)
			}
			if !*quiet {
				summarize(stdout, cfg)
			}
			return exitOK
		}
	},
}

// summarize prints what a valid configuration will do.
func summarize(w io.Writer, c *config.Config) {
	name := c.File
	if name == "" {
		name = "(embedded default)"
	}
	fmt.Fprintf(w, "%s: valid\n\n", name)
	scheme := "http"
	if c.Listen.TLS != nil {
		scheme = "https"
	}
	fmt.Fprintf(w, "traffic  %s://%s\n", scheme, c.Listen.Addr)
	fmt.Fprintf(w, "admin    %s\n", c.Admin.Addr)
	switch {
	case c.Store.Redis != nil:
		fmt.Fprintf(w, "store    redis (timeout %v)\n", c.Store.Redis.Timeout)
	default:
		fmt.Fprintf(w, "store    memory (at most %d keys)\n", c.Store.Memory.MaxKeys)
	}
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
		key := strings.Join(r.Key, "+")
		if key == "" {
			key = "ip"
		}
		fmt.Fprintf(w, "  %s%s\n    match  %s\n    key    %s\n", r.Name, flags, describeMatch(r.Match), key)
		if tier := describeTier(r); tier != "" {
			fmt.Fprintf(w, "    tier   %s\n", tier)
		}
		if c.Store.Redis != nil {
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
		fmt.Fprintf(w, "log      %s (%s)\n", c.AccessLog.Path, c.AccessLog.Format)
	}
	summarizeAdaptive(w, c)
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
	if p.Limit != 0 {
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
			every = eventual.DefaultInterval
		}
		return "eventual (decided locally, synced with Redis every " + every.String() + ")"
	case "local":
		if r.Nodes > 1 {
			return "local (this gateway only, its 1/" + strconv.Itoa(r.Nodes) + " share of the limits)"
		}
		return "local (this gateway only)"
	}
	return r.Consistency
}

// describeOnError says what rule r answers while its store fails: its
// effective failure mode, as the rule engine decides it.
func describeOnError(c *rules.Config, r *rules.Rule) string {
	mode := c.OnErrorOf(r)
	from := "on_error"
	if r.OnError != "" {
		from = "the rule's on_error"
	}
	switch r.Consistency {
	case rules.ConsistencyEventual, rules.ConsistencyLocal:
		return "none: decided in this gateway, a Redis outage does not fail it"
	}
	what := map[string]string{
		rules.OnErrorOpen:   "allow",
		rules.OnErrorClosed: "refuse",
		rules.OnErrorLocal:  "decide in this gateway alone",
	}[mode]
	return fmt.Sprintf("%s: %s while the store fails (%s)", mode, what, from)
}
