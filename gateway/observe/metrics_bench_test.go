package observe

import (
	"testing"

	"github.com/tollgate-dev/tollgate/rules"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// BenchmarkObserve is the metrics cost of one refused decision.
func BenchmarkObserve(b *testing.B) {
	m := NewMetrics()
	o := m.NewObserver()
	rc := rules.Config{Rules: []rules.Rule{
		{Name: "login", Policies: []rules.Policy{{Rate: "1/s"}}},
		{Name: "per-ip", Policies: []rules.Policy{{Rate: "1/s"}}},
	}}
	st, err := memory.New(memory.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	e, err := rules.New(rc, st)
	if err != nil {
		b.Fatal(err)
	}
	o.Bind(&rc, e)
	ev := rules.Event{Rule: "per-ip", RuleIndex: 1, Policy: "per-ip", Outcome: rules.Refused}
	for b.Loop() {
		o.Observe(ev)
	}
}
