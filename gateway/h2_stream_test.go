package gateway

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/racebuild"
)

const streamSize = 100 << 20 // 100 MiB

// zeros is an endless reader of zero bytes that allocates nothing per
// read.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// rssSampler samples the process's resident set while a transfer runs
// and reports the most it grew.
type rssSampler struct {
	base, peak atomic.Int64
	stop       chan struct{}
	done       sync.WaitGroup
}

func vmRSS() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func startRSS(t *testing.T) *rssSampler {
	if vmRSS() == 0 {
		t.Skip("no /proc/self/status")
	}
	s := &rssSampler{stop: make(chan struct{})}
	s.base.Store(vmRSS())
	s.done.Go(func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-tick.C:
				if r := vmRSS(); r > s.peak.Load() {
					s.peak.Store(r)
				}
			}
		}
	})
	return s
}

func (s *rssSampler) growth() int64 {
	close(s.stop)
	s.done.Wait()
	return s.peak.Load() - s.base.Load()
}

// 100 MiB up and 100 MiB down through the HTTP/2 path stream: the
// upstream reads the upload as it comes and the client the download, and
// the process's resident set grows by far less than the body.
func TestH2StreamsLargeBodiesWithoutBuffering(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 400 MiB")
	}
	// Not parallel: the resident set is the whole test process's.
	up := func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "POST" {
			n, err := io.Copy(io.Discard, r.Body)
			fmt.Fprintf(w, "%d %v", n, err)
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(streamSize))
		io.CopyN(w, zeros{}, streamSize)
	}
	h1 := h1Upstream(t, http.HandlerFunc(up))
	h2 := h2cUpstream(t, http.HandlerFunc(up))
	_, base := startH2Gateway(t, false, `rules:
  - {name: per-ip, policies: [{rate: 100/s}]}
routes:
  - {path: /h1/, upstream: "`+h1+`"}
  - {path: /h2/, upstream: "`+h2+`", protocol: http2}
`)
	c := h2cClient()
	paths := []string{"/h1/", "/h2/"}
	if racebuild.Enabled {
		// Four times slower under the race detector: the h2c upstream
		// alone (the HTTP/1.1 one is the same proxy code).
		paths = paths[1:]
	}
	for _, p := range paths {
		rss := startRSS(t)
		// Upload, chunked (no length): it cannot be sized in advance.
		resp, err := c.Post(base+p+"up", "application/octet-stream", io.LimitReader(zeros{}, streamSize))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != fmt.Sprintf("%d <nil>", streamSize) {
			t.Fatalf("%s upload: %d %q", p, resp.StatusCode, b)
		}
		resp, err = c.Get(base + p + "down")
		if err != nil {
			t.Fatal(err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if n != streamSize || err != nil {
			t.Fatalf("%s download: %d bytes, %v", p, n, err)
		}
		bound := int64(48 << 20)
		if racebuild.Enabled {
			bound = 128 << 20 // the race detector's shadow memory
		}
		if g := rss.growth(); g > bound {
			t.Errorf("%s: resident set grew by %d MiB moving 100 MiB each way", p, g>>20)
		} else {
			t.Logf("%s: resident set grew by %.1f MiB", p, float64(g)/(1<<20))
		}
	}
}
