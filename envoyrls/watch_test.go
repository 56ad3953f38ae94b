package envoyrls

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A changed directory is loaded once it has settled; a bad file keeps
// the running configuration and says where it is wrong; a fixed file is
// loaded again.
func TestWatcherReloadsSettledChangesAndKeepsTheOldOnError(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.yaml"), "domain: a\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1}\n")
	srcs, err := ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	running := mustBuild(t, srcs...)
	var lastErr error
	loads := 0
	w := NewWatcher(WatchConfig{Dir: dir, Settle: time.Second, OnLoad: func(l *Limits, err error) {
		loads++
		lastErr = err
		if err == nil {
			running = l
		}
	}}, srcs)
	t0 := time.Unix(1000, 0)
	if w.Look(t0) {
		t.Fatal("reloaded an unchanged directory")
	}

	// A second domain appears: seen, then loaded once settled.
	writeFile(t, filepath.Join(dir, "b.yaml"), "domain: b\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 5}\n")
	if w.Look(t0.Add(time.Second)) || w.Look(t0.Add(1500*time.Millisecond)) {
		t.Fatal("reloaded before the change settled")
	}
	if !w.Look(t0.Add(2*time.Second)) || lastErr != nil || running.Domains() != 2 {
		t.Fatalf("settled change: loads %d, err %v, %d domains", loads, lastErr, running.Domains())
	}

	// A bad file: reported at file:line, the running configuration kept.
	writeFile(t, filepath.Join(dir, "b.yaml"), "domain: b\ndescriptors:\n  - key: k\n    rate_limit: {unit: fortnight, requests_per_unit: 5}\n")
	w.Look(t0.Add(3 * time.Second))
	if !w.Look(t0.Add(4*time.Second)) || lastErr == nil {
		t.Fatalf("bad file: loads %d, err %v", loads, lastErr)
	}
	if !strings.Contains(lastErr.Error(), "b.yaml:4:") || !strings.Contains(lastErr.Error(), "invalid rate limit unit 'fortnight'") {
		t.Errorf("error %q does not name b.yaml:4 and the unit", lastErr)
	}
	if running.Domains() != 2 || running.Match("b", entries("k", "x")).Limit.Unit.String() != "MINUTE" {
		t.Error("the running configuration changed after a bad file")
	}
	// Not retried until it changes again.
	if w.Look(t0.Add(10 * time.Second)) {
		t.Error("a refused version was tried again")
	}

	// Fixed, and a duplicate domain in another file refused.
	writeFile(t, filepath.Join(dir, "b.yaml"), "domain: b\n")
	writeFile(t, filepath.Join(dir, "c.yaml"), "domain: b\n")
	w.Look(t0.Add(11 * time.Second))
	w.Look(t0.Add(12 * time.Second))
	if lastErr == nil || !strings.Contains(lastErr.Error(), "duplicate domain 'b'") {
		t.Fatalf("duplicate domain: %v", lastErr)
	}
	if err := os.Remove(filepath.Join(dir, "c.yaml")); err != nil {
		t.Fatal(err)
	}
	w.Look(t0.Add(13 * time.Second))
	w.Look(t0.Add(14 * time.Second))
	if lastErr != nil || running.Match("b", entries("k", "x")).Limit != nil {
		t.Fatalf("fixed: err %v", lastErr)
	}
}

// Dot files (editors' swap files) are not configuration.
func TestReadDirSkipsDotFiles(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.yaml"), "domain: a\n")
	writeFile(t, filepath.Join(dir, ".a.yaml.swp"), "\x00garbage")
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "sub", "b.conf"), "domain: b\n")
	l, err := LoadDir(dir)
	if err != nil || l.Domains() != 2 {
		t.Fatalf("LoadDir: %v, %v", l, err)
	}
}

// Start polls in the background and Close stops it.
func TestWatcherStartAndClose(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.yaml"), "domain: a\n")
	srcs, _ := ReadDir(dir)
	loaded := make(chan error, 10)
	w := NewWatcher(WatchConfig{Dir: dir, Interval: 10 * time.Millisecond, Settle: 10 * time.Millisecond,
		OnLoad: func(_ *Limits, err error) { loaded <- err }}, srcs)
	w.Start()
	defer w.Close()
	writeFile(t, filepath.Join(dir, "b.yaml"), "domain: b\n")
	select {
	case err := <-loaded:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no reload within 30s")
	}
}

// With the defaults a change is loaded within 0.5 s of being written
// (envoyproxy/ratelimit's inotify takes about 0.1 s); a broken version
// is reported and the running one kept, as before.
func TestWatcherReloadsWithinHalfASecond(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.yaml"), "domain: a\n")
	srcs, _ := ReadDir(dir)
	type load struct {
		at  time.Time
		err error
	}
	loaded := make(chan load, 10)
	w := NewWatcher(WatchConfig{Dir: dir, OnLoad: func(_ *Limits, err error) { loaded <- load{time.Now(), err} }}, srcs)
	w.Start()
	defer w.Close()
	for i, body := range []string{"domain: b\n", "domain: b\ndescriptors: [{key: k, rate_limit: {unit: fortnight}}]\n"} {
		start := time.Now()
		writeFile(t, filepath.Join(dir, "b.yaml"), body)
		select {
		case l := <-loaded:
			if took := l.at.Sub(start); took > 500*time.Millisecond {
				t.Errorf("change %d loaded %v after the write, want within 0.5s", i, took)
			}
			if (l.err != nil) != (i == 1) {
				t.Errorf("change %d: %v", i, l.err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("no reload within 30s")
		}
	}
}

// With Options.DotFiles (RUNTIME_IGNOREDOTFILES unset), the files and
// directories named .* are read and watched; without, neither.
func TestDotFilesReadAndWatched(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, ".d"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, domain string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte("domain: "+domain+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("plain.yaml", "plain")
	write(".hidden.yaml", "hidden")
	write(".d/in.yaml", "dotdir")
	for _, dot := range []bool{false, true} {
		o := Options{DotFiles: dot}
		l, err := LoadDirWith(dir, o)
		if err != nil {
			t.Fatal(err)
		}
		want := 1
		if dot {
			want = 3
		}
		if l.Domains() != want || len(l.Files) != want {
			t.Errorf("DotFiles=%v: %d domains in %v, want %d", dot, l.Domains(), l.Files, want)
		}
		before, err := statDir(dir, o)
		if err != nil {
			t.Fatal(err)
		}
		write(".d/in.yaml", "dotdir2")
		after, err := statDir(dir, o)
		if err != nil {
			t.Fatal(err)
		}
		if (before != after) != dot {
			t.Errorf("DotFiles=%v: a change in .d/in.yaml seen: %v", dot, before != after)
		}
		write(".d/in.yaml", "dotdir")
	}
}
