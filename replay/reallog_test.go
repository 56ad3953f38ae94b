package replay

import (
	"context"
	"os"
	"testing"
	"time"
)

// policies parses --policy values or fails the test.
func policies(t testing.TB, specs ...string) []Policy {
	t.Helper()
	var ps []Policy
	for _, s := range specs {
		p, err := ParsePolicy(s)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	return ps
}

func runFile(t testing.TB, path string, cfg Config) *Report {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep, err := Run(context.Background(), f, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func ts(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// want is one policy's expected figures.
type want struct {
	refused, keys int64
	topKey        string
	topRefused    int64
	topFirst      string
	suggest       int64
}

func checkPolicy(t *testing.T, p PolicyReport, w want) {
	t.Helper()
	if p.Refused != w.refused || int64(p.KeysAffected) != w.keys {
		t.Errorf("%s: refused %d, keys affected %d; want %d, %d", p.Name, p.Refused, p.KeysAffected, w.refused, w.keys)
	}
	if len(p.TopRefused) == 0 {
		t.Errorf("%s: no top refused keys", p.Name)
		return
	}
	top := p.TopRefused[0]
	if top.Key != w.topKey || top.Refused != w.topRefused || !top.FirstRefused.Equal(ts(w.topFirst)) {
		t.Errorf("%s: top refused %s ×%d first at %v; want %s ×%d first at %s",
			p.Name, top.Key, top.Refused, top.FirstRefused, w.topKey, w.topRefused, w.topFirst)
	}
	if w.suggest > 0 && (p.Suggestion == nil || p.Suggestion.ForTop != w.suggest) {
		t.Errorf("%s: suggestion %+v; want %d for the top keys", p.Name, p.Suggestion, w.suggest)
	}
}

// The expected figures in these tests were computed by
// testdata/reference.py, an independent Python program (its own date
// parsing; each algorithm written naively from its definition; the
// suggestions found by binary search over the limit), run as
//
//	python3 testdata/reference.py testdata/apache_excerpt.log 20 30
//	gunzip -k testdata/apache_combined_10k.log.gz
//	python3 testdata/reference.py testdata/apache_combined_10k.log [20 30]
//
// and copied here by hand. They are not read back from this package.

func TestRealLogExcerpt(t *testing.T) {
	rep := runFile(t, "testdata/apache_excerpt.log", Config{
		Suggest: true,
		Policies: policies(t,
			"fixed_window:limit=20,window=30s",
			"sliding_log:limit=20,window=30s",
			"sliding_window:limit=20,window=30s",
			"token_bucket:rate=1/s,burst=20",
			"leaky_bucket:rate=1/s,burst=10,mode=police",
		),
	})
	in := rep.Input
	if in.Lines != 373 || in.Simulated != 373 || in.Keys != 30 || in.Malformed != 0 || in.Late != 0 {
		t.Errorf("input %+v; want 373 lines simulated, 30 keys, nothing malformed or late", in)
	}
	if len(rep.Busiest) < 3 || rep.Busiest[0].Key != "75.97.9.59" || rep.Busiest[0].Requests != 273 ||
		rep.Busiest[1].Key != "83.149.9.216" || rep.Busiest[1].Requests != 23 {
		t.Errorf("busiest %+v; want 75.97.9.59 (273), 83.149.9.216 (23)", rep.Busiest)
	}
	const k = "75.97.9.59"
	checkPolicy(t, rep.Policies[0], want{117, 1, k, 117, "2015-05-18T08:05:10Z", 60})
	checkPolicy(t, rep.Policies[1], want{117, 1, k, 117, "2015-05-18T08:05:10Z", 62})
	checkPolicy(t, rep.Policies[2], want{118, 1, k, 118, "2015-05-18T08:05:10Z", 61})
	checkPolicy(t, rep.Policies[3], want{35, 1, k, 35, "2015-05-18T08:05:22Z", 49})
	checkPolicy(t, rep.Policies[4], want{53, 1, k, 53, "2015-05-18T08:05:10Z", 48})

	// The busiest client's verdict is the top refused key's here.
	if v := rep.Policies[3].BusiestVerdict; v.Key != k || v.Refused != 35 || !v.FirstRefused.Equal(ts("2015-05-18T08:05:22Z")) {
		t.Errorf("token bucket busiest verdict %+v", v)
	}
	seam := rep.Policies[0].Seam
	if seam == nil || seam.Key != k || seam.Admitted != 26 || seam.Limit != 20 ||
		!seam.From.Equal(ts("2015-05-18T09:05:05Z")) || !seam.To.Equal(ts("2015-05-18T09:05:34Z")) {
		t.Errorf("seam %+v; want %s admitted 26 of limit 20 from 09:05:05 to 09:05:34", seam, k)
	}
	acc := rep.Policies[2].Accuracy
	if acc == nil || acc.Decisions != 373 || acc.Differ != 43 || acc.FalseAllow != 21 || acc.FalseRefuse != 22 {
		t.Errorf("accuracy %+v; want 43 of 373 differ (21 false allows, 22 false refusals)", acc)
	}
	if acc != nil && acc.ExactRefused != 117 {
		t.Errorf("accuracy: exact log refused %d; want 117", acc.ExactRefused)
	}
	if pr := rep.PeakRates; pr.PerSecond.Max != 7 || pr.PerMinute.Max != 108 {
		t.Errorf("peaks: per second max %d, per minute max %d; want 7, 108", pr.PerSecond.Max, pr.PerMinute.Max)
	}
	if b := rep.Busiest[0]; b.PeakPerSec != 7 || b.PeakPerMin != 108 {
		t.Errorf("busiest key's peaks %d/s %d/min; want 7, 108", b.PeakPerSec, b.PeakPerMin)
	}
	if b := rep.Busiest[1]; b.PeakPerSec != 2 || b.PeakPerMin != 23 {
		t.Errorf("second key's peaks %d/s %d/min; want 2, 23", b.PeakPerSec, b.PeakPerMin)
	}
}

// realLog is the full 10,000-line log, gzipped (see testdata/README.md).
const realLog = "testdata/apache_combined_10k.log.gz"

func TestRealLogFull(t *testing.T) {
	rep := runFile(t, realLog, Config{
		Suggest: true,
		Policies: policies(t,
			"fixed_window:limit=60,window=1m",
			"sliding_log:limit=60,window=1m",
			"fixed_window:limit=20,window=30s",
			"sliding_log:limit=20,window=30s",
			"sliding_window:limit=20,window=30s",
			"token_bucket:rate=1/s,burst=20",
			"leaky_bucket:rate=1/s,burst=10,mode=police",
		),
	})
	if in := rep.Input; in.Lines != 10000 || in.Simulated != 10000 || in.Keys != 1753 {
		t.Errorf("input %+v; want 10000 lines, 1753 keys", in)
	}
	if b := rep.Busiest[0]; b.Key != "66.249.73.135" || b.Requests != 482 || b.PeakPerSec != 2 || b.PeakPerMin != 15 {
		t.Errorf("busiest %+v; want 66.249.73.135, 482 requests, peaks 2/s 15/min", b)
	}
	const k, k2 = "75.97.9.59", "130.237.218.86"
	checkPolicy(t, rep.Policies[0], want{87, 2, k, 72, "2015-05-18T08:05:30Z", 108})
	checkPolicy(t, rep.Policies[1], want{87, 2, k, 72, "2015-05-18T08:05:30Z", 108})
	checkPolicy(t, rep.Policies[2], want{254, 14, k, 117, "2015-05-18T08:05:10Z", 60})
	checkPolicy(t, rep.Policies[3], want{287, 18, k, 117, "2015-05-18T08:05:10Z", 62})
	sw := rep.Policies[4]
	if sw.Refused != 279 || sw.Suggestion == nil || sw.Suggestion.ForTop != 61 {
		t.Errorf("sliding window: refused %d, suggestion %+v; want 279, 61", sw.Refused, sw.Suggestion)
	}
	if a := sw.Accuracy; a == nil || a.Differ != 144 || a.FalseAllow != 76 || a.FalseRefuse != 68 {
		t.Errorf("sliding window accuracy %+v; want 144 differ (76 false allows, 68 false refusals)", a)
	}
	checkPolicy(t, rep.Policies[5], want{35, 1, k, 35, "2015-05-18T08:05:22Z", 49})
	checkPolicy(t, rep.Policies[6], want{62, 2, k, 53, "2015-05-18T08:05:10Z", 48})
	if tr := rep.Policies[2].TopRefused; len(tr) < 2 || tr[1].Key != k2 || tr[1].Refused != 90 || !tr[1].FirstRefused.Equal(ts("2015-05-19T13:05:22Z")) {
		t.Errorf("fixed window 20/30s second refused key %+v; want %s ×90 first at 2015-05-19T13:05:22Z", tr, k2)
	}
	if s := rep.Policies[2].Seam; s == nil || s.Key != "50.139.66.106" || s.Admitted != 28 ||
		!s.From.Equal(ts("2015-05-17T23:05:19Z")) || !s.To.Equal(ts("2015-05-17T23:05:47Z")) {
		t.Errorf("seam %+v; want 50.139.66.106 admitted 28 from 23:05:19 to 23:05:47", s)
	}
}
