package gateway

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// chromiumPath finds a Chromium or Chrome to drive; scripts/test.sh
// installs Debian's chromium.
func chromiumPath() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// isLoopback reports whether raw is a URL on a loopback address, or one of
// the browser's own schemes that make no network request.
func isLoopback(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	switch u.Scheme {
	case "data", "blob", "about":
		return true
	}
	ip := net.ParseIP(u.Hostname())
	return ip != nil && ip.IsLoopback()
}

// networkGuard lets the browser reach loopback addresses only: every
// other request fails (BlockedByClient) and is recorded.
type networkGuard struct {
	mu      sync.Mutex
	allowed []string
	blocked []string
}

// start intercepts every request of the tab of ctx.
func (n *networkGuard) start(t *testing.T, ctx context.Context) {
	t.Helper()
	paused := chromedp.Events(ctx, fetch.RequestPaused)
	if _, err := chromedp.Call(ctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*"}}}); err != nil {
		t.Fatal(err)
	}
	go func() {
		for ev, err := range paused {
			if err != nil {
				return
			}
			go func() {
				n.mu.Lock()
				ok := isLoopback(ev.Request.URL)
				if ok {
					n.allowed = append(n.allowed, ev.Request.URL)
				} else {
					n.blocked = append(n.blocked, ev.Request.URL)
				}
				n.mu.Unlock()
				if ok {
					chromedp.Call(ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID})
				} else {
					chromedp.Call(ctx, fetch.FailRequest, fetch.FailRequestParams{RequestID: ev.RequestID, ErrorReason: network.ErrorReasonBlockedByClient})
				}
			}()
		}
	}()
}

func (n *networkGuard) lists() (allowed, blocked []string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.allowed...), append([]string(nil), n.blocked...)
}

// artefactDir is where the test writes its screenshot:
// $TOLLGATE_ARTIFACTS when set, else the test's temporary directory.
func artefactDir(t *testing.T) string {
	if d := os.Getenv("TOLLGATE_ARTIFACTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// TestDashboardInBrowser opens the dashboard in headless Chromium, with
// every non-loopback request blocked, while a client is refused: the page
// goes live, lists the refused key under its rule with its count and
// remaining quota, writes a key holding markup as text, lists a penalty
// in force, and the counts advance with more traffic. A screenshot is kept as an artefact.
func TestDashboardInBrowser(t *testing.T) {
	chrome := chromiumPath()
	if chrome == "" {
		t.Skip("no chromium on this machine (scripts/test.sh installs it)")
	}
	// dashRules, and a rule whose refusal starts a penalty of an hour
	// (on /ban only: per-key's counts are not touched).
	g, base := startDashGateway(t, "period: 200ms", dashRules+`  - name: banned
    key: header:X-Key
    match: {paths: [/ban]}
    policies: [{name: once, algorithm: token_bucket, rate: 1/h, burst: 1, penalty: 1h}]
`)
	admin := "http://" + g.AdminAddr().String()

	opts := []chromedp.ExecAllocatorOption{chromedp.ExecPath(chrome), chromedp.Headless, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.WindowSize(1280, 1400)}
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	guard := &networkGuard{}
	guard.start(t, ctx) // starts the browser
	tctx, cancelT := context.WithTimeout(ctx, 60*time.Second)
	defer cancelT()

	// Traffic before the page opens, and a key that is markup.
	if got := send(t, base, "flooder", 12); got != 10 {
		t.Fatalf("%d refused, want 10", got)
	}
	const markup = `<img src=x id=injected>`
	send(t, base, markup, 3)

	if err := chromedp.Do(tctx, chromedp.Navigate(admin+"/")); err != nil {
		t.Fatal(err)
	}
	// waitFor polls for an element in one evaluation: the page redraws
	// each frame, so a node found by id may be gone when next read.
	waitFor := func(sel string) {
		t.Helper()
		if _, err := chromedp.Run(tctx, chromedp.Poll[bool](`document.querySelector(`+strconv.Quote(sel)+`) !== null`,
			chromedp.WithPollingTimeout(20*time.Second))); err != nil {
			t.Fatalf("waiting for %s: %v", sel, err)
		}
	}
	row := `.rule[data-rule="per-key"] table.refused tr[data-key="flooder"]`
	waitFor(`#conn.up`)
	waitFor(row)
	// The page redraws each frame: read in one evaluation, never by a
	// node id that the next frame replaces.
	text := func(sel string) string {
		t.Helper()
		v, err := chromedp.Run(tctx, chromedp.Evaluate[string](`(document.querySelector(`+strconv.Quote(sel)+`) || {textContent: ""}).textContent`))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	count := func() int {
		t.Helper()
		s := text(row + ` td.count`)
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("count %q: %v", s, err)
		}
		return n
	}
	if n := count(); n != 10 {
		t.Errorf("flooder's refusals shown %d, want 10", n)
	}
	if rem := text(row + ` td.remaining`); rem != "0" {
		t.Errorf("flooder's remaining %q, want 0", rem)
	}
	// The markup key is a row of text; no element was made from it.
	waitFor(`.rule[data-rule="per-key"] table.refused tr[data-key="` + markup + `"]`)
	injected, err := chromedp.Run(tctx, chromedp.Evaluate[bool](`document.getElementById('injected') !== null`))
	if err != nil || injected {
		t.Errorf("markup in a key became an element (%v)", err)
	}
	// A penalty started: listed in force with its rule, policy, key and
	// time left (an hour, less the seconds the test took).
	for range 2 {
		req, _ := http.NewRequest("GET", base+"/ban", nil)
		req.Header.Set("X-Key", "mallory")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	pen := `#penalty-list tr[data-rule="banned"][data-key="mallory"]`
	waitFor(pen)
	if p, l := text(pen+` td.policy`), text(pen+` td.left`); p != "once" || !strings.HasPrefix(l, "59m") && l != "1h0m0s" {
		t.Errorf("penalty shown: policy %q, left %q; want once, about 1h", p, l)
	}
	// Live: frames keep coming, the chart exists, and new refusals show.
	frames := func() int {
		s, err := chromedp.Run(tctx, chromedp.Evaluate[string](`document.body.dataset.frames || "0"`))
		if err != nil {
			t.Fatal(err)
		}
		n, _ := strconv.Atoi(s)
		return n
	}
	f0 := frames()
	send(t, base, "flooder", 7)
	if _, err := chromedp.Run(tctx, chromedp.Poll[bool](`Number(document.querySelector('`+row+` td.count').textContent) >= 17`,
		chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatalf("the count did not advance to 17: %v (shown %d)", err, count())
	}
	if f1 := frames(); f1 <= f0 {
		t.Errorf("frames %d then %d: not live", f0, f1)
	}
	waitFor(`.series[data-rule="per-key"] svg.chart polyline.refused`)
	if words := text(`#words`); !containsAll(words, "per-key", "token_bucket rate 2/h burst 2") {
		t.Errorf("rules in words %q", words)
	}
	shot, err := chromedp.Run(tctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(artefactDir(t), "dashboard.png")
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)

	// Nothing the dashboard asked for was off loopback; and the guard is
	// in force: a navigation off loopback is blocked and recorded.
	allowed, blocked := guard.lists()
	if len(allowed) < 4 { // the page, its script and style, the event stream
		t.Errorf("the guard saw only %v: is it intercepting?", allowed)
	}
	for _, u := range blocked {
		t.Errorf("the page asked for %s, off loopback", u)
	}
	if err := chromedp.Do(tctx, chromedp.Navigate("http://192.0.2.1/")); err == nil {
		t.Error("a navigation off loopback succeeded")
	}
	if _, blocked = guard.lists(); len(blocked) != 1 || blocked[0] != "http://192.0.2.1/" {
		t.Errorf("blocked %v, want the one navigation off loopback", blocked)
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
