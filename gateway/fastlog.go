package gateway

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// fasthttpLog is the traffic server's fasthttp.Logger.
//
// fasthttp logs a request it could not read, once per connection, with
// an error that quotes what it read: a header line, a field value, the
// connection's addresses (and the whole request head unless
// SecureErrorLogMessage is set). A client sending malformed requests thus
// writes what it likes into the log, as often as it likes, credentials of
// its own or of others included. So each message is redacted (quoted
// text replaced, a raw dump cut off: see redactQuoted), and each kind of
// message (fasthttp's format string) is written at most burst times per
// window; the rest are counted and summed up in one line when the window
// ends.
//
// It is safe for concurrent use. Close writes the summaries still due and
// stops the timer that writes them.
type fasthttpLog struct {
	log    *slog.Logger
	window time.Duration
	burst  int
	now    func() time.Time

	mu     sync.Mutex
	kinds  map[string]*logKind // by format: fasthttp's are constants
	timer  *time.Timer         // the next summary; nil when none is due
	closed bool
}

// logKind is one kind of message's count in the current window.
type logKind struct {
	start      time.Time // the window's start
	written    int
	suppressed int
	last       string // the last message suppressed, redacted
}

// maxLogKinds bounds the kinds tracked; further formats share one count.
const maxLogKinds = 64

// newFasthttpLog writes to log at most burst messages of a kind per
// window.
func newFasthttpLog(log *slog.Logger, window time.Duration, burst int, now func() time.Time) *fasthttpLog {
	return &fasthttpLog{log: log, window: window, burst: burst, now: now, kinds: map[string]*logKind{}}
}

// Printf logs one fasthttp message as a warning, redacted, unless its
// kind has had its burst in this window.
func (l *fasthttpLog) Printf(format string, args ...any) {
	msg := redactQuoted(fmt.Sprintf(format, args...))
	now := l.now()
	l.mu.Lock()
	k := l.kinds[format]
	if k == nil {
		if len(l.kinds) >= maxLogKinds {
			format = ""
		}
		if k = l.kinds[format]; k == nil {
			k = &logKind{start: now}
			l.kinds[format] = k
		}
	}
	var summary logKind
	if now.Sub(k.start) >= l.window {
		summary = *k
		*k = logKind{start: now}
	}
	write := k.written < l.burst
	if write {
		k.written++
	} else {
		k.suppressed++
		k.last = msg
		if l.timer == nil && !l.closed {
			l.timer = time.AfterFunc(l.window, l.flushDue)
		}
	}
	l.mu.Unlock()
	l.summarize(&summary)
	if write {
		l.log.Warn(msg, "source", "fasthttp")
	}
}

// summarize writes how many messages of k's kind were suppressed, if any.
func (l *fasthttpLog) summarize(k *logKind) {
	if k.suppressed > 0 {
		l.log.Warn("similar fasthttp messages suppressed", "source", "fasthttp",
			"suppressed", k.suppressed, "window", l.window.String(), "last", k.last)
	}
}

// flushDue writes the summaries of the windows that have ended, and sets
// the timer again for those still open with messages suppressed.
func (l *fasthttpLog) flushDue() { l.flush(false) }

// flush writes the summaries due (all of them with all) and resets their
// counts; unless all, it sets the timer for the next one due.
func (l *fasthttpLog) flush(all bool) {
	now := l.now()
	var due []logKind
	l.mu.Lock()
	l.timer = nil
	next := time.Duration(-1)
	for _, k := range l.kinds {
		if k.suppressed == 0 {
			continue
		}
		left := l.window - now.Sub(k.start)
		if all || left <= 0 {
			due = append(due, *k)
			k.suppressed, k.last = 0, ""
			continue
		}
		if next < 0 || left < next {
			next = left
		}
	}
	if next >= 0 && !all && !l.closed {
		l.timer = time.AfterFunc(next, l.flushDue)
	}
	l.mu.Unlock()
	for i := range due {
		l.summarize(&due[i])
	}
}

// Close writes the pending summaries and stops the timer.
func (l *fasthttpLog) Close() {
	l.mu.Lock()
	l.closed = true
	if l.timer != nil {
		l.timer.Stop()
	}
	l.mu.Unlock()
	l.flush(true)
}

// redactQuoted returns msg with the text of every double-quoted string in
// it (as %q writes one, escapes included; an unterminated one runs to the
// end) replaced by "…", and cut before a ", contents:" dump of a request.
// fasthttp quotes with %q whatever it quotes from the wire, so this keeps
// the kind of failure and drops what the client sent.
func redactQuoted(msg string) string {
	if i := strings.Index(msg, ", contents:"); i >= 0 {
		msg = msg[:i]
	}
	if strings.IndexByte(msg, '"') < 0 {
		return msg
	}
	var b strings.Builder
	for {
		i := strings.IndexByte(msg, '"')
		if i < 0 {
			b.WriteString(msg)
			return b.String()
		}
		b.WriteString(msg[:i])
		b.WriteString(`"…"`)
		j := i + 1
		for j < len(msg) && msg[j] != '"' {
			if msg[j] == '\\' {
				j++
			}
			j++
		}
		if j >= len(msg) {
			return b.String()
		}
		msg = msg[j+1:]
	}
}
