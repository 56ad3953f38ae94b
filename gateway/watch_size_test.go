package gateway

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/config"
	"github.com/tollgate-dev/tollgate/internal/stableread"
)

// A watched file larger than its bound (config.MaxFileBytes for the
// configuration, config.MaxListFileBytes for a list file) is not read:
// the reload is refused once for that version, with the bound named, and
// the running configuration keeps serving (nothing is reloaded). The
// files are sparse: os.Truncate makes them big without writing them.
func TestWatcherRefusesAFileLargerThanItsBound(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	keys := filepath.Join(dir, "keys.txt")
	yaml := "reload: {settle: 1s}\nrules: [{name: a, key: [header:K], except: [{keys_file: keys.txt}], policies: [{rate: 1/s}]}]\n"
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keys, []byte("k-internal\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	w := newWatcher(cfg)
	t0 := time.Unix(1000, 0)
	look := func(d time.Duration) []string {
		t.Helper()
		_, changed := w.look(cfg, t0.Add(d))
		return changed
	}
	refusals := func(want int) {
		t.Helper()
		if len(w.torn) != want {
			t.Fatalf("%d refusals %v, want %d", len(w.torn), w.torn, want)
		}
		for _, err := range w.torn {
			if !errors.Is(err, stableread.ErrTooLarge) {
				t.Errorf("refusal %v: not ErrTooLarge", err)
			}
		}
		w.torn = w.torn[:0]
	}

	if err := os.Truncate(keys, config.MaxListFileBytes+1); err != nil {
		t.Fatal(err)
	}
	for i := range 3 { // refused once, however long it stays
		if c := look(time.Duration(i) * 2 * time.Second); c != nil {
			t.Fatalf("a keys file over its bound is a change: %v", c)
		}
		refusals(map[bool]int{true: 1, false: 0}[i == 0])
	}
	if err := os.Truncate(keys, config.MaxListFileBytes+2); err != nil { // another version: said again
		t.Fatal(err)
	}
	look(7 * time.Second)
	refusals(1)

	if err := os.Truncate(path, config.MaxFileBytes+1); err != nil {
		t.Fatal(err)
	}
	if c := look(8 * time.Second); c != nil {
		t.Fatalf("a configuration file over its bound is a change: %v", c)
	}
	refusals(1)
	if _, err := config.Load(path); err == nil || !strings.Contains(err.Error(), "larger than 16 MiB") {
		t.Errorf("Load of a configuration file over its bound: %v", err)
	}

	// Back under the bound: a change as any other, reloaded once settled.
	if err := os.WriteFile(keys, []byte("k-internal\nk-other\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	look(9 * time.Second)
	if c := look(11 * time.Second); len(c) != 2 || filepath.Base(c[1]) != "keys.txt" {
		t.Fatalf("the files back under their bounds: changed %v, want c.yaml (rewritten) and keys.txt", c)
	}
	refusals(0)
}
