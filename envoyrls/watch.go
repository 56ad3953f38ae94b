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
	// Interval is how often the directory is read. Zero means 1s.
	Interval time.Duration
	// Settle is how long a change must stay the same before it is
	// loaded, so that a file being written is not read half way. Zero
	// means 500ms.
	Settle time.Duration
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
		cfg.Interval = time.Second
	}
	if cfg.Settle <= 0 {
		cfg.Settle = 500 * time.Millisecond
	}
	return &Watcher{cfg: cfg, loaded: digestOf(srcs), stop: make(chan struct{}), done: make(chan struct{})}
}

// Look reads the directory at now and loads it when a change has settled.
// It reports whether it called OnLoad.
func (w *Watcher) Look(now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	srcs, err := ReadDir(w.cfg.Dir)
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
	w.cfg.OnLoad(Build(srcs))
	return true
}

// Start polls in a goroutine until Close. Call it at most once, before
// Close.
func (w *Watcher) Start() {
	w.started = true
	go func() {
		defer close(w.done)
		t := time.NewTicker(min(w.cfg.Interval, w.cfg.Settle))
		defer t.Stop()
		last := time.Time{}
		for {
			select {
			case <-w.stop:
				return
			case now := <-t.C:
				w.mu.Lock()
				waiting := w.waiting
				w.mu.Unlock()
				if waiting || now.Sub(last) >= w.cfg.Interval {
					last = now
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
