package config

import "time"

// Dashboard is the live dashboard the admin listener serves at /: decisions
// per second by rule, policy and outcome, the heaviest keys per rule, the
// penalties in force (rule, policy, key shown as Keys says, time left; the
// 100 with the longest left), the store's state and the running rules,
// updated over Server-Sent Events.
// The page is embedded in the binary and fetches nothing else.
type Dashboard struct {
	// Enabled serves the dashboard and counts each rule's heaviest keys.
	// Default true. Off, the admin listener has no / page and the
	// request path does no heavy-hitter counting.
	Enabled *bool `yaml:"enabled"`
	// Period is how often an open dashboard is sent new figures.
	// Default 1s; at least 100ms.
	Period time.Duration `yaml:"period"`
	// History is how far back the decision charts go. Default 5m; at
	// most 1h, and at most 3600 periods (the samples kept).
	History time.Duration `yaml:"history"`
	// Keys says how client keys (IPs, API keys: personal data) appear on
	// the dashboard: "plain" (the default; the admin listener is on
	// loopback unless admin.addr says otherwise), "hash" (a keyed hash,
	// its key random per process: the same client keeps one stand-in
	// until a restart, and the stand-in tells nothing about the key) or
	// "truncate" (an IPv4 address cut to its /24, an IPv6 address to its
	// /48, any other key to its first 4 characters).
	Keys string `yaml:"keys"`
	// Top is how many keys the dashboard lists per rule, by volume and
	// by refusals. Default 10; at most Counters.
	Top int `yaml:"top"`
	// Counters is how many keys each rule tracks, by volume and by
	// refusals, in the heavy-hitter summaries (package topk): memory is
	// fixed by it, whatever the number of clients, and a listed count
	// overestimates by at most the rule's requests divided by Counters.
	// Default 256; at most 65536.
	Counters int `yaml:"counters"`
}

// On reports whether the dashboard is enabled.
func (d Dashboard) On() bool { return d.Enabled == nil || *d.Enabled }

// RefusalLog writes a line for refused requests, as nginx's "limiting
// requests, excess: ... by zone" lines: the rule, the policy, the key
// (hashed or truncated, never in the clear), and the decision's figures;
// a refusal under a penalty (a policy's penalty) adds "penalty", the time
// it has left ("14m52s"), and "penalty_started" when this refusal started
// it. An answer a counting rule (count) charged is not a refusal.
// Under a flood it writes at most MaxLines lines per Interval, then one
// summary line per rule with the refusals it did not write.
type RefusalLog struct {
	// Path is a file to append to, or "-" for standard error. Empty (the
	// default): no refusal log.
	Path string `yaml:"path"`
	// Format is "json" (the default) or "text" (log/slog's key=value).
	Format string `yaml:"format"`
	// SampleEvery gives a line to one refusal in this many (counted per
	// gateway, in arrival order), from 1 to 1000000. Default 1: every
	// refusal, up to MaxLines per Interval.
	SampleEvery int `yaml:"sample_every"`
	// MaxLines is how many refusal lines may be written per Interval;
	// the refusals past it are only counted. Default 100.
	MaxLines int `yaml:"max_lines"`
	// Interval is the period of the summary lines: every Interval in
	// which refusals were not written, one line per rule gives how many
	// were refused and how many written. Default 10s; at least 100ms.
	Interval time.Duration `yaml:"interval"`
	// Keys is how the client key appears: "hash" (the default; a keyed
	// hash, the key random per process, the same stand-in the dashboard
	// shows with keys: hash) or "truncate" (as the dashboard's).
	Keys string `yaml:"keys"`
}

// The least values and caps of the dashboard's and refusal log's settings.
const (
	minDashboardPeriod  = 100 * time.Millisecond
	maxDashboardHistory = time.Hour
	maxDashboardCounter = 65536
	maxDashboardSamples = 3600
	minRefusalInterval  = 100 * time.Millisecond
)

// defaultsDashboard fills the dashboard's and refusal log's defaults.
func (c *Config) defaultsDashboard() {
	d := &c.Admin.Dashboard
	if d.Period == 0 {
		d.Period = time.Second
	}
	if d.History == 0 {
		d.History = 5 * time.Minute
	}
	if d.Keys == "" {
		d.Keys = "plain"
	}
	if d.Top == 0 {
		d.Top = 10
	}
	if d.Counters == 0 {
		d.Counters = 256
	}
	l := &c.RefusalLog
	if l.Path == "" {
		return
	}
	if l.Format == "" {
		l.Format = "json"
	}
	if l.SampleEvery == 0 {
		l.SampleEvery = 1
	}
	if l.MaxLines == 0 {
		l.MaxLines = 100
	}
	if l.Interval == 0 {
		l.Interval = 10 * time.Second
	}
	if l.Keys == "" {
		l.Keys = "hash"
	}
}

// validateDashboard records the dashboard's and refusal log's problems.
func (c *Config) validateDashboard(ps *problems) {
	d := c.Admin.Dashboard
	checkMin(ps, c.at("admin.dashboard.period"), "admin.dashboard.period", d.Period, minDashboardPeriod)
	if d.History > maxDashboardHistory {
		ps.Add(c.at("admin.dashboard.history"), "admin.dashboard.history %v is above the most of %v", d.History, maxDashboardHistory)
	} else if d.Period >= minDashboardPeriod && d.History/d.Period > maxDashboardSamples {
		ps.Add(c.at("admin.dashboard.history"), "admin.dashboard.history %v is more than %d periods of %v", d.History, maxDashboardSamples, d.Period)
	}
	if d.History < d.Period {
		ps.Add(c.at("admin.dashboard.history"), "admin.dashboard.history %v is shorter than admin.dashboard.period %v", d.History, d.Period)
	}
	if d.Keys != "plain" && d.Keys != "hash" && d.Keys != "truncate" {
		ps.Add(c.at("admin.dashboard.keys"), "admin.dashboard.keys %q: want plain, hash or truncate%s", d.Keys, didYouMean(d.Keys, "plain", "hash", "truncate"))
	}
	if d.Counters < 0 || d.Counters > maxDashboardCounter {
		ps.Add(c.at("admin.dashboard.counters"), "admin.dashboard.counters %d: want 1 to %d", d.Counters, maxDashboardCounter)
	}
	if d.Top < 0 || d.Top > d.Counters {
		ps.Add(c.at("admin.dashboard.top"), "admin.dashboard.top %d: want 1 to admin.dashboard.counters (%d)", d.Top, d.Counters)
	}
	l := c.RefusalLog
	if l.Path == "" {
		for _, f := range []struct {
			name string
			set  bool
		}{{"format", l.Format != ""}, {"sample_every", l.SampleEvery != 0}, {"max_lines", l.MaxLines != 0}, {"interval", l.Interval != 0}, {"keys", l.Keys != ""}} {
			if f.set {
				ps.Add(c.at("refusal_log."+f.name), "refusal_log.%s is set but refusal_log.path is not", f.name)
			}
		}
		return
	}
	if l.Format != "json" && l.Format != "text" {
		ps.Add(c.at("refusal_log.format"), "refusal_log.format %q: want json or text%s", l.Format, didYouMean(l.Format, "json", "text"))
	}
	if l.SampleEvery < 1 || l.SampleEvery > 1000000 {
		ps.Add(c.at("refusal_log.sample_every"), "refusal_log.sample_every %d: want from 1 to 1000000", l.SampleEvery)
	}
	if l.MaxLines < 0 {
		ps.Add(c.at("refusal_log.max_lines"), "refusal_log.max_lines %d must not be negative", l.MaxLines)
	}
	checkMin(ps, c.at("refusal_log.interval"), "refusal_log.interval", l.Interval, minRefusalInterval)
	if l.Keys != "hash" && l.Keys != "truncate" {
		ps.Add(c.at("refusal_log.keys"), "refusal_log.keys %q: want hash or truncate (a log never carries keys in the clear)%s", l.Keys, didYouMean(l.Keys, "hash", "truncate"))
	}
	c.checkLogDir(ps, "refusal_log.path", l.Path)
}
