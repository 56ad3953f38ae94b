package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/adaptive"
	"github.com/tollgate-dev/tollgate/config"
)

// summarizeAdaptive prints each adaptive controller with its bounds and
// signals.
func summarizeAdaptive(w io.Writer, c *config.Config) {
	ss := c.AdaptiveSettings()
	if len(ss) == 0 {
		return
	}
	fmt.Fprintf(w, "\nadaptive controllers (factor between floor and 100%% of each policy naming them):\n")
	for _, s := range ss {
		fleet := "this gateway alone"
		if s.Shared {
			fleet = "shared by the fleet through redis (the lowest factor wins)"
		}
		fmt.Fprintf(w, "  %s\n    bounds    floor %s, base 100%%\n", s.Name, permille(s.Floor))
		fmt.Fprintf(w, "    every     %v: cut by %s × score, recover %s per healthy interval after %d, hysteresis %s\n",
			s.Interval, percent(s.Decrease), permille(s.Recovery), s.RecoverAfter, percent(s.Hysteresis))
		fmt.Fprintf(w, "    missing   %s\n    fleet     %s\n", s.OnMissing, fleet)
		if s.Upstream != "" {
			fmt.Fprintf(w, "    upstream  %s\n", s.Upstream)
		}
		for _, sg := range s.Signals {
			fmt.Fprintf(w, "    signal    %s above %s, weight %s%s\n", sg.Name, threshold(sg),
				strconv.FormatFloat(sg.Weight, 'g', -1, 64), source(sg.Source))
		}
		var users []string
		for _, r := range c.Rules {
			for _, p := range r.Policies {
				if p.Adaptive == s.Name {
					users = append(users, r.Name)
					break
				}
			}
		}
		if len(users) == 0 {
			users = []string{"none (no policy names it)"}
		}
		fmt.Fprintf(w, "    scales    %s\n", strings.Join(users, ", "))
	}
}

func permille(p int64) string { return strconv.FormatFloat(float64(p)/10, 'g', -1, 64) + "%" }

func percent(f float64) string { return strconv.FormatFloat(f*100, 'g', 4, 64) + "%" }

func threshold(sg adaptive.Signal) string {
	switch sg.Source.Measure {
	case adaptive.Latency:
		return time.Duration(sg.Threshold * float64(time.Second)).String()
	case adaptive.ErrorRate:
		return strconv.FormatFloat(sg.Threshold, 'g', -1, 64) + "%"
	}
	return strconv.FormatFloat(sg.Threshold, 'g', -1, 64)
}

func source(s adaptive.Source) string {
	if s.Measure == adaptive.Prometheus {
		l := ""
		if len(s.Labels) > 0 {
			l = fmt.Sprintf(" %v", s.Labels)
		}
		return fmt.Sprintf(" (scraped from %s%s)", s.URL, l)
	}
	return ""
}
