package replay

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"time"
)

// WriteText writes the report for a terminal.
func WriteText(w io.Writer, rep *Report) error {
	b := bufio.NewWriter(w)
	in := &rep.Input
	keys := "distinct keys"
	if in.Retired > 0 {
		keys = "key records"
	}
	fmt.Fprintf(b, "Input: %d lines (%s format), %d requests simulated, %d %s (key: %s)\n",
		in.Lines, in.Format, in.Simulated, in.Keys, keys, TerminalSafe(in.Key))
	if !in.First.IsZero() {
		fmt.Fprintf(b, "  from %s to %s (%s)\n", stamp(in.First), stamp(in.Last), in.Last.Sub(in.First).Round(time.Second))
	}
	if in.Retired > 0 {
		fmt.Fprintf(b, "  %d idle key records were retired to bound memory: per-key figures below cover stretches of activity, not whole keys\n", in.Retired)
	}
	if in.Filtered > 0 {
		fmt.Fprintf(b, "  %d lines filtered out\n", in.Filtered)
	}
	if in.ReorderFull > 0 {
		fmt.Fprintf(b, "  %d requests were simulated before their %v reordering window had passed: the window holds at most %d lines (-reorder-lines)\n",
			in.ReorderFull, in.Reorder, in.ReorderLines)
	}
	if in.Late > 0 {
		fmt.Fprintf(b, "  %d requests arrived after a later time had been simulated (up to %v out of order; reordering window %v) and were simulated up to %v after their own time\n",
			in.Late, in.LateMax, in.Reorder, in.LateShift)
	}
	if in.Malformed > 0 {
		fmt.Fprintf(b, "  %d malformed lines skipped; the first %d:\n", in.Malformed, len(in.Examples))
		for _, m := range in.Examples {
			fmt.Fprintf(b, "    line %d: %s: %s\n", m.Line, TerminalSafe(m.Reason), TerminalSafe(m.Text))
		}
	}
	if in.Binary > 0 {
		fmt.Fprintf(b, "  %d malformed lines hold NUL bytes: the input looks binary, neither a text log nor gzip\n", in.Binary)
	}
	if len(in.FieldsSeen) > 0 {
		fmt.Fprintf(b, "  no timestamp field: line fields seen are %s; a timestamp is looked for in %s (name yours with -field time=NAME)\n",
			TerminalSafe(strings.Join(in.FieldsSeen, ", ")), TerminalSafe(strings.Join(in.TimeFields, ", ")))
	}
	for _, p := range rep.Policies {
		fmt.Fprintf(b, "\n== %s", TerminalSafe(p.Name))
		if p.Name != p.Policy {
			fmt.Fprintf(b, "  [%s]", TerminalSafe(p.Policy))
		}
		fmt.Fprintf(b, "\n  requests %d, refused %d (%.2f%%), keys affected %d of %d\n",
			p.Requests, p.Refused, p.RefusedPercent, p.KeysAffected, in.Keys)
		v := p.BusiestVerdict
		if v.Key != "" {
			if v.Refused == 0 {
				fmt.Fprintf(b, "  the busiest client, %s (%d requests), would never have been refused\n", TerminalSafe(v.Key), v.Requests)
			} else {
				fmt.Fprintf(b, "  the busiest client, %s (%d requests), would have been refused %d times, first at %s\n",
					TerminalSafe(v.Key), v.Requests, v.Refused, stamp(v.FirstRefused))
			}
		}
		if len(p.TopRefused) > 0 {
			fmt.Fprintf(b, "  top refused keys:\n")
			for _, k := range p.TopRefused {
				fmt.Fprintf(b, "    %-40s refused %6d of %6d, first at %s\n", TerminalSafe(k.Key), k.Refused, k.Requests, stamp(k.FirstRefused))
			}
		}
		if c := p.Counting; c != nil {
			fmt.Fprintf(b, "  counting rules charged %d answers (the log's status)", c.Counted)
			if c.NoStatus > 0 {
				fmt.Fprintf(b, "; %d admitted requests they matched have no status in the log and were not charged", c.NoStatus)
			}
			fmt.Fprintln(b)
		}
		if pn := p.Penalties; pn != nil {
			fmt.Fprintf(b, "  penalties: %d of the %d refusals were penalties; %d started, on %d key(s)\n",
				pn.Refusals, p.Refused, pn.Started, pn.Keys)
		}
		if s := p.Seam; s != nil {
			fmt.Fprintf(b, "  worst seam burst: %s was admitted %d within %v (limit %d, %.2fx), %s to %s\n",
				TerminalSafe(s.Key), s.Admitted, s.Window, s.Limit, float64(s.Admitted)/float64(s.Limit), stamp(s.From), stamp(s.To))
		}
		if a := p.Accuracy; a != nil {
			fmt.Fprintf(b, "  vs exact %s: %d of %d decisions differ (%.4f%%): %d allowed that the log refused, %d refused that it allowed\n",
				TerminalSafe(a.ExactPolicy), a.Differ, a.Decisions, a.DifferPercent, a.FalseAllow, a.FalseRefuse)
		}
		if s := p.Suggestion; s != nil {
			fmt.Fprintf(b, "  suggest: %s %d refuses none of the %d busiest keys (%s); %s %d none of %g%% of keys (%s); %s %d refuses nobody (now %d)\n",
				s.Param, s.ForTop, s.TopN, s.ForTopPolicy, s.Param, s.ForPercentile, s.Percentile, s.ForPercentilePolicy,
				s.Param, s.Max, s.Current)
		}
	}
	pr := rep.PeakRates
	fmt.Fprintf(b, "\nPer-key peak rates: per second p50 %d, p90 %d, p99 %d, max %d; per minute p50 %d, p90 %d, p99 %d, max %d\n",
		pr.PerSecond.P50, pr.PerSecond.P90, pr.PerSecond.P99, pr.PerSecond.Max,
		pr.PerMinute.P50, pr.PerMinute.P90, pr.PerMinute.P99, pr.PerMinute.Max)
	for _, s := range rep.Sections {
		fmt.Fprintf(b, "\n%s\n%s", TerminalSafe(s.Title), s.Text)
	}
	return b.Flush()
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339Nano)
}
