package replay

import (
	"io"
	"os"
	"testing"

	"github.com/tollgate-dev/tollgate/accesslog"
)

// With MaxKeys, idle keys are retired and their records reused: the
// simulation itself is unchanged (every total, the accuracy comparison and
// the seam burst equal the unbounded run's), while the records held stay
// near the bound instead of growing with every distinct key.
func TestMaxKeysRetiresIdleKeysLosslessly(t *testing.T) {
	path := realLog
	specs := []string{
		"fixed_window:limit=20,window=30s",
		"sliding_window:limit=20,window=30s",
		"sliding_log:limit=20,window=30s",
		"token_bucket:rate=1/s,burst=20",
		"leaky_bucket:rate=1/s,burst=10,mode=police",
	}
	exact := runFile(t, path, Config{Suggest: true, Policies: policies(t, specs...)})

	const bound = 20
	cfg := Config{Suggest: true, MaxKeys: bound, Policies: policies(t, specs...)}
	if err := cfg.defaults(); err != nil {
		t.Fatal(err)
	}
	p, err := newPipeline(&cfg, accesslog.FormatCombined)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	src, err := newLineSource(f) // gunzips
	if err != nil {
		t.Fatal(err)
	}
	most := 0
	for {
		line, err := src.next()
		if err != nil {
			if err != io.EOF {
				t.Fatal(err)
			}
			break
		}
		p.line(src.line, line)
		most = max(most, len(p.sim.names))
	}
	p.finish()
	p.in.Simulated = p.sim.events
	bounded := buildReport(p.sim, &cfg, p.in)

	if bounded.Input.Retired == 0 {
		t.Fatal("nothing retired")
	}
	// The records ever allocated: the bound plus the keys active at once
	// (a minute's burst of this log), far below the distinct keys.
	if most > 6*bound || most >= exact.Input.Keys/2 {
		t.Errorf("%d records allocated for %d distinct keys with MaxKeys %d", most, exact.Input.Keys, bound)
	}
	for i, e := range exact.Policies {
		b := bounded.Policies[i]
		if b.Requests != e.Requests || b.Refused != e.Refused {
			t.Errorf("%s: bounded %d/%d, exact %d/%d", e.Name, b.Refused, b.Requests, e.Refused, e.Requests)
		}
		if (e.Accuracy == nil) != (b.Accuracy == nil) || e.Accuracy != nil && *e.Accuracy != *b.Accuracy {
			t.Errorf("%s: accuracy %+v, exact %+v", e.Name, b.Accuracy, e.Accuracy)
		}
		if (e.Seam == nil) != (b.Seam == nil) || e.Seam != nil && *e.Seam != *b.Seam {
			t.Errorf("%s: seam %+v, exact %+v", e.Name, b.Seam, e.Seam)
		}
		// Refusals are exact; they are only attributed to more records.
		if b.KeysAffected < e.KeysAffected {
			t.Errorf("%s: %d keys affected, fewer than the exact %d", e.Name, b.KeysAffected, e.KeysAffected)
		}
		if b.TopRefused[0].Key != e.TopRefused[0].Key {
			t.Errorf("%s: most refused %q, exact %q", e.Name, b.TopRefused[0].Key, e.TopRefused[0].Key)
		}
	}
	if bounded.PeakRates.PerSecond.Max != exact.PeakRates.PerSecond.Max || bounded.PeakRates.PerMinute.Max != exact.PeakRates.PerMinute.Max {
		t.Errorf("peak maxima %+v, exact %+v", bounded.PeakRates, exact.PeakRates)
	}
}
