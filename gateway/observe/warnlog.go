package observe

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/internal/logthrottle"
)

// WarnLog writes warnings that can repeat once per request, limited by
// internal/logthrottle: each kind of warning is written at most burst
// times per window; the rest are counted and summed up in one line when
// the window ends.
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
// stops the timers that write them.
type WarnLog struct{ l *logthrottle.Logger }

// NewWarnLog writes to log at most burst warnings of a kind per window.
// now is the clock; nil means the real one, with summaries written by a
// timer when a window ends (with another clock, by the kind's next line
// or Close).
func NewWarnLog(log *slog.Logger, window time.Duration, burst int, now func() time.Time) *WarnLog {
	return &WarnLog{logthrottle.New(log, logthrottle.Config{Every: window, Burst: burst, Now: now})}
}

// Printf logs one fasthttp message as a warning, redacted, unless its
// kind has had its burst in this window.
func (w *WarnLog) Printf(format string, args ...any) {
	w.l.LogKind(context.Background(), slog.LevelWarn, format, RedactQuoted(fmt.Sprintf(format, args...)),
		slog.String("source", "fasthttp"))
}

// Warn logs msg with attrs as a warning unless kind has had its burst in
// this window.
func (w *WarnLog) Warn(kind, msg string, attrs ...slog.Attr) {
	w.l.LogKind(context.Background(), slog.LevelWarn, kind, msg, attrs...)
}

// Close writes the pending summaries and stops the timers.
func (w *WarnLog) Close() { w.l.Close() }

// RedactQuoted returns msg with the text of every double-quoted string in
// it (as %q writes one, escapes included; an unterminated one runs to the
// end) replaced by "…", and cut before a ", contents:" dump of a request.
// fasthttp quotes with %q whatever it quotes from the wire, so this keeps
// the kind of failure and drops what the client sent.
func RedactQuoted(msg string) string {
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
