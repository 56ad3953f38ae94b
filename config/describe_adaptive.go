package config

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/adaptive/adaptiveconf"
)

// describeAdaptive prints each adaptive controller with its bounds and
// signals (Describe's last section).
func (c *Config) describeAdaptive(w io.Writer) {
	ss := c.AdaptiveSettings()
	if len(ss) == 0 {
		return
	}
	fmt.Fprintf(w, "\nadaptive controllers (factor between floor and 100%% of each policy naming them):\n")
	for _, s := range ss {
		fleet := "this gateway alone"
		if s.FleetTier != "" {
			fleet = "shared by the fleet through " + s.FleetTier + " (the lowest factor wins)"
		}
		fmt.Fprintf(w, "  %s\n    bounds    floor %s, base 100%%\n", s.Name, describePermille(s.Floor))
		fmt.Fprintf(w, "    every     %v: cut by %s × score, recover %s per healthy interval after %d, hysteresis %s\n",
			s.Interval, describePercent(s.Decrease), describePermille(s.Recovery), s.RecoverAfter, describePercent(s.Hysteresis))
		fmt.Fprintf(w, "    missing   %s\n    fleet     %s\n", s.OnMissing, fleet)
		if s.Upstream != "" {
			fmt.Fprintf(w, "    upstream  %s\n", s.Upstream)
		}
		for _, sg := range s.Signals {
			fmt.Fprintf(w, "    signal    %s above %s, weight %s%s\n", sg.Name, describeThreshold(sg),
				strconv.FormatFloat(sg.Weight, 'g', -1, 64), describeSource(sg.Source))
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

func describePermille(p int64) string { return strconv.FormatFloat(float64(p)/10, 'g', -1, 64) + "%" }

func describePercent(f float64) string { return strconv.FormatFloat(f*100, 'g', 4, 64) + "%" }

func describeThreshold(sg adaptiveconf.Signal) string {
	switch sg.Source.Measure {
	case adaptiveconf.Latency:
		return time.Duration(sg.Threshold * float64(time.Second)).String()
	case adaptiveconf.ErrorRate:
		return strconv.FormatFloat(sg.Threshold, 'g', -1, 64) + "%"
	}
	return strconv.FormatFloat(sg.Threshold, 'g', -1, 64)
}

func describeSource(s adaptiveconf.Source) string {
	if s.Measure == adaptiveconf.Prometheus {
		l := ""
		if len(s.Labels) > 0 {
			l = fmt.Sprintf(" %v", s.Labels)
		}
		return fmt.Sprintf(" (scraped from %s%s)", s.URL, l)
	}
	return ""
}
