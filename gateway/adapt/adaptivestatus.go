package adapt

import (
	"maps"
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
	return byName(cs.running, func(name string, l *adaptive.Loop) dashboard.Status {
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
		return dashboard.Status{Name: "adaptive " + name, Kind: "adaptive", Fields: []dashboard.Field{
			{Name: "factor", Value: permille(f), Alert: f < adaptive.Base},
			{Name: "floor", Value: permille(st.Floor)},
			{Name: "every", Value: st.Interval.String()},
			{Name: "signals", Value: strings.Join(signals, ", ")},
			{Name: "upstream", Value: st.Upstream},
			{Name: "shared with", Value: fleet},
		}}
	})
}

// Statuses are the routes' gradient concurrency limits as the dashboard
// shows them, by route.
func (cs *ConcLimits) Statuses() []dashboard.Status {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return byName(cs.byRoute, func(r string, l *ConcLimit) dashboard.Status {
		st := l.Ctl.State()
		s := l.Ctl.Settings()
		return dashboard.Status{Name: "adaptive concurrency " + r, Kind: "adaptive", Fields: []dashboard.Field{
			{Name: "limit", Value: strconv.Itoa(st.Limit), Alert: st.Limit <= s.MinLimit && !st.Measuring},
			{Name: "in flight", Value: strconv.Itoa(st.InFlight)},
			{Name: "minRTT", Value: st.MinRTT.Round(time.Microsecond).String()},
			{Name: "sample RTT", Value: st.SampleRTT.Round(time.Microsecond).String()},
			{Name: "measuring minRTT", Value: strconv.FormatBool(st.Measuring)},
			{Name: "bounds", Value: strconv.Itoa(s.MinLimit) + " to " + strconv.Itoa(s.MaxLimit)},
		}}
	})
}

// byName is status(name, v) for each entry of m, in the order of the
// names.
func byName[V any](m map[string]V, status func(name string, v V) dashboard.Status) []dashboard.Status {
	out := make([]dashboard.Status, 0, len(m))
	for _, name := range slices.Sorted(maps.Keys(m)) {
		out = append(out, status(name, m[name]))
	}
	return out
}

// permille writes a factor in permille as a percentage ("62.5%").
func permille(p int64) string {
	return strconv.FormatFloat(float64(p)/10, 'f', -1, 64) + "%"
}
