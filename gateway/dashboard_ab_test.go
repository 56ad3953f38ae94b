package gateway

import (
	"bufio"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// processCPU is the CPU time the process has used, all threads.
func processCPU(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestDashboardCostAB measures, in one run, the process CPU time per
// refused request on the gateway's request path (serve, in-process, one
// client address refused every time) for: the dashboard off; on with no
// page open ("closed"); on with a page open at a 100ms period (ten times
// the default's frames, its reader's CPU counted too, on a gateway of
// its own); and on with the
// refusal log writing every refusal it may. Batches of each alternate in
// ABBA order over many rounds; the medians and the ratios to "closed" are
// logged. The refusal log's output is checked to be bounded. It runs only
// with TOLLGATE_AB=1 (a measurement, not a check):
//
//	TOLLGATE_AB=1 go test -run TestDashboardCostAB -v ./gateway/
func TestDashboardCostAB(t *testing.T) {
	if os.Getenv("TOLLGATE_AB") == "" {
		t.Skip("a measurement: set TOLLGATE_AB=1 to run it")
	}
	const rounds, batch = 100, 8000
	logPath := filepath.Join(t.TempDir(), "refusals.log")
	type variant struct {
		name string
		g    *Gateway
		open bool // a page is open on it
	}
	mk := func(dash, extra string) *Gateway {
		g, _ := startDashGateway(t, dash, demoRoute+alwaysRefuse+extra)
		return g
	}
	open := mk("period: 100ms", "")
	vs := []variant{
		{name: "off", g: mk("enabled: false", "")},
		{name: "closed", g: mk("period: 100ms", "")},
		{name: "open", g: open, open: true},
		{name: "log", g: mk("", "refusal_log: {path: "+logPath+", interval: 1s}\n")},
	}
	// The open page stays open all along, on a gateway of its own.
	resp, err := http.Get("http://" + open.AdminAddr().String() + "/dashboard/events")
	if err != nil {
		t.Fatal(err)
	}
	framesRead := make(chan int)
	go func() {
		n := 0
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 4<<20)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "event: frame") {
				n++
			}
		}
		framesRead <- n
	}()
	var req fasthttp.Request
	req.SetRequestURI("http://example.com/items/42")
	addr := &net.TCPAddr{IP: net.IPv4(203, 0, 113, 7), Port: 5555}
	var ctx fasthttp.RequestCtx
	run := func(g *Gateway) {
		for range batch {
			serveOnce(g, &ctx, &req, addr)
		}
		if ctx.Response.StatusCode() != 429 {
			t.Fatalf("status %d", ctx.Response.StatusCode())
		}
	}
	for _, v := range vs { // warm up
		run(v.g)
	}
	cpu := map[string][]float64{}
	start := time.Now()
	for r := range rounds {
		order := slices.Clone(vs)
		if r%2 == 1 {
			slices.Reverse(order)
		}
		for _, v := range order {
			c0 := processCPU(t)
			run(v.g)
			c1 := processCPU(t)
			cpu[v.name] = append(cpu[v.name], float64(c1-c0)/batch)
		}
	}
	resp.Body.Close()
	frames := <-framesRead
	median := func(xs []float64) float64 {
		s := slices.Clone(xs)
		slices.Sort(s)
		return (s[(len(s)-1)/2] + s[len(s)/2]) / 2
	}
	base := median(cpu["closed"])
	for _, v := range vs {
		m, low := median(cpu[v.name]), slices.Min(cpu[v.name])
		t.Logf("%-6s %7.0f ns CPU per refusal (median of %d batches of %d), %.3f× closed; least %5.0f ns, %.3f× closed's least",
			v.name, m, rounds, batch, m/base, low, low/slices.Min(cpu["closed"]))
	}
	if frames == 0 {
		t.Fatal("the open page received no frame")
	}
	for _, v := range vs {
		v.g.Close()
	}
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Count(string(b), `"msg":"limiting requests"`)
	sums := strings.Count(string(b), `"msg":"limiting requests: summary"`)
	refused := (rounds + 1) * batch
	elapsed := time.Since(start)
	t.Logf("open page: %d frames; refusal log: %d refusals at %.0f/s while measured, %d lines and %d summaries (%d bytes) over %v",
		frames, refused, float64(rounds*batch)/(elapsed.Seconds()/float64(len(vs))), lines, sums, len(b), elapsed.Round(time.Second))
	if limit := 100 * (int(elapsed/time.Second) + 2); lines > limit {
		t.Errorf("%d refusal lines, above 100 per second (%d)", lines, limit)
	}
	t.Logf("load average: %s", loadAverage())
}

func loadAverage() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
