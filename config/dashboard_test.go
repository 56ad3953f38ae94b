package config

import (
	"path/filepath"
	"testing"
	"time"
)

// The dashboard is on by default with its documented defaults; the refusal
// log is off and keeps its zero values.
func TestDashboardDefaults(t *testing.T) {
	c, err := Parse(filepath.Join(t.TempDir(), "c.yaml"), []byte("listen: {addr: \":8080\"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	d := c.Admin.Dashboard
	if !d.On() || d.Period != time.Second || d.History != 5*time.Minute || d.Keys != "plain" || d.Top != 10 || d.Counters != 256 {
		t.Fatalf("dashboard defaults %+v", d)
	}
	if c.RefusalLog != (RefusalLog{}) {
		t.Fatalf("refusal log %+v", c.RefusalLog)
	}
	c, err = Parse(filepath.Join(t.TempDir(), "c.yaml"), []byte("refusal_log: {path: \"-\"}\nadmin: {dashboard: {enabled: false}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if l := c.RefusalLog; l.Format != "json" || l.SampleEvery != 1 || l.MaxLines != 100 || l.Interval != 10*time.Second || l.Keys != "hash" {
		t.Fatalf("refusal log defaults %+v", l)
	}
	if c.Admin.Dashboard.On() {
		t.Fatal("enabled: false is on")
	}
}

// Every impossible dashboard or refusal-log value is reported at its line,
// all at once; a refusal log never shows keys in the clear.
func TestDashboardAndRefusalLogValidation(t *testing.T) {
	src := `admin:
  dashboard:
    period: 10ms
    history: 2h
    keys: clear
    counters: 100000
    top: -1
refusal_log:
  path: /nonexistent-dir/r.log
  format: xml
  sample_every: -2
  max_lines: -5
  interval: 1ms
  keys: plain
`
	_, err := Parse(filepath.Join(t.TempDir(), "c.yaml"), []byte(src))
	checkProblems(t, err, []want{
		{3, "admin.dashboard.period 10ms is below"},
		{4, "admin.dashboard.history 2h0m0s is above"},
		{5, `admin.dashboard.keys "clear"`},
		{6, "admin.dashboard.counters 100000"},
		{7, "admin.dashboard.top -1"},
		{9, "directory /nonexistent-dir does not exist"},
		{10, `refusal_log.format "xml"`},
		{11, "refusal_log.sample_every -2"},
		{12, "refusal_log.max_lines -5"},
		{13, "refusal_log.interval 1ms is below"},
		{14, "never carries keys in the clear"},
	})
	_, err = Parse(filepath.Join(t.TempDir(), "c.yaml"), []byte("admin:\n  dashboard: {period: 100ms, history: 1h}\n"))
	checkProblems(t, err, []want{{2, "more than 3600 periods of 100ms"}})
	_, err = Parse(filepath.Join(t.TempDir(), "c.yaml"), []byte("refusal_log:\n  sample_every: 5\n"))
	checkProblems(t, err, []want{{2, "refusal_log.sample_every is set but refusal_log.path is not"}})
}
