package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Answers the gateway makes itself never feed the origin signals: one
// client's malformed chunked bodies (400), bodies over
// listen.max_request_body (413) and requests it abandons before the
// answer leave the error_rate signal at the origin's own rate, and the
// adaptive factor at 1, on both data paths. (Before, on the fasthttp
// path each 400 and 413 counted as an upstream failure and the factor
// fell to its floor; the net/http path measured nothing at all.)
func TestE2EClientErrorsLeaveOriginSignalsAlone(t *testing.T) {
	for _, h2 := range []string{"off", "on"} {
		t.Run("http2="+h2, func(t *testing.T) { clientErrorFlood(t, h2) })
	}
}

func clientErrorFlood(t *testing.T, http2 string) {
	var honest, honestFailed atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/fail":
			honest.Add(1)
			honestFailed.Add(1)
			w.WriteHeader(http.StatusInternalServerError)
		case "/ok":
			honest.Add(1)
		case "/slow":
			select {
			case <-time.After(300 * time.Millisecond):
			case <-r.Context().Done():
			}
		default:
			io.Copy(io.Discard, r.Body)
		}
		io.WriteString(w, "origin\n")
	}))
	defer srv.Close()
	p := startServe(t, `listen: {addr: "127.0.0.1:0", http2: `+http2+`, max_request_body: 1024}
admin: {addr: "127.0.0.1:0"}
reload: {watch: false}
routes:
  - {path: /, upstream: "`+srv.URL+`"}
adaptive:
  origin:
    upstream: "`+srv.URL+`"
    interval: 1s
    signals:
      - {measure: error_rate, threshold: 15%}
rules:
  - name: all
    key: global
    policies:
      - {rate: 2000/s, burst: 2000, adaptive: origin}
`)
	const signal = `tollgate_adaptive_signal{controller="origin",signal="error_rate"}`
	const factor = `tollgate_adaptive_factor{controller="origin"}`

	// The honest client: 40 requests a second, one in 25 answered 500
	// by the origin (4%), over HTTP/1.1 on the fasthttp listener and
	// over h2c on the net/http one.
	tr := &http.Transport{Protocols: new(http.Protocols)}
	if http2 == "on" {
		tr.Protocols.SetUnencryptedHTTP2(true)
	} else {
		tr.Protocols.SetHTTP1(true)
	}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	ctx, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	var wg sync.WaitGroup
	var honestStatus sync.Map // status → count, as the honest client saw them
	wg.Go(func() {
		tick := time.NewTicker(25 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ctx.Err() == nil; i++ {
			path := "/ok"
			if i%25 == 24 {
				path = "/fail"
			}
			if resp, err := hc.Get(p.url(path)); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				n, _ := honestStatus.LoadOrStore(resp.StatusCode, new(atomic.Int64))
				n.(*atomic.Int64).Add(1)
			}
			select {
			case <-ctx.Done():
			case <-tick.C:
			}
		}
	})
	// The other client: 20 requests a second the gateway answers
	// itself, over HTTP/1.1 on both listeners (and, on the net/http
	// one, over h2c too).
	var attacks, answered atomic.Int64
	raw := func(req string, abandon bool) {
		c, err := net.DialTimeout("tcp", p.addr, time.Second)
		if err != nil {
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := io.WriteString(c, req); err != nil {
			return
		}
		attacks.Add(1)
		if abandon {
			time.Sleep(30 * time.Millisecond) // the request reached the upstream
			return
		}
		line, _ := bufio.NewReader(c).ReadString('\n')
		if strings.HasPrefix(line, "HTTP/1.1 4") {
			answered.Add(1)
		}
	}
	const head = "POST /upload HTTP/1.1\r\nHost: api\r\nTransfer-Encoding: chunked\r\n\r\n"
	malformed := head + "5\r\nhello\r\nzz\r\n"
	oversized := head + "800\r\n" + strings.Repeat("x", 0x800) + "\r\n0\r\n\r\n"
	const abandoned = "GET /slow HTTP/1.1\r\nHost: api\r\n\r\n"
	wg.Go(func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ctx.Err() == nil; i++ {
			switch i % 4 {
			case 0, 1:
				raw(malformed, false)
			case 2:
				if http2 == "on" && i%8 == 2 {
					// A stream's body over the limit: 413.
					req, _ := http.NewRequest("POST", p.url("/upload"), strings.NewReader(strings.Repeat("x", 2048)))
					if resp, err := hc.Do(req); err == nil {
						resp.Body.Close()
						attacks.Add(1)
						if resp.StatusCode == http.StatusRequestEntityTooLarge {
							answered.Add(1)
						}
					}
				} else {
					raw(oversized, false)
				}
			case 3:
				if http2 == "on" {
					// A stream reset before the answer.
					rctx, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
					req, _ := http.NewRequestWithContext(rctx, "GET", p.url("/slow"), nil)
					if resp, err := hc.Do(req); err == nil {
						resp.Body.Close()
					}
					cancel()
					attacks.Add(1)
				} else {
					raw(abandoned, true)
				}
			}
			select {
			case <-ctx.Done():
			case <-tick.C:
			}
		}
	})
	// The signal and the factor, as the admin listener shows them,
	// every 100ms (each of the controller's steps is seen).
	var readings []float64
	lowest := 1.0
	for ctx.Err() == nil {
		time.Sleep(100 * time.Millisecond)
		if v, err := strconv.ParseFloat(p.metric(signal), 64); err == nil {
			readings = append(readings, v)
		}
		if f, err := strconv.ParseFloat(p.metric(factor), 64); err == nil {
			lowest = min(lowest, f)
		}
	}
	wg.Wait()
	highest, sum := 0.0, 0.0
	for _, v := range readings {
		highest = max(highest, v)
		sum += v
	}
	mean := sum / float64(max(len(readings), 1))
	real := 100 * float64(honestFailed.Load()) / float64(max(honest.Load(), 1))
	var seen []string
	honestStatus.Range(func(k, v any) bool {
		seen = append(seen, strconv.Itoa(k.(int))+"×"+strconv.FormatInt(v.(*atomic.Int64).Load(), 10))
		return true
	})
	t.Logf("honest: %d at the origin, %.1f%% answered 500 by it (client saw %v); other client: %d requests, %d answered 4xx by the gateway; error_rate readings: mean %.1f%%, highest %.1f%% (%d samples); lowest factor %.2f",
		honest.Load(), real, seen, attacks.Load(), answered.Load(), mean, highest, len(readings), lowest)
	if honest.Load() < 80 || attacks.Load() < 40 {
		t.Fatalf("too little traffic to judge: %d honest, %d others", honest.Load(), attacks.Load())
	}
	if lowest != 1 {
		t.Errorf("the adaptive factor fell to %.2f: answers the gateway made itself lowered every client's limit", lowest)
	}
	// One in 25 honest requests fails at the origin: each 1s step reads
	// 0% to 5% (15% would take fewer than 7 honest requests in a
	// second, against 40 sent), their mean about 4%; the gateway-made
	// answers counted as failures read about 30%.
	if highest >= 15 {
		t.Errorf("error_rate read %.1f%% with the origin at %.1f%%: the gateway's own answers were counted", highest, real)
	}
	if mean < real/4 {
		t.Errorf("error_rate read %.1f%% on average with the origin at %.1f%%: the upstream's answers were not measured", mean, real)
	}
}
