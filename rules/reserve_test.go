package rules

import (
	"context"
	"testing"
	"time"
)

// reservedTotal is the cost reserved on e's counting keys, and the keys
// holding an entry: every one of them when nothing is in flight.
func reservedTotal(e *Engine) int64 {
	var n int64
	for i := range e.pending.shards {
		sh := &e.pending.shards[i]
		sh.mu.Lock()
		for _, p := range sh.m {
			n += p.pending + p.watchers
			if p.idle() {
				n++ // an idle entry is dropped
			}
		}
		sh.mu.Unlock()
	}
	return n
}

// TestCountInFlightIsBounded (review finding "count in flight is
// unbounded"): 200 wrong passwords decided at once, before any answer,
// against a limit of 5: the five admitted reserve what was left, the
// other 195 are refused (Retry-After 1s, no penalty: nothing is over),
// and once the five are charged the key is refused by its limit.
func TestCountInFlightIsBounded(t *testing.T) {
	r := loginRule(5)
	r.Penalty = 15 * time.Minute
	e, _ := newEngine(t, Config{Rules: []Rule{r}})
	const ip = "203.0.113.51"
	var inFlight []Result
	for range 200 {
		inFlight = append(inFlight, decide(t, e, get("/login", ip)))
	}
	admitted := 0
	for i := range inFlight {
		res := &inFlight[i]
		if !res.Refused() {
			admitted++
			if !res.Holds() {
				t.Fatal("an admitted counting request holds no reservation")
			}
			continue
		}
		if res.Penalty() != 0 || headers(res)[HeaderRetryAfter] != "1" || res.Holds() {
			t.Fatalf("refused in flight: penalty %v, Retry-After %q, holds %v", res.Penalty(), headers(res)[HeaderRetryAfter], res.Holds())
		}
	}
	if admitted != 5 {
		t.Fatalf("admitted %d of 200 in flight against a limit of 5", admitted)
	}
	if k := reservedTotal(e); k != 5 {
		t.Fatalf("%d reserved, want 5", k)
	}
	for i := range inFlight {
		if inFlight[i].Counts() {
			charge(t, &inFlight[i], 401, nil)
		}
		inFlight[i].Release() // as the front ends do: nothing left to end
	}
	if k := reservedTotal(e); k != 0 {
		t.Fatalf("%d reserved once all were charged", k)
	}
	res := decide(t, e, get("/login", ip))
	if !res.Refused() || res.Penalty() != 15*time.Minute {
		t.Fatalf("after the five failures: %v, penalty %v", res.Outcome, res.Penalty())
	}
}

// TestCountUserAfterTwoTyposIsNeverRefused: serial requests reserve and
// end one at a time, so a user who logs in after two typos passes, and
// nothing stays reserved.
func TestCountUserAfterTwoTyposIsNeverRefused(t *testing.T) {
	r := loginRule(3)
	r.Penalty = 15 * time.Minute
	e, _ := newEngine(t, Config{Rules: []Rule{r}})
	for i, status := range []int{401, 401, 200, 200, 200} {
		res := decide(t, e, get("/login", "198.51.100.20"))
		if res.Refused() {
			t.Fatalf("attempt %d refused (Retry-After %s)", i+1, headers(&res)[HeaderRetryAfter])
		}
		charge(t, &res, status, nil)
		res.Release()
	}
	if k := reservedTotal(e); k != 0 {
		t.Fatalf("%d reserved", k)
	}
}

// TestCountReservationEndsWithoutACharge: a request admitted but never
// served (the front end's Release: a delay its client left, a panic)
// gives its reservation back, and so does one refused by another rule
// of its batch after its peek.
func TestCountReservationEndsWithoutACharge(t *testing.T) {
	e, _ := newEngine(t, Config{Rules: []Rule{loginRule(2)}})
	const ip = "203.0.113.70"
	a, b := decide(t, e, get("/login", ip)), decide(t, e, get("/login", ip))
	if a.Refused() || b.Refused() {
		t.Fatal("refused within the limit")
	}
	if c := decide(t, e, get("/login", ip)); !c.Refused() {
		t.Fatal("a third in flight admitted against a limit of 2")
	}
	a.Release() // never served
	a.Release() // a second call does nothing
	c := decide(t, e, get("/login", ip))
	if c.Refused() {
		t.Fatal("the place a released request gave back is still taken")
	}
	charge(t, &b, 401, nil)
	charge(t, &c, 401, nil)
	if k := reservedTotal(e); k != 0 {
		t.Fatalf("%d reserved", k)
	}

	// Refused after the peek by a plain rule of the same batch.
	plain := Rule{Name: "ip", Policies: []Policy{{Algorithm: "fixed_window", Limit: 1, Window: "1h"}}}
	e, _ = newEngine(t, Config{Rules: []Rule{plain, loginRule(5)}})
	first := decide(t, e, get("/login", ip))
	if first.Refused() {
		t.Fatal("first refused")
	}
	second := decide(t, e, get("/login", ip))
	if !second.Refused() || second.Rule() != "ip" || second.Holds() {
		t.Fatalf("second: %v by %q, holds %v", second.Outcome, second.Rule(), second.Holds())
	}
	if k := reservedTotal(e); k != 1 {
		t.Fatalf("%d reserved, want the first request's 1", k)
	}
	charge(t, &first, 200, nil)
	if k := reservedTotal(e); k != 0 {
		t.Fatalf("%d reserved after the charge of an answer not counted", k)
	}
}

// TestCountReservationsHeal: a reservation a front end never ends (the
// Result dropped) holds its key's place for at most reserveTTL; its late
// end, if it comes, ends nothing of the reservations made since.
func TestCountReservationsHeal(t *testing.T) {
	e, clk := newEngine(t, Config{Rules: []Rule{loginRule(1)}})
	const ip = "203.0.113.71"
	lost := decide(t, e, get("/login", ip))
	if lost.Refused() {
		t.Fatal("refused")
	}
	clk.add(reserveTTL - time.Second)
	if res := decide(t, e, get("/login", ip)); !res.Refused() {
		t.Fatal("admitted while the first still reserves the only place")
	}
	clk.add(2 * time.Second)
	now := decide(t, e, get("/login", ip))
	if now.Refused() {
		t.Fatalf("still refused %v after the first's reservation was due to be forgotten", reserveTTL+time.Second)
	}
	lost.Release() // late: of a generation forgotten
	if k := reservedTotal(e); k != 1 {
		t.Fatalf("%d reserved, want the second's 1", k)
	}
	if res := decide(t, e, get("/login", ip)); !res.Refused() {
		t.Fatal("the late end of a forgotten reservation freed the second's place")
	}
	charge(t, &now, 401, nil)
}

// TestCountReservationsFullTableFallsBack: a key the table has no room
// for is peeked without reservation (limit plus what is in flight):
// never refused because of the table.
func TestCountReservationsFullTableFallsBack(t *testing.T) {
	e, _ := newEngine(t, Config{Rules: []Rule{loginRule(2)}})
	e.pending.per = 0 // every shard full
	var rs []Result
	for range 4 {
		res := decide(t, e, get("/login", "203.0.113.72"))
		if res.Refused() || res.Holds() {
			t.Fatalf("%v, holds %v", res.Outcome, res.Holds())
		}
		rs = append(rs, res)
	}
	for i := range rs {
		charge(t, &rs[i], 401, nil)
	}
	if res := decide(t, e, get("/login", "203.0.113.72")); !res.Refused() {
		t.Fatal("admitted past the limit")
	}
}

// TestShadowCountingRuleReserves: a shadow counting rule reserves as an
// enforced one would (its ShadowRefused events tell what enforcing it
// would refuse) and ends its reservations the same way, refusing
// nothing.
func TestShadowCountingRuleReserves(t *testing.T) {
	r := loginRule(2)
	r.Shadow = true
	e, _ := newEngine(t, Config{Rules: []Rule{r}})
	var rs []Result
	would := 0
	for range 5 {
		res := decide(t, e, get("/login", "203.0.113.73"))
		if res.Refused() {
			t.Fatal("a shadow rule refused")
		}
		if !res.Shadow.Allowed {
			would++
		}
		rs = append(rs, res)
	}
	if would != 3 {
		t.Fatalf("shadow would refuse %d of 5 in flight, want 3", would)
	}
	for i := range rs {
		if rs[i].Counts() {
			charge(t, &rs[i], 401, nil)
		}
		rs[i].Release()
	}
	if k := reservedTotal(e); k != 0 {
		t.Fatalf("%d reserved", k)
	}
}

// BenchmarkCountingAdmitted: an admitted counting request, decided and
// charged with an answer the rule does not count (its reservation made
// and ended).
func BenchmarkCountingAdmitted(b *testing.B) {
	e, _ := newEngine(b, Config{Rules: []Rule{loginRule(5)}})
	rq := get("/login", "192.0.2.78")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res, _ := e.Decide(ctx, rq)
		if res.Refused() {
			b.Fatal("refused")
		}
		res.Charge(ctx, 200, nil) //nolint:errcheck // the memory store does not fail
	}
}
