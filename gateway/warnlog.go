package gateway

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// warnLog writes warnings that can repeat once per request, limited: each
// kind of warning is written at most burst times per window; the rest are
// counted and summed up in one line when the window ends.
//
// It is the traffic server's fasthttp.Logger (Printf). fasthttp logs a
// request it could not read, once per connection, with an error that
// quotes what it read: a header line, a field value, the connection's
// addresses (and the whole request head unless SecureErrorLogMessage is
// set). A client sending malformed requests would thus write what it
// likes into the log, as often as it likes, credentials of its own or of
// others included. So fasthttp's messages are redacted (quoted text
// replaced, a raw dump cut off: see redactQuoted), and their kind is
// fasthttp's format string. The proxy's upstream errors (Warn) are
// limited per route.
//
// It is safe for concurrent use. Close writes the summaries still due and
// stops the timer that writes them.
type warnLog struct {
	log    *slog.Logger
	window time.Duration
	burst  int
	now    func() time.Time

	mu     sync.Mutex
	kinds  map[string]*logKind // bounded by maxLogKinds
	timer  *time.Timer         // the next summary; nil when none is due
	closed bool
}

// logKind is one kind of message's count in the current window.
type logKind struct {
	start      time.Time // the window's start
	written    int
	suppressed int
	last       string // the last message suppressed (redacted)
	lastArgs   []any  // and its attributes
}

// maxLogKinds bounds the kinds tracked; further formats share one count.
const maxLogKinds = 64

// newWarnLog writes to log at most burst warnings of a kind per window.
func newWarnLog(log *slog.Logger, window time.Duration, burst int, now func() time.Time) *warnLog {
	return &warnLog{log: log, window: window, burst: burst, now: now, kinds: map[string]*logKind{}}
}

// Printf logs one fasthttp message as a warning, redacted, unless its
// kind has had its burst in this window.
func (l *warnLog) Printf(format string, args ...any) {
	l.Warn(format, redactQuoted(fmt.Sprintf(format, args...)), "source", "fasthttp")
}

// Warn logs msg with args (slog's key-value pairs) as a warning unless
// kind has had its burst in this window.
func (l *warnLog) Warn(kind, msg string, args ...any) {
	now := l.now()
	l.mu.Lock()
	k := l.kinds[kind]
	if k == nil {
		if len(l.kinds) >= maxLogKinds {
			kind = ""
		}
		if k = l.kinds[kind]; k == nil {
			k = &logKind{start: now}
			l.kinds[kind] = k
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
		k.last, k.lastArgs = msg, args
		if l.timer == nil && !l.closed {
			l.timer = time.AfterFunc(l.window, l.flushDue)
		}
	}
	l.mu.Unlock()
	l.summarize(&summary)
	if write {
		l.log.Warn(msg, args...)
	}
}

// summarize writes how many warnings of k's kind were suppressed, if
// any, with the last one's message and attributes.
func (l *warnLog) summarize(k *logKind) {
	if k.suppressed > 0 {
		l.log.Warn("similar warnings suppressed", append([]any{"suppressed", k.suppressed,
			"window", l.window.String(), "last", k.last}, k.lastArgs...)...)
	}
}

// flushDue writes the summaries of the windows that have ended, and sets
// the timer again for those still open with messages suppressed.
func (l *warnLog) flushDue() { l.flush(false) }

// flush writes the summaries due (all of them with all) and resets their
// counts; unless all, it sets the timer for the next one due.
func (l *warnLog) flush(all bool) {
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
			k.suppressed, k.last, k.lastArgs = 0, "", nil
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
func (l *warnLog) Close() {
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
