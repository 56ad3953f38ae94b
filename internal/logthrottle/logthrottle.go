// Package logthrottle rate-limits repetitive log lines. A line is written
// at once the first time its message is seen in a window (Config.Every,
// 10s by default); later lines with the same message in that window are
// only counted, and one summary line reports them when the window ends:
// the message with " (repeated)" appended, the count as "similar" and the
// window as "in_last", with the attributes of the last line counted. An
// outage that fails every request thus writes two lines per message per
// window, not one per request.
//
// The message (a constant in the calling code) is what makes lines
// similar: put what varies (errors, hashed keys, rule names) in
// attributes, never in the message.
package logthrottle

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Config configures a Logger. The zero Config is valid.
type Config struct {
	// Every is the window: at most one line per message is written in
	// it, plus one summary of the lines counted. Zero means 10s.
	Every time.Duration
	// Now is the clock. Nil means time.Now, and summaries are written
	// by a timer when each window ends; with an injected clock they are
	// written only by the message's next line after the window, or by
	// Flush.
	Now func() time.Time
	// MaxMessages bounds the distinct messages tracked; lines of further
	// messages are written unthrottled. Zero means 256.
	MaxMessages int
	// Burst is how many lines of a message are written in a window
	// before the rest are counted. Zero means 1.
	Burst int
}

// Logger writes to a slog.Logger, throttled per message. It is safe for
// concurrent use. A nil *Logger, or one over a nil slog.Logger, discards
// everything.
type Logger struct {
	log   *slog.Logger
	every time.Duration
	now   func() time.Time
	timed bool // summaries by timer (real clock)
	max   int
	burst int

	mu     sync.Mutex
	lines  map[string]*window
	closed bool
}

// window is one message's current window.
type window struct {
	since   time.Time // when the window's first line was written
	written int       // lines written in the window
	n       int       // lines counted since
	msg     string    // the last counted line's message
	level   slog.Level
	attrs   []slog.Attr // the last counted line's
	pending *time.Timer // the summary's, when counting under a real clock
}

// New returns a Logger writing to log.
func New(log *slog.Logger, cfg Config) *Logger {
	l := &Logger{log: log, every: cfg.Every, now: cfg.Now, max: cfg.MaxMessages, lines: map[string]*window{}}
	if l.every <= 0 {
		l.every = 10 * time.Second
	}
	if l.now == nil {
		l.now, l.timed = time.Now, true
	}
	if l.max <= 0 {
		l.max = 256
	}
	l.burst = max(cfg.Burst, 1)
	return l
}

// Log writes msg with attrs at level, unless Burst lines with the same
// msg were written less than Every ago: then it is counted for the
// window's summary.
func (l *Logger) Log(ctx context.Context, level slog.Level, msg string, attrs ...slog.Attr) {
	l.LogKind(ctx, level, msg, msg, attrs...)
}

// LogKind is Log for a message that varies: lines are throttled by kind (a
// constant, such as the format string msg was made from), and the
// summary repeats the last message counted.
func (l *Logger) LogKind(ctx context.Context, level slog.Level, kind, msg string, attrs ...slog.Attr) {
	if l == nil || l.log == nil || !l.log.Enabled(ctx, level) {
		return
	}
	now := l.now()
	l.mu.Lock()
	w := l.lines[kind]
	if w != nil && now.Sub(w.since) < l.every {
		if w.written < l.burst {
			w.written++
			l.mu.Unlock()
			l.log.LogAttrs(ctx, level, msg, attrs...)
			return
		}
		w.n++
		w.level, w.msg = level, msg
		w.attrs = append(w.attrs[:0], attrs...)
		if l.timed && w.pending == nil && !l.closed {
			w.pending = time.AfterFunc(w.since.Add(l.every).Sub(now), func() { l.summarize(kind, w) })
		}
		l.mu.Unlock()
		return
	}
	var summary window
	if w != nil {
		summary = l.take(w)
	}
	if w != nil || len(l.lines) < l.max {
		l.lines[kind] = &window{since: now, written: 1}
	}
	l.mu.Unlock()
	l.write(ctx, summary)
	l.log.LogAttrs(ctx, level, msg, attrs...)
}

// take returns w's count and last line and resets them; l.mu is held.
func (l *Logger) take(w *window) window {
	out := window{n: w.n, level: w.level, msg: w.msg, attrs: w.attrs}
	w.n, w.msg, w.attrs = 0, "", nil
	if w.pending != nil {
		w.pending.Stop()
		w.pending = nil
	}
	return out
}

// summarize writes the summary of kind's window w, if it is still kind's
// and counted anything: its timer's function.
func (l *Logger) summarize(kind string, w *window) {
	l.mu.Lock()
	if l.lines[kind] != w || w.n == 0 {
		l.mu.Unlock()
		return
	}
	s := l.take(w)
	l.mu.Unlock()
	l.write(context.Background(), s)
}

// write writes the summary s, if it counted anything: the last message
// counted, with the count.
func (l *Logger) write(ctx context.Context, s window) {
	if s.n == 0 {
		return
	}
	attrs := append([]slog.Attr{slog.Int("similar", s.n), slog.Duration("in_last", l.every)}, s.attrs...)
	l.log.LogAttrs(ctx, s.level, s.msg+" (repeated)", attrs...)
}

// Flush writes the summary of every window that counted lines.
func (l *Logger) Flush() {
	if l == nil || l.log == nil {
		return
	}
	var out []window
	l.mu.Lock()
	for _, w := range l.lines {
		if w.n > 0 {
			out = append(out, l.take(w))
		}
	}
	l.mu.Unlock()
	for _, s := range out {
		l.write(context.Background(), s)
	}
}

// Close flushes the summaries and stops the timers; lines logged after
// Close are still written and counted, but summarized only by Flush or the
// message's next line after its window.
func (l *Logger) Close() {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.Flush()
}
