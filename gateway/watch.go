package gateway

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/tollgate-dev/tollgate/config"
	"github.com/tollgate-dev/tollgate/internal/stableread"
)

// watch polls the configuration file and the members files its rules
// name, and reloads once one has changed and then stopped changing, until
// Close. SIGHUP is the caller's (see ReloadFile); this covers editors and
// configuration management that only write the files.
//
// A file written in place is truncated and then written, perhaps in
// several pieces with pauses between: loaded in between, it would serve
// traffic with half its rules. So a change waits until the file has kept
// the same size, modification time and contents for reload.settle, and
// the configuration file is parsed from the very bytes that settled. A
// file that changed while it was read (stableread.ReadFile: a writer
// resuming just then) is no settled version: the reload is refused and
// logged, and the change waits to settle again. A writer that pauses
// longer than settle is still seen half way: the documented way to
// change a watched file is to rename a complete one over it.
//
// w holds the versions of the files the running configuration was built
// from (newWatcher, called as the gateway starts).
func (g *Gateway) watch(w *watcher) {
	defer close(g.done)
	path := w.path
	if path == "" {
		<-g.stop
		return
	}
	t := time.NewTimer(g.core.Snap.Load().Cfg.Reload.Interval)
	defer t.Stop()
	for {
		select {
		case <-g.stop:
			return
		case <-t.C:
		}
		cfg := g.core.Snap.Load().Cfg
		next := cfg.Reload.Interval
		if *cfg.Reload.Watch {
			data, changed := w.look(cfg, time.Now())
			for _, err := range w.torn {
				g.countReload(err) // refused: the running configuration keeps serving
			}
			w.torn = w.torn[:0]
			if changed != nil {
				g.core.Log.Info("config changed; reloading", "files", changed)
				g.reloadLoaded(config.Parse(path, data))
				w.track(g.core.Snap.Load().Cfg)
			}
			if w.pending() {
				next = min(next, cfg.Reload.Settle)
			}
		}
		t.Reset(next)
	}
}

// watcher is the state of the watched files between looks. Only the
// watch goroutine uses it.
type watcher struct {
	path  string // the configuration file; "" for none
	files map[string]*watchedFile
	// torn are the reloads the last look refused: a file due to be
	// reloaded changed while it was read.
	torn []error
	// afterRead, when set, runs after each file's bytes are read
	// (stableread.ReadFileThen): tests change a file there.
	afterRead func(path string)
}

// newWatcher watches the files cfg was built from, as they are now: its
// file (for good: a configuration given to Reload does not change it)
// and its members files.
func newWatcher(cfg *config.Config) *watcher {
	w := &watcher{path: cfg.File}
	if w.path != "" {
		w.track(cfg)
	}
	return w
}

// watchedFile is one watched file's state.
type watchedFile struct {
	loaded  fileStamp // the version the running configuration was built from
	seen    fileStamp // the version the last look found
	changed fileStamp // a version other than loaded, waiting to settle
	since   time.Time // when changed was first seen
	// tooLarge is the version (size and modification time) last found
	// larger than its bound (stableread.ErrTooLarge), refused once.
	tooLarge fileStamp
}

// fileStamp identifies a version of a file. The zero fileStamp is a file
// that could not be read.
type fileStamp struct {
	ok    bool
	size  int64
	mtime time.Time
	sum   [sha256.Size]byte
}

// stamp reads the file at path. A file that cannot be read (being
// replaced, or gone) has the zero stamp, and so has one that changed
// while it was read (err is then stableread.ErrChanged).
func (w *watcher) stamp(path string) (fileStamp, []byte, error) {
	var then func()
	if w.afterRead != nil {
		then = func() { w.afterRead(path) }
	}
	data, fi, err := stableread.ReadFileThen(path, w.limit(path), then)
	if err != nil {
		return fileStamp{}, nil, err
	}
	return fileStamp{ok: true, size: fi.Size(), mtime: fi.ModTime(), sum: sha256.Sum256(data)}, data, nil
}

// limit is the most the watcher reads of the file at path:
// config.MaxFileBytes of the configuration file, config.MaxListFileBytes
// of the files it names (list, secret and TLS files).
func (w *watcher) limit(path string) int64 {
	if path == w.path {
		return config.MaxFileBytes
	}
	return config.MaxListFileBytes
}

// equal reports whether two stamps are the same version. Modification
// times are compared as instants.
func (s fileStamp) equal(o fileStamp) bool {
	return s.ok == o.ok && s.size == o.size && s.mtime.Equal(o.mtime) && s.sum == o.sum
}

// watched are the files to watch while cfg runs: the configuration file
// first, then the members files of cfg's tiers, the clients and keys
// files of its except entries, and the Redis secret and
// TLS files (resolved against the configuration file's directory).
func (w *watcher) watched(cfg *config.Config) []string {
	return append(append(append([]string{w.path}, cfg.MembersFiles()...), cfg.ExceptFiles()...), cfg.SecretFiles()...)
}

// track makes cfg's files the watched ones: call it with the
// configuration just built from them. A file the last look read counts
// as loaded in the version that look found (the one the reload read,
// unless it changed since: then the next looks see that change); a file
// new to the watch list is read now.
func (w *watcher) track(cfg *config.Config) {
	old := w.files
	w.files = make(map[string]*watchedFile, len(old))
	for _, p := range w.watched(cfg) {
		f := &watchedFile{}
		if o := old[p]; o != nil {
			f.loaded = o.seen
		} else {
			f.loaded, _, _ = w.stamp(p)
		}
		f.seen = f.loaded
		w.files[p] = f
	}
}

// look reads every watched file at now and reports whether the
// configuration is to be reloaded: some file has changed, and every
// changed file has kept the same version for cfg.Reload.Settle. When it
// is, changed lists those files and data is the configuration file's
// contents as this look read them
// (the settled version, when that file changed). A file that cannot be
// read is no change (it is being replaced, or its absence would only
// fail the reload), but while the configuration file cannot be read
// nothing is reloaded. A file that changed while it was read is a change
// that has not settled; when it was due to be reloaded, the refusal is
// added to w.torn.
func (w *watcher) look(cfg *config.Config, now time.Time) (data []byte, changed []string) {
	settling := false
	for i, p := range w.watched(cfg) {
		st, b, err := w.stamp(p)
		if errors.Is(err, stableread.ErrTooLarge) {
			// Refused, once for each version (its size and time): the
			// running configuration keeps serving, and the version
			// before stays the loaded one.
			if f := w.files[p]; f != nil {
				big := fileStamp{ok: true}
				if fi, serr := os.Stat(p); serr == nil {
					big.size, big.mtime = fi.Size(), fi.ModTime()
				}
				if !big.equal(f.tooLarge) {
					f.tooLarge = big
					w.torn = append(w.torn, fmt.Errorf("reload refused: %w", err))
				}
				f.changed = fileStamp{}
			}
			if i == 0 {
				return nil, nil
			}
			continue
		}
		if errors.Is(err, stableread.ErrChanged) {
			f := w.files[p]
			if f != nil {
				if f.changed.ok && now.Sub(f.since) >= cfg.Reload.Settle {
					w.torn = append(w.torn, fmt.Errorf("reload refused: %w", err))
				}
				f.changed = fileStamp{} // to settle again
			}
			if i == 0 {
				return nil, nil
			}
			settling = true
			continue
		}
		if i == 0 {
			if !st.ok {
				return nil, nil
			}
			data = b
		}
		f := w.files[p]
		if f == nil { // listed since the last track: as loaded
			w.files[p] = &watchedFile{loaded: st, seen: st}
			continue
		}
		f.seen = st
		switch {
		case !st.ok || st.equal(f.loaded):
			f.changed = fileStamp{}
			continue
		case !st.equal(f.changed):
			f.changed, f.since = st, now
			settling = true
		case now.Sub(f.since) < cfg.Reload.Settle:
			settling = true
		}
		changed = append(changed, p)
	}
	if settling {
		return nil, nil
	}
	return data, changed
}

// pending reports whether a change is waiting to settle.
func (w *watcher) pending() bool {
	for _, f := range w.files {
		if f.changed.ok {
			return true
		}
	}
	return false
}
