package main

import (
	"fmt"
	"io"
	"slices"
	"time"
)

// median is the median of xs (the mean of the middle two for an even count).
func median[T int64 | float64 | time.Duration](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// summary is the medians of one cell over the rounds.
type summary struct {
	perSec     float64
	p50, p99   time.Duration
	cpuPerCall time.Duration
	redisCPU   time.Duration
	clientCPU  time.Duration
	rss        int64
	overLimit  int
	failed     int
}

func summarize(rs []result) summary {
	var ps []float64
	var p50, p99, cpu, rcpu, ccpu []time.Duration
	var rss []int64
	var s summary
	for _, r := range rs {
		ps, p50, p99, cpu, rss = append(ps, r.perSec), append(p50, r.p50), append(p99, r.p99), append(cpu, r.cpuPerCall), append(rss, r.rss)
		rcpu, ccpu = append(rcpu, r.redisCPU), append(ccpu, r.clientCPU)
		s.overLimit += r.overLimit
		s.failed += r.failed
	}
	s.perSec, s.p50, s.p99, s.cpuPerCall, s.rss = median(ps), median(p50), median(p99), median(cpu), median(rss)
	s.redisCPU, s.clientCPU = median(rcpu), median(ccpu)
	return s
}

// report writes the medians as Markdown tables: one row per cell, the
// servers side by side, tollgate-redis ÷ envoy-ratelimit in throughput
// and p99; then each server's memory.
func report(w io.Writer, p plan, servers []*server, results map[cell][]result) {
	fmt.Fprintf(w, "medians of %d rounds, %v per cell, %d gRPC connection(s) per server, %d clients\n\n", p.rounds, p.duration, p.conns, p.keys)
	fmt.Fprint(w, "| callers | descriptors |")
	for _, s := range servers {
		fmt.Fprintf(w, " %s |", s.name)
	}
	fmt.Fprintln(w, " tollgate-redis ÷ envoy-ratelimit |")
	fmt.Fprint(w, "| ---: | ---: |")
	for range servers {
		fmt.Fprint(w, " --- |")
	}
	fmt.Fprintln(w, " --- |")
	for _, c := range p.callers {
		for _, d := range p.descriptors {
			fmt.Fprintf(w, "| %d | %d |", c, d)
			sums := map[string]summary{}
			for _, s := range servers {
				m := summarize(results[cell{s.name, c, d}])
				sums[s.name] = m
				fmt.Fprintf(w, " %s/s, p50 %s, p99 %s, CPU %s", si(m.perSec), short(m.p50), short(m.p99), short(m.cpuPerCall))
				if m.redisCPU > 0 {
					fmt.Fprintf(w, " + Redis %s", short(m.redisCPU))
				}
				fmt.Fprint(w, " |")
				if m.overLimit > 0 || m.failed > 0 {
					fmt.Fprintf(w, " (over_limit %d, failed %d)", m.overLimit, m.failed)
				}
			}
			a, okA := sums["tollgate-redis"]
			b, okB := sums["envoy-ratelimit"]
			if okA && okB && b.perSec > 0 && a.p99 > 0 {
				fmt.Fprintf(w, " %.2f× throughput, p99 %.2f×", a.perSec/b.perSec, float64(a.p99)/float64(b.p99))
				if r := costRatios(results[cell{"tollgate-redis", c, d}], results[cell{"envoy-ratelimit", c, d}]); len(r) > 0 {
					fmt.Fprintf(w, ", server + Redis CPU %.2f× (rounds %.2f–%.2f)", median(r), slices.Min(r), slices.Max(r))
				}
				fmt.Fprintln(w, " |")
			} else {
				fmt.Fprintln(w, " |")
			}
		}
	}
	fmt.Fprintln(w)
	top := slices.Max(p.callers)
	fmt.Fprintf(w, "| server | RSS idle | RSS after %d callers (median) | peak RSS (VmHWM) |\n", top)
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: |")
	for _, s := range servers {
		var rss []int64
		for _, d := range p.descriptors {
			for _, r := range results[cell{s.name, top, d}] {
				rss = append(rss, r.rss)
			}
		}
		fmt.Fprintf(w, "| %s | %.1f MB | %.1f MB | %.1f MB |\n", s.name, float64(s.idleRSS)/1e6, float64(median(rss))/1e6, float64(s.peakRSS())/1e6)
	}
}

// costRatios are, round by round, a's server plus Redis CPU per call
// over b's: the cost of a decision where both use Redis.
func costRatios(a, b []result) []float64 {
	var out []float64
	for i := range min(len(a), len(b)) {
		if den := b[i].cpuPerCall + b[i].redisCPU; den > 0 {
			out = append(out, float64(a[i].cpuPerCall+a[i].redisCPU)/float64(den))
		}
	}
	return out
}

// si writes a rate with a k suffix from a thousand on.
func si(x float64) string {
	if x >= 1000 {
		return fmt.Sprintf("%.1fk", x/1000)
	}
	return fmt.Sprintf("%.0f", x)
}

// short writes a duration to three significant figures.
func short(d time.Duration) string {
	switch {
	case d >= time.Millisecond:
		return fmt.Sprintf("%.2fms", float64(d)/1e6)
	case d >= time.Microsecond:
		return fmt.Sprintf("%.0fµs", float64(d)/1e3)
	}
	return d.String()
}
