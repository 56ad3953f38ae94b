package observe

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tollgate-dev/tollgate/config"
	"github.com/tollgate-dev/tollgate/rules"
)

// RefusalLog writes a line per refused request, as nginx's "limiting
// requests" lines (a refusal under a penalty, rules.Policy.Penalty, with
// "penalty": the time it has left, and "penalty_started"; an answer a
// counting rule charged is no refusal and gets none), sampled (one in SampleEvery) and capped (MaxLines per
// Interval); every Interval it writes one summary line per rule whose
// refusals were not all written. So a flood of refusals writes at most
// MaxLines + (rules) lines per Interval, and a refusal costs two atomic
// additions unless it gets a line.
type RefusalLog struct {
	log      *slog.Logger
	keys     string
	every    uint64
	maxLines int64
	interval time.Duration

	seen    atomic.Uint64 // refusals, for sampling
	written atomic.Int64  // lines in this interval

	out    *lockedWriter
	mu     sync.Mutex // guards byRule
	byRule map[string]*RefusalCount
	stop   chan struct{}
	done   chan struct{}
}

// RefusalCount is one rule's refusals in the current interval.
type RefusalCount struct {
	rule             string
	refused, written atomic.Uint64
}

// lockedWriter is a buffered writer that slog's handler and the flusher
// share.
type lockedWriter struct {
	mu sync.Mutex
	w  *bufio.Writer
	f  io.WriteCloser
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) flush() {
	l.mu.Lock()
	l.w.Flush()
	l.mu.Unlock()
}

// OpenRefusalLog opens the log cfg describes; nil when it is off.
func OpenRefusalLog(c *config.Config) (*RefusalLog, error) {
	rc := c.RefusalLog
	if rc.Path == "" {
		return nil, nil
	}
	var f io.WriteCloser = nopCloser{os.Stderr}
	if rc.Path != "-" {
		file, err := os.OpenFile(c.Resolve(rc.Path), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, err
		}
		f = file
	}
	out := &lockedWriter{w: bufio.NewWriterSize(f, 32<<10), f: f}
	var h slog.Handler = slog.NewJSONHandler(out, nil)
	if rc.Format == "text" {
		h = slog.NewTextHandler(out, nil)
	}
	l := &RefusalLog{
		log: slog.New(h), keys: rc.Keys, every: uint64(rc.SampleEvery), maxLines: int64(rc.MaxLines),
		interval: rc.Interval, out: out, byRule: map[string]*RefusalCount{},
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	go l.run()
	return l, nil
}

// Counter returns rule's count, made once and kept across reloads.
func (l *RefusalLog) Counter(rule string) *RefusalCount {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.byRule[rule]
	if c == nil {
		c = &RefusalCount{rule: rule}
		l.byRule[rule] = c
	}
	return c
}

// Refused records a refusal of the rule counted by c.
func (l *RefusalLog) Refused(c *RefusalCount, ev *rules.Event) {
	c.refused.Add(1)
	if l.every > 1 && l.seen.Add(1)%l.every != 0 {
		return
	}
	if l.written.Add(1) > l.maxLines {
		return
	}
	c.written.Add(1)
	d := &ev.Decision
	var buf [10]slog.Attr
	attrs := append(buf[:0],
		slog.String("rule", ev.Rule),
		slog.String("policy", ev.Policy),
		slog.String("plan", ev.Plan),
		slog.String("key", ShowKey(l.keys, ev.Key)),
		slog.Int64("limit", d.Limit),
		slog.Int64("remaining", d.Remaining),
		slog.Duration("retry_after", d.RetryAfter),
		slog.Duration("reset_after", d.ResetAfter),
	)
	if ev.Penalty > 0 {
		// Refused by a penalty of the policy: the time it has left, as
		// a duration in words ("14m52s"), and whether this refusal
		// started it.
		attrs = append(attrs, slog.String("penalty", ev.Penalty.Round(time.Second).String()),
			slog.Bool("penalty_started", ev.PenaltyStarted))
	}
	l.log.LogAttrs(context.Background(), slog.LevelWarn, "limiting requests", attrs...)
}

// run flushes every second and writes the summaries every interval.
func (l *RefusalLog) run() {
	defer close(l.done)
	flush := time.NewTicker(min(time.Second, l.interval))
	defer flush.Stop()
	sum := time.NewTicker(l.interval)
	defer sum.Stop()
	for {
		select {
		case <-flush.C:
			l.out.flush()
		case <-sum.C:
			l.summarize()
			l.out.flush()
		case <-l.stop:
			l.summarize()
			l.out.flush()
			return
		}
	}
}

// summarize writes one line per rule with refusals that got no line in
// the interval ending, and starts the next.
func (l *RefusalLog) summarize() {
	l.mu.Lock()
	counts := make([]*RefusalCount, 0, len(l.byRule))
	for _, c := range l.byRule {
		counts = append(counts, c)
	}
	l.mu.Unlock()
	l.written.Store(0)
	for _, c := range counts {
		r, w := c.refused.Swap(0), c.written.Swap(0)
		if r > w {
			l.log.LogAttrs(context.Background(), slog.LevelWarn, "limiting requests: summary",
				slog.String("rule", c.rule), slog.Uint64("refused", r), slog.Uint64("logged", w),
				slog.Duration("in_last", l.interval))
		}
	}
}

// Close writes the last summary and closes the file.
func (l *RefusalLog) Close() error {
	close(l.stop)
	<-l.done
	return l.out.f.Close()
}
