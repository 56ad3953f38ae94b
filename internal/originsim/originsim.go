// Package originsim is an origin server that degrades like a real one,
// for the adaptive limits' tests and benchmarks: a fixed number of
// workers, a bounded queue in front of them, a service time that grows as
// the queue fills, 503 when the queue overflows, and its load (CPU as
// busy workers, queue depth) reported in response headers and on a
// Prometheus endpoint.
//
// Its capacity is about Workers/Service requests per second while the
// queue is empty, falling to Workers/(Service·(1+Growth)) when the queue
// is full.
package originsim

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/tollgate-dev/tollgate/adaptive"
)

// Config shapes a Server. Zero fields mean their defaults.
type Config struct {
	// Workers serve one request at a time each. Default 4.
	Workers int
	// Queue is how many requests may wait for a worker; more are
	// answered 503 at once. Default 64.
	Queue int
	// Service is a request's service time with an empty queue. Default
	// 5ms.
	Service time.Duration
	// Growth stretches the service time as the queue fills: Service ×
	// (1 + Growth × queued/Queue). Default 1 (twice as slow with a full
	// queue); negative means none.
	Growth float64
}

// Header names of the load the server reports on every response.
const (
	HeaderCPU   = "X-Origin-Cpu"   // busy workers, percent
	HeaderQueue = "X-Origin-Queue" // queue depth, percent of Queue
)

// Server is the simulated origin, an http.Handler: /metrics is its
// Prometheus endpoint, every other path is work.
type Server struct {
	cfg      Config
	workers  chan struct{}
	inSystem atomic.Int64 // waiting or being served
	busy     atomic.Int64
	served   atomic.Int64
	rejected atomic.Int64
	meter    *adaptive.Meter // time in the system of served requests
}

// New returns a server for cfg.
func New(cfg Config) *Server {
	if cfg.Workers <= 0 {
		cfg.Workers = 4
	}
	if cfg.Queue <= 0 {
		cfg.Queue = 64
	}
	if cfg.Service <= 0 {
		cfg.Service = 5 * time.Millisecond
	}
	if cfg.Growth == 0 {
		cfg.Growth = 1
	}
	cfg.Growth = max(cfg.Growth, 0)
	return &Server{cfg: cfg, workers: make(chan struct{}, cfg.Workers), meter: adaptive.NewMeter("")}
}

// Capacity is the requests per second the server serves with an empty
// queue.
func (s *Server) Capacity() float64 { return float64(s.cfg.Workers) / s.cfg.Service.Seconds() }

// ServeHTTP serves /metrics or a unit of work.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/metrics" {
		s.metrics(w)
		return
	}
	start := time.Now()
	n := s.inSystem.Add(1)
	defer s.inSystem.Add(-1)
	if n > int64(s.cfg.Workers+s.cfg.Queue) {
		s.rejected.Add(1)
		s.load(w)
		http.Error(w, "queue full", http.StatusServiceUnavailable)
		return
	}
	s.meter.Begin()
	select {
	case s.workers <- struct{}{}:
	case <-r.Context().Done():
		s.meter.End(time.Since(start), true, nil)
		return
	}
	s.busy.Add(1)
	queued := max(s.inSystem.Load()-int64(s.cfg.Workers), 0)
	d := time.Duration(float64(s.cfg.Service) * (1 + s.cfg.Growth*float64(queued)/float64(s.cfg.Queue)))
	t := time.NewTimer(d)
	select {
	case <-t.C:
	case <-r.Context().Done():
		t.Stop()
	}
	s.busy.Add(-1)
	<-s.workers
	s.load(w)
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, "served in %v\n", d)
	s.served.Add(1)
	s.meter.End(time.Since(start), false, nil)
}

// load writes the load headers.
func (s *Server) load(h http.ResponseWriter) {
	cpu, queue := s.loadPercent()
	h.Header().Set(HeaderCPU, strconv.FormatInt(cpu, 10))
	h.Header().Set(HeaderQueue, strconv.FormatInt(queue, 10))
}

func (s *Server) loadPercent() (cpu, queue int64) {
	cpu = s.busy.Load() * 100 / int64(s.cfg.Workers)
	queued := max(s.inSystem.Load()-int64(s.cfg.Workers), 0)
	return cpu, queued * 100 / int64(s.cfg.Queue)
}

// metrics writes the Prometheus text exposition.
func (s *Server) metrics(w http.ResponseWriter) {
	cpu, queue := s.loadPercent()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	fmt.Fprintf(w, "# HELP origin_cpu_percent Busy workers, percent.\n# TYPE origin_cpu_percent gauge\norigin_cpu_percent %d\n", cpu)
	fmt.Fprintf(w, "# HELP origin_queue_percent Queue depth, percent of its capacity.\n# TYPE origin_queue_percent gauge\norigin_queue_percent %d\n", queue)
	fmt.Fprintf(w, "# HELP origin_served_total Requests served.\n# TYPE origin_served_total counter\norigin_served_total %d\n", s.served.Load())
	fmt.Fprintf(w, "# HELP origin_rejected_total Requests answered 503, the queue full.\n# TYPE origin_rejected_total counter\norigin_rejected_total %d\n", s.rejected.Load())
}

// Window is what the server did since the last Window call.
type Window struct {
	// Served counts requests answered 200 (and those the client gave up
	// on while queued, as errors).
	Served int64
	// P99 and P50 are the quantiles of the served requests' time in the
	// server (queue wait included), in seconds; zero when none.
	P99, P50 float64
}

// Window closes the current window; call it from one goroutine.
func (s *Server) Window() Window {
	iv := s.meter.Roll()
	return Window{Served: iv.Exchanges - iv.Errors, P99: iv.Quantile(0.99), P50: iv.Quantile(0.5)}
}

// Totals returns the requests served and rejected so far.
func (s *Server) Totals() (served, rejected int64) { return s.served.Load(), s.rejected.Load() }

// InSystem is the requests waiting or being served now.
func (s *Server) InSystem() int64 { return s.inSystem.Load() }

// Serve runs s on addr until ctx ends.
func Serve(ctx context.Context, s *Server, addr string) error {
	srv := &http.Server{Addr: addr, Handler: s, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	if err := srv.ListenAndServe(); err != http.ErrServerClosed {
		return err
	}
	return nil
}
