package envoyrls

import (
	"errors"
	"sync"
	"time"

	"github.com/tollgate-dev/tollgate/internal/stableread"
)

// WatchConfig configures a Watcher.
type WatchConfig struct {
	// Dir is the configuration directory. Required.
	Dir string
	// Interval is how often Start looks at the directory: the names,
	// sizes and modification times of its files, their contents read
	// when those changed (and at least every FullInterval). Zero means
	// 100ms.
	Interval time.Duration
	// Settle is how long a change must stay the same before it is
	// loaded, so that a file being written is not read half way. Zero
	// means 100ms: with Interval's default a change is loaded 0.1 to
	// 0.3 s after it is made (envoyproxy/ratelimit's inotify takes about
	// 0.1 s).
	Settle time.Duration
	// FullInterval is how often Start reads the files' contents even
	// when their names, sizes and times say nothing changed (a file
	// system whose times are coarse). Zero means 1s.
	FullInterval time.Duration
	// Options are the loading options (MERGE_DOMAIN_CONFIG).
	Options Options
	// OnLoad receives every new configuration, or the error that kept the
	// previous one (every problem, at file:line). It is called from the
	// watch goroutine, or from Look. Required.
	OnLoad func(*Limits, error)
}

// Watcher polls a configuration directory and loads it again once its
// files have changed and then stopped changing (gateway's watch, for a
// directory): a version that fails to build is reported once and the
// running configuration kept; the next change is tried afresh.
type Watcher struct {
	cfg WatchConfig

	mu      sync.Mutex
	loaded  digest    // the version last tried (loaded or refused)
	pending digest    // a changed version waiting to settle
	since   time.Time // when pending was first seen
	waiting bool

	stop, done chan struct{}
	once       sync.Once
	started    bool
}

// NewWatcher returns a watcher of cfg.Dir whose current contents are the
// version srcs (the one the running configuration was built from). Call
// Start to poll in the background, or Look.
func NewWatcher(cfg WatchConfig, srcs []Source) *Watcher {
	if cfg.Interval <= 0 {
		cfg.Interval = 100 * time.Millisecond
	}
	if cfg.Settle <= 0 {
		cfg.Settle = 100 * time.Millisecond
	}
	if cfg.FullInterval <= 0 {
		cfg.FullInterval = time.Second
	}
	return &Watcher{cfg: cfg, loaded: digestOf(srcs), stop: make(chan struct{}), done: make(chan struct{})}
}

// Look reads the directory at now and loads it when a change has settled.
// It reports whether it called OnLoad.
func (w *Watcher) Look(now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	srcs, err := ReadDirWith(w.cfg.Dir, w.cfg.Options)
	if err != nil {
		if errors.Is(err, stableread.ErrChanged) && w.waiting && now.Sub(w.since) >= w.cfg.Settle {
			w.cfg.OnLoad(nil, err) // a reload due, refused: the log says why
		}
		// Being replaced, or gone: wait for it to come back.
		return false
	}
	d := digestOf(srcs)
	switch {
	case d == w.loaded:
		w.waiting = false
		return false
	case !w.waiting || d != w.pending:
		w.pending, w.since, w.waiting = d, now, true
		if w.cfg.Settle > 0 {
			return false
		}
	case now.Sub(w.since) < w.cfg.Settle:
		return false
	}
	w.loaded, w.waiting = d, false
	w.cfg.OnLoad(BuildWith(srcs, w.cfg.Options))
	return true
}

// Start polls in a goroutine until Close. Call it at most once, before
// Close. Every Interval it compares the directory's file names, sizes
// and modification times with the previous look's, and calls Look when
// they differ, while a change settles, and every FullInterval.
func (w *Watcher) Start() {
	w.started = true
	go func() {
		defer close(w.done)
		t := time.NewTicker(min(w.cfg.Interval, w.cfg.Settle))
		defer t.Stop()
		// No stat yet: the first tick reads the contents, so that a
		// change made before the goroutine ran is not missed.
		var last time.Time
		var lastStat digest
		for {
			select {
			case <-w.stop:
				return
			case now := <-t.C:
				w.mu.Lock()
				waiting := w.waiting
				w.mu.Unlock()
				st, err := statDir(w.cfg.Dir, w.cfg.Options)
				if waiting || err != nil || st != lastStat || now.Sub(last) >= w.cfg.FullInterval {
					last, lastStat = now, st
					w.Look(now)
				}
			}
		}
	}()
}

// Close stops the polling started by Start and waits for it.
func (w *Watcher) Close() {
	w.once.Do(func() {
		close(w.stop)
		if w.started {
			<-w.done
		}
	})
}
