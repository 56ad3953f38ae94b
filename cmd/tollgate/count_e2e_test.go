package main

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/redistest"
)

// loginOrigin answers POST /login after a hold: 200 for the right
// password (X-Password: right), 401 for any other. It counts the
// requests it sees and the most it held at once.
type loginOrigin struct {
	srv                   *httptest.Server
	seen, failed, ok      atomic.Int64
	inFlight, maxInFlight atomic.Int64
}

func newLoginOrigin(t *testing.T, hold time.Duration) *loginOrigin {
	o := &loginOrigin{}
	o.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.seen.Add(1)
		n := o.inFlight.Add(1)
		for {
			m := o.maxInFlight.Load()
			if n <= m || o.maxInFlight.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(hold)
		o.inFlight.Add(-1)
		if r.Header.Get("X-Password") == "right" {
			o.ok.Add(1)
			w.WriteHeader(http.StatusOK)
			return
		}
		o.failed.Add(1)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	t.Cleanup(o.srv.Close)
	return o
}

// The acceptance's concurrency test, through tollgate serve: 64
// concurrent wrong passwords against a rule that counts only 401s, limit
// 5 per 15 minutes with a 15-minute penalty, on the memory store and on
// Redis (strict), over HTTP/1.1 (the fasthttp path) and HTTP/2 (h2c, the
// net/http path). A correct login is never charged; of the wrong ones at
// most 5 are admitted however many are in flight (a counting rule
// decides before the answer and charges after it, and each request it
// admits reserves its cost on this gateway until then); serial wrong
// passwords then take exactly what is left; after that the key is
// refused with the penalty's Retry-After, the refusal log says it was a
// penalty and the metrics count the charges and the penalty. Without a
// penalty (memory, HTTP/1.1) the key is refused after the burst until
// the bucket refills.
func TestE2ECountingLoginUnderConcurrency(t *testing.T) {
	tollgateBinary(t)
	var redisAddr string
	if _, err := exec.LookPath("redis-server"); err == nil {
		redisAddr = redistest.Start(t).Addr
	}
	for _, store := range []string{"memory", "redis"} {
		for _, proto := range []string{"http1", "http2"} {
			t.Run(store+"/"+proto, func(t *testing.T) {
				if store == "redis" && redisAddr == "" {
					t.Skip("redis-server is not installed")
				}
				countingLogin(t, store, proto, redisAddr, true)
			})
		}
	}
	// Without a penalty the key is refused after the burst too, until
	// the bucket gives it a token back (one each 3 minutes).
	t.Run("memory/http1/no penalty", func(t *testing.T) { countingLogin(t, "memory", "http1", "", false) })
}

func countingLogin(t *testing.T, store, proto, redisAddr string, penalty bool) {
	origin := newLoginOrigin(t, 50*time.Millisecond)
	dir := t.TempDir()
	refusals := filepath.Join(dir, "refusals.log")
	http2 := "off"
	if proto == "http2" {
		http2 = "on"
	}
	cfg := `listen: {addr: "127.0.0.1:0", http2: ` + http2 + `}
admin: {addr: "127.0.0.1:0"}
reload: {watch: false}
routes: [{path: /, upstream: "` + origin.srv.URL + `"}]
refusal_log: {path: "` + refusals + `", keys: hash, max_lines: 1000, interval: 1h}
rules:
  - name: login
    match: {methods: [POST], paths: [/login]}
    count: {statuses: ["401"]}
    policies: [{name: failed, algorithm: token_bucket, rate: 5/15m, burst: 5, penalty: 15m}]
`
	if !penalty {
		cfg = strings.Replace(cfg, ", penalty: 15m", "", 1)
	}
	if store == "redis" {
		cfg += "store: {redis: {url: \"redis://" + redisAddr + "\", prefix: \"" + proto + ":\", timeout: 2s}}\non_error: closed\n"
	}
	p := startServe(t, cfg)

	tr := &http.Transport{Protocols: new(http.Protocols), MaxConnsPerHost: 0, MaxIdleConnsPerHost: 64}
	if proto == "http2" {
		tr.Protocols.SetUnencryptedHTTP2(true)
	} else {
		tr.Protocols.SetHTTP1(true)
	}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	login := func(password string) (*http.Response, error) {
		req, _ := http.NewRequest(http.MethodPost, p.url("/login"), strings.NewReader("user=alice"))
		req.Header.Set("X-Password", password)
		resp, err := hc.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return resp, err
	}

	// A user who logs in, more often than the limit: never charged.
	for i := range 8 {
		resp, err := login("right")
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("correct login %d: %d; want 200 (a successful login is never charged)", i+1, resp.StatusCode)
		}
	}

	// 64 wrong passwords at once, sent over about 130 ms (2 ms apart)
	// so that the first answers and their charges come while the
	// others arrive.
	const burst = 64
	var wg sync.WaitGroup
	var admitted401, refused429, other atomic.Int64
	// In flight: sent and not yet answered, as the clients see it. A
	// request is charged before its answer goes out, so every admitted
	// request not yet charged when another is decided is in flight
	// then: without the gateway's reservations the bound would be 5 +
	// in flight; with them it is 5.
	var inFlight, peakInFlight atomic.Int64
	start := make(chan struct{})
	for i := range burst {
		wg.Go(func() {
			<-start
			time.Sleep(time.Duration(i) * 2 * time.Millisecond)
			n := inFlight.Add(1)
			for m := peakInFlight.Load(); n > m && !peakInFlight.CompareAndSwap(m, n); m = peakInFlight.Load() {
			}
			resp, err := login("wrong")
			inFlight.Add(-1)
			switch {
			case err != nil:
				other.Add(1)
				t.Errorf("wrong login: %v", err)
			case resp.StatusCode == http.StatusUnauthorized:
				admitted401.Add(1)
			case resp.StatusCode == http.StatusTooManyRequests:
				refused429.Add(1)
			default:
				other.Add(1)
				t.Errorf("wrong login: %d", resp.StatusCode)
			}
		})
	}
	close(start)
	wg.Wait()
	admitted, peak := origin.failed.Load(), peakInFlight.Load()
	t.Logf("%s over %s, penalty %v: %d wrong passwords, %d admitted (401), %d refused (429); at most %d in flight at once (%d at the origin)",
		store, proto, penalty, burst, admitted, refused429.Load(), peak, origin.maxInFlight.Load())
	if admitted != admitted401.Load() || admitted+refused429.Load() != burst {
		t.Fatalf("the origin saw %d wrong passwords, the clients %d answered 401 and %d refused; want them to add up to %d",
			admitted, admitted401.Load(), refused429.Load(), burst)
	}
	if admitted > 5 {
		t.Errorf("%d admitted with up to %d in flight; want at most the limit, 5", admitted, peak)
	}
	if admitted < 1 {
		t.Errorf("none admitted; want the first at least")
	}
	// A peek that overlaps charges may count one of them both in the
	// store and as still reserved, so the burst may get fewer than 5:
	// serial wrong passwords take what is left, exactly.
	failures := admitted
	for ; failures < 5; failures++ {
		resp, err := login("wrong")
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("serial wrong password %d (after %d admitted): %d; want it admitted (401)", failures+1, admitted, resp.StatusCode)
		}
	}
	if n := origin.failed.Load(); n != 5 {
		t.Fatalf("the origin saw %d wrong passwords; want the limit, 5", n)
	}

	// After the burst the key is refused, with the penalty's time left,
	// and a correct password too: the penalty is the key's.
	for _, pw := range []string{"wrong", "right"} {
		resp, err := login(pw)
		if err != nil {
			t.Fatal(err)
		}
		ra, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		lo, hi := 15*60-30, 15*60
		if !penalty {
			lo, hi = 1, 3*60 // the next token
		}
		if resp.StatusCode != http.StatusTooManyRequests || ra < lo || ra > hi {
			t.Fatalf("after the burst (password %s): %d, Retry-After %q; want 429 with a Retry-After of %d to %d s",
				pw, resp.StatusCode, resp.Header.Get("Retry-After"), lo, hi)
		}
	}
	if n := origin.seen.Load(); n != int64(8)+failures {
		t.Errorf("the origin saw %d requests; want the 8 correct logins and the %d wrong ones admitted", n, failures)
	}

	// The metrics: the charges made after the answer (one per 401), the
	// penalty started, refusals under it told apart.
	if got := p.metric(`tollgate_counted_total{rule="login"}`); got != strconv.FormatInt(failures, 10) {
		t.Errorf("tollgate_counted_total = %q; want %d (one per 401; the 200s are not charged)", got, failures)
	}
	if !penalty {
		if got := p.metric(`tollgate_penalties_total`); got != "" {
			t.Errorf("tollgate_penalties_total = %q without a penalty; want no series", got)
		}
	} else {
		if got := p.metric(`tollgate_penalties_total{rule="login"}`); got != "1" {
			t.Errorf("tollgate_penalties_total = %q; want 1", got)
		}
		if got, _ := strconv.Atoi(p.metric(`tollgate_penalty_refusals_total{policy="failed",rule="login"}`)); got < 2 {
			t.Errorf("tollgate_penalty_refusals_total = %d; want at least the 2 after the burst", got)
		}
	}

	// The refusal log says which refusals were a penalty's.
	p.signal(os.Interrupt)
	p.wait(10 * time.Second)
	f, err := os.Open(refusals)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var penaltyLines, lines int
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, "127.0.0.1") {
			t.Fatalf("the refusal log shows a raw key: %s", line)
		}
		if strings.Contains(line, `"msg":"limiting requests"`) {
			lines++
		}
		if strings.Contains(line, `"penalty":"1`) && strings.Contains(line, `"policy":"failed"`) {
			penaltyLines++
		}
	}
	switch {
	case penalty && penaltyLines < 2:
		t.Errorf("%d refusal log lines with the penalty's time left; want at least 2", penaltyLines)
	case !penalty && (penaltyLines != 0 || lines < 2):
		t.Errorf("%d refusal log lines, %d with a penalty; want the refusals, none with a penalty", lines, penaltyLines)
	}
}
