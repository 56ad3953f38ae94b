package eventual

import (
	"context"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/redistest"
	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/limit/limittest"
)

// Stats count the syncs, the keys the last one pushed and the lag since
// the last one that succeeded, on the store's clock; a sync to a Redis
// that is gone counts a failure and leaves the last success as it was.
func TestStatsCountSyncsAndLag(t *testing.T) {
	srv := redistest.Start(t)
	now := limittest.Base
	clock := func() int64 { return now }
	s := newNode(t, srv.Addr, clock)
	if st := s.Stats(); st.Syncs != 0 || st.LastOK != 0 || st.Lag != 0 {
		t.Fatalf("before any sync: %+v", st)
	}
	admit(t, s, "a", limit.FixedWindow{Limit: 10, Window: time.Minute}, 3)
	admit(t, s, "b", limit.FixedWindow{Limit: 10, Window: time.Minute}, 1)
	ctx := context.Background()
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	now += int64(250 * time.Millisecond)
	st := s.Stats()
	if st.Syncs != 1 || st.Failures != 0 || st.Keys != 2 || st.Lag != 250*time.Millisecond || st.LastOK != time.Duration(limittest.Base) {
		t.Fatalf("after one sync: %+v", st)
	}
	srv.Kill()
	admit(t, s, "a", limit.FixedWindow{Limit: 10, Window: time.Minute}, 1)
	sctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if err := s.Sync(sctx); err == nil {
		t.Fatal("sync to a stopped Redis succeeded")
	}
	now += int64(time.Second)
	if st := s.Stats(); st.Syncs != 2 || st.Failures != 1 || st.Lag != 1250*time.Millisecond {
		t.Fatalf("after a failed sync: %+v", st)
	}
}
