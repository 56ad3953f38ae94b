package adapt

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/adaptive"
	"github.com/tollgate-dev/tollgate/gateway/dashboard"
)

// Statuses are the running adaptive controllers as the dashboard shows
// them, by name: the factor in force between the floor and the base,
// whether it is tightened, and how the fleet shares it.
func (cs *Controllers) Statuses() []dashboard.Status {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	names := make([]string, 0, len(cs.running))
	for name := range cs.running {
		names = append(names, name)
	}
	slices.Sort(names)
	out := make([]dashboard.Status, 0, len(names))
	for _, name := range names {
		l := cs.running[name]
		st := l.Settings()
		f := l.Factor().Permille()
		fleet := st.FleetTier
		if fleet == "" {
			fleet = "this gateway alone"
		}
		signals := make([]string, 0, len(st.Signals))
		for _, sg := range st.Signals {
			signals = append(signals, sg.Name)
		}
		out = append(out, dashboard.Status{Name: "adaptive " + name, Kind: "adaptive", Fields: []dashboard.Field{
			{Name: "factor", Value: permille(f), Alert: f < adaptive.Base},
			{Name: "floor", Value: permille(st.Floor)},
			{Name: "every", Value: st.Interval.String()},
			{Name: "signals", Value: strings.Join(signals, ", ")},
			{Name: "upstream", Value: st.Upstream},
			{Name: "shared with", Value: fleet},
		}})
	}
	return out
}

// Statuses are the routes' gradient concurrency limits as the dashboard
// shows them, by route.
func (cs *ConcLimits) Statuses() []dashboard.Status {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	routes := make([]string, 0, len(cs.byRoute))
	for r := range cs.byRoute {
		routes = append(routes, r)
	}
	slices.Sort(routes)
	out := make([]dashboard.Status, 0, len(routes))
	for _, r := range routes {
		l := cs.byRoute[r]
		st := l.Ctl.State()
		s := l.Ctl.Settings()
		out = append(out, dashboard.Status{Name: "adaptive concurrency " + r, Kind: "adaptive", Fields: []dashboard.Field{
			{Name: "limit", Value: strconv.Itoa(st.Limit), Alert: st.Limit <= s.MinLimit && !st.Measuring},
			{Name: "in flight", Value: strconv.Itoa(st.InFlight)},
			{Name: "minRTT", Value: st.MinRTT.Round(time.Microsecond).String()},
			{Name: "sample RTT", Value: st.SampleRTT.Round(time.Microsecond).String()},
			{Name: "measuring minRTT", Value: strconv.FormatBool(st.Measuring)},
			{Name: "bounds", Value: strconv.Itoa(s.MinLimit) + " to " + strconv.Itoa(s.MaxLimit)},
		}})
	}
	return out
}

// permille writes a factor in permille as a percentage ("62.5%").
func permille(p int64) string {
	return strconv.FormatFloat(float64(p)/10, 'f', -1, 64) + "%"
}
