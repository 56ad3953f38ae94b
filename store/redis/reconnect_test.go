package redis

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/failmode"
	"github.com/tollgate-dev/tollgate/internal/redistest"
)

// TestReconnectUnderLoad rotates an ACL user's password while callers
// decide: every decision is Redis's (none by the failure mode), a
// password Redis refuses leaves the connection as it was with an error
// that does not quote it, and after the old password is revoked and its
// connections killed, decisions carry on with the new one.
func TestReconnectUnderLoad(t *testing.T) {
	const oldPW, newPW, wrongPW = "old-pw-8c1e", "new-pw-4b7d", "wrong-pw-93af"
	srv := redistest.Start(t)
	srv.CLI(t, "ACL", "SETUSER", "app", "on", ">"+oldPW, "~*", "+@all")
	s, err := New(context.Background(), Config{
		Addrs: []string{srv.Addr}, Username: "app", Password: oldPW,
		OnFailure: failmode.Closed, Timeout: 2 * time.Second, CacheSize: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var (
		stop    = make(chan struct{})
		wg      sync.WaitGroup
		refused atomic.Int64 // before the kill: the rotation itself
		total   atomic.Int64
		killing atomic.Bool
	)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				case <-time.After(time.Millisecond):
				}
				d, err := s.Apply(context.Background(), "rotate", unbounded, 1)
				total.Add(1)
				if err != nil {
					t.Errorf("Apply: %v", err)
				} else if !d.Allowed && !killing.Load() {
					refused.Add(1)
				}
			}
		}()
	}
	time.Sleep(50 * time.Millisecond)
	err = s.Reconnect(Credentials{Username: "app", Password: wrongPW})
	if !IsConfigError(err) || strings.Contains(err.Error(), wrongPW) {
		t.Fatalf("wrong password: %v", err)
	}
	srv.CLI(t, "ACL", "SETUSER", "app", ">"+newPW)
	if err := s.Reconnect(Credentials{Username: "app", Password: newPW}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(oldClientGrace + 100*time.Millisecond)
	close(stop)
	wg.Wait()
	if refused.Load() != 0 {
		t.Fatalf("%d of %d decisions by the failure mode during the rotation", refused.Load(), total.Load())
	}
	// The old password revoked and the connection killed: the client
	// connects again with the new one (a decision in flight at the kill
	// may fail over meanwhile).
	killing.Store(true)
	srv.CLI(t, "ACL", "SETUSER", "app", "<"+oldPW)
	srv.CLI(t, "CLIENT", "KILL", "USER", "app")
	deadline := time.Now().Add(10 * time.Second)
	for {
		d, err := s.Apply(context.Background(), "after", generous, 1)
		if err == nil && d.Allowed && srv.CLI(t, "exists", "tollgate:{after}") == "1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not decided on Redis after the rotation: %v %+v", err, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
