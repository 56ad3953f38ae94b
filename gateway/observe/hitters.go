package observe

import (
	"slices"
	"strings"
	"sync"

	"github.com/tollgate-dev/tollgate/rules"
	"github.com/tollgate-dev/tollgate/topk"
)

// RuleTops are one rule's heavy hitters: its keys by requests and by
// refusals (package topk), each with the key's remaining quota at its
// last request. Their memory is fixed by admin.dashboard.counters.
type RuleTops struct {
	Rule     string
	Shadow   bool
	Volume   *topk.Summary
	Refusals *topk.Summary
}

// unknownRemaining tags a key whose last request another rule decided.
const unknownRemaining = -1

// hitterShards splits each summary so that cores decide without meeting
// on one lock.
const hitterShards = 4

func newRuleTops(r *rules.Rule, counters int) *RuleTops {
	shards := hitterShards
	for shards > counters {
		shards /= 2
	}
	cfg := topk.Config{Counters: counters, Shards: shards, MaxKeyLen: 96}
	v, err := topk.New(cfg)
	if err != nil {
		panic(err) // counters is validated by config
	}
	cfg.SeedOf = v // one hash per event serves both
	f, _ := topk.New(cfg)
	return &RuleTops{Rule: r.Name, Shadow: r.Shadow, Volume: v, Refusals: f}
}

// Observe counts one event of the rule.
func (t *RuleTops) Observe(ev *rules.Event) {
	rem := int64(unknownRemaining)
	if ev.Decisive {
		rem = ev.Decision.Remaining
	}
	h := t.Volume.Hash(ev.Key)
	t.Volume.AddHashed(h, ev.Key, 1, rem)
	if ev.Outcome == rules.Refused || ev.Outcome == rules.ShadowRefused {
		t.Refusals.AddHashed(h, ev.Key, 1, rem)
	}
}

// HitterSet keeps each rule's ruleTops across reloads: a rule that keeps
// its name, key and shadow flag keeps its counts. Tops of rules no longer
// running are dropped by keepOnly, once a new snapshot serves (a reload
// that fails to build keeps the old rules' counts).
type HitterSet struct {
	Mu   sync.Mutex
	ByID map[string]*RuleTops
}

// ForRules returns the tops of cfg's rules by position, kept or made.
func (h *HitterSet) ForRules(cfg *rules.Config, counters int) []*RuleTops {
	h.Mu.Lock()
	defer h.Mu.Unlock()
	if h.ByID == nil {
		h.ByID = map[string]*RuleTops{}
	}
	out := make([]*RuleTops, len(cfg.Rules))
	for i := range cfg.Rules {
		r := &cfg.Rules[i]
		id := strings.Join([]string{r.Name, strings.Join(r.Key, "+"), boolWord(r.Shadow)}, "\x00")
		t := h.ByID[id]
		if t == nil || t.Volume.Capacity() != counters {
			t = newRuleTops(r, counters)
			h.ByID[id] = t
		}
		out[i] = t
	}
	return out
}

// KeepOnly forgets every tops but those in use.
func (h *HitterSet) KeepOnly(use []*RuleTops) {
	h.Mu.Lock()
	defer h.Mu.Unlock()
	for id, t := range h.ByID {
		if !slices.Contains(use, t) {
			delete(h.ByID, id)
		}
	}
}

func boolWord(b bool) string {
	if b {
		return "true"
	}
	return "false"
}
