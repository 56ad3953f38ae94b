package originsim

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/adaptive"
)

func TestOverflowAndLoadReports(t *testing.T) {
	s := New(Config{Workers: 2, Queue: 4, Service: 300 * time.Millisecond})
	srv := httptest.NewServer(s)
	defer srv.Close()
	var wg sync.WaitGroup
	codes := make(chan int, 12)
	for range 12 {
		wg.Go(func() {
			resp, err := http.Get(srv.URL + "/work")
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			if resp.Header.Get(HeaderCPU) == "" || resp.Header.Get(HeaderQueue) == "" {
				t.Error("no load headers")
			}
			codes <- resp.StatusCode
		})
	}
	// While they queue, the endpoint reports the load.
	deadline := time.Now().Add(2 * time.Second)
	for s.InSystem() < 6 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	cpu, err := adaptive.ParseMetric(resp.Body, "origin_cpu_percent", nil)
	resp.Body.Close()
	if err != nil || cpu != 100 {
		t.Errorf("cpu %v %v, want 100 with every worker busy", cpu, err)
	}
	wg.Wait()
	close(codes)
	n := map[int]int{}
	for c := range codes {
		n[c]++
	}
	// 2 served at once + 4 queued; the other 6 overflow.
	if n[200] != 6 || n[503] != 6 {
		t.Fatalf("codes %v, want 6 served and 6 refused", n)
	}
	w := s.Window()
	if w.Served != 6 || w.P99 < 0.1 {
		t.Fatalf("window %+v: want 6 served, the last after queueing", w)
	}
	served, rejected := s.Totals()
	if served != 6 || rejected != 6 || !strings.Contains(srv.URL, "127.0.0.1") {
		t.Fatalf("totals %d %d", served, rejected)
	}
}
