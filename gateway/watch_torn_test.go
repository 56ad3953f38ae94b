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

// A file written in place whose writer paused (so the watcher saw one
// version for the settle period) and resumed just as the watcher read it
// for the reload is not loaded from that read: the reload is refused
// with stableread.ErrChanged, and the whole file is loaded once it has
// settled in turn.
func TestWatcherRefusesAFileChangedWhileRead(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	head := "reload: {settle: 1s}\nrules:\n  - {name: a, policies: [{rate: 1/s}]}\n"
	rest := "  - {name: b, policies: [{rate: 2/s}]}\n"
	if err := os.WriteFile(path, []byte(head+rest), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	w := newWatcher(cfg)
	t0 := time.Unix(1000, 0)
	// The writer truncates, writes the first rule, and pauses.
	if err := os.WriteFile(path, []byte(head), 0o644); err != nil {
		t.Fatal(err)
	}
	if data, changed := w.look(cfg, t0); changed != nil {
		t.Fatalf("just changed: %v %q", changed, data)
	}
	// It resumes while the settled version is read for the reload.
	w.afterRead = func(p string) {
		if p != path {
			return
		}
		w.afterRead = nil
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(rest); err != nil {
			t.Fatal(err)
		}
		later := time.Now().Add(time.Second) // a write's own later mtime, whatever the clock's grain
		os.Chtimes(path, later, later)
	}
	if data, changed := w.look(cfg, t0.Add(time.Second)); changed != nil {
		t.Fatalf("the half-written file read as the writer resumed was reloaded: %v\n%s", changed, data)
	}
	if len(w.torn) != 1 || !errors.Is(w.torn[0], stableread.ErrChanged) || !strings.Contains(w.torn[0].Error(), "c.yaml") {
		t.Fatalf("refusals recorded: %v, want one naming c.yaml", w.torn)
	}
	w.torn = w.torn[:0]
	// The whole file settles in turn and is reloaded.
	if _, changed := w.look(cfg, t0.Add(1100*time.Millisecond)); changed != nil {
		t.Fatalf("the whole file before it settled: %v", changed)
	}
	data, changed := w.look(cfg, t0.Add(2200*time.Millisecond))
	if len(changed) != 1 || string(data) != head+rest {
		t.Fatalf("after settling: %v %q, want the whole file", changed, data)
	}
	if len(w.torn) != 0 {
		t.Fatalf("refusals: %v", w.torn)
	}
}
