package httplimit

import (
	"context"
	"io"
	"log"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/failmode"
	"github.com/tollgate-dev/tollgate/internal/racebuild"
	"github.com/tollgate-dev/tollgate/internal/redistest"
	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/rules"
	"github.com/tollgate-dev/tollgate/store/memory"
	"github.com/tollgate-dev/tollgate/store/redis"
)

// origin measures what it has in flight; it answers after a random
// while, or fails on each of the exit paths a slot must survive: the
// client going away, its own deadline (as a proxy's upstream timeout),
// a panic.
type origin struct {
	now, peak atomic.Int64
	panics    atomic.Int64
}

func (o *origin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := o.now.Add(1)
	defer o.now.Add(-1)
	for p := o.peak.Load(); n > p && !o.peak.CompareAndSwap(p, n); p = o.peak.Load() {
	}
	mode, _ := strconv.Atoi(r.URL.Query().Get("mode"))
	switch mode {
	case 1: // panics (net/http recovers http.ErrAbortHandler quietly)
		o.panics.Add(1)
		panic(http.ErrAbortHandler)
	case 2: // the upstream times out: the handler gives up after 1ms
		ctx, cancel := context.WithTimeout(r.Context(), time.Millisecond)
		defer cancel()
		<-ctx.Done()
		w.WriteHeader(http.StatusGatewayTimeout)
		return
	}
	t := time.NewTimer(time.Duration(rand.IntN(1500)) * time.Microsecond)
	defer t.Stop()
	select {
	case <-t.C:
		io.WriteString(w, "ok")
	case <-r.Context().Done(): // the client went away
	}
}

// 64 goroutines against a limit of 10 in flight on one key: the origin
// never sees more than 10, and after every request, whichever way it
// ended (served, refused, cancelled by its client, timed out, panicked),
// no slot is left held.
func TestConcurrencyLimitUnderAborts(t *testing.T) {
	total := 100_000
	if testing.Short() || racebuild.Enabled {
		total = 5_000 // the detector makes each request several times slower
	}
	for _, backend := range []string{"memory", "redis"} {
		t.Run(backend, func(t *testing.T) {
			var slots limit.Slots
			var onError failmode.Mode
			held := func() int { return slots.(*memory.Slots).Keys() }
			if backend == "memory" {
				slots = memory.NewSlots()
			} else {
				srv := redistest.Start(t)
				st, err := redis.New(context.Background(), redis.Config{Addrs: []string{srv.Addr}, Timeout: time.Second, Prefix: "c:"})
				if err != nil {
					t.Fatal(err)
				}
				defer st.Close()
				// A call that times out may have taken its slot on Redis
				// without the answer arriving: failing closed refuses
				// the request, and the slot comes back with its lease.
				onError = failmode.Closed
				rs := st.Slots(2 * time.Second)
				defer rs.Close()
				slots = rs
				held = func() int {
					n, _ := strconv.Atoi(srv.CLI(t, "ZCARD", "c:{conn\x1fconn\x1fconcurrency\x1f*}"))
					return n + rs.Held()
				}
			}
			mem, _ := memory.New(memory.Config{SweepInterval: -1})
			defer mem.Close()
			e, err := rules.New(rules.Config{Slots: slots, OnError: onError, Rules: []rules.Rule{{
				Name: "conn", Key: rules.Key{"global"},
				Policies: []rules.Policy{{Algorithm: rules.AlgConcurrency, Limit: 10}},
			}}}, mem)
			if err != nil {
				t.Fatal(err)
			}
			o := &origin{}
			srv := httptest.NewUnstartedServer(New(e, Config{}).Handler(o))
			srv.Config.ErrorLog = log.New(io.Discard, "", 0)
			srv.Start()
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
			var next atomic.Int64
			var codes [600]atomic.Int64
			var aborted atomic.Int64
			var wg sync.WaitGroup
			for range 64 {
				wg.Go(func() {
					for next.Add(1) <= int64(total) {
						mode := 0
						switch x := rand.IntN(100); {
						case x < 2:
							mode = 1
						case x < 5:
							mode = 2
						}
						ctx, cancel := context.WithCancel(context.Background())
						if rand.IntN(5) == 0 { // a client that gives up
							time.AfterFunc(time.Duration(rand.IntN(1000))*time.Microsecond, cancel)
						}
						req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/?mode="+strconv.Itoa(mode), nil)
						resp, err := client.Do(req)
						if err != nil {
							aborted.Add(1)
							cancel()
							continue
						}
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						cancel()
						codes[resp.StatusCode].Add(1)
					}
				})
			}
			wg.Wait()
			srv.Close() // waits for every handler to return
			t.Logf("%d requests: %d ok, %d refused, %d timed out, %d panicked, %d aborted by the client; origin peak %d in flight",
				total, codes[200].Load(), codes[429].Load(), codes[504].Load(), o.panics.Load(), aborted.Load(), o.peak.Load())
			if p := o.peak.Load(); p > 10 {
				t.Errorf("the origin saw %d in flight, limit 10", p)
			}
			if codes[429].Load() == 0 {
				t.Errorf("none refused: the limit of 10 was never reached by 64 clients")
			}
			// Slots a timed-out call took come back within the lease.
			deadline := time.Now().Add(4 * time.Second)
			for held() != 0 && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
			}
			if n := held(); n != 0 {
				t.Fatalf("%d slots still held after every request ended", n)
			}
			if o.now.Load() != 0 {
				t.Fatalf("%d still in the origin", o.now.Load())
			}
		})
	}
}
