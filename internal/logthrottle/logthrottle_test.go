package logthrottle

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/logtest"
)

// lines returns what b holds, a line each.
func lines(b *logtest.Buffer) []string {
	s := strings.TrimSpace(b.String())
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func newLogger(every time.Duration, now func() time.Time) (*Logger, *logtest.Buffer) {
	var buf logtest.Buffer
	h := slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}})
	return New(slog.New(h), Config{Every: every, Now: now}), &buf
}

func TestRepeatedLinesAreSummarizedOncePerWindow(t *testing.T) {
	at := time.Unix(1000, 0)
	l, buf := newLogger(10*time.Second, func() time.Time { return at })
	ctx := context.Background()
	for i := range 1000 {
		l.Log(ctx, slog.LevelError, "store failed", slog.Int("i", i))
	}
	l.Log(ctx, slog.LevelWarn, "other") // another message is not throttled by the first
	if got := lines(buf); len(got) != 2 || !strings.Contains(got[0], "i=0") || !strings.Contains(got[1], "msg=other") {
		t.Fatalf("within the window: %q", got)
	}
	at = at.Add(10 * time.Second)
	l.Log(ctx, slog.LevelError, "store failed", slog.Int("i", 1000))
	got := lines(buf)
	if len(got) != 4 {
		t.Fatalf("after the window: %q", got)
	}
	if want := `level=ERROR msg="store failed (repeated)" similar=999 in_last=10s i=999`; got[2] != want {
		t.Errorf("summary = %q, want %q", got[2], want)
	}
	if !strings.Contains(got[3], "i=1000") {
		t.Errorf("the next window's first line = %q", got[3])
	}
}

func TestFlushWritesPendingSummaries(t *testing.T) {
	at := time.Unix(1000, 0)
	l, buf := newLogger(time.Minute, func() time.Time { return at })
	for range 3 {
		l.Log(context.Background(), slog.LevelInfo, "x")
	}
	l.Flush()
	l.Flush() // nothing more to say
	got := lines(buf)
	if len(got) != 2 || !strings.Contains(got[1], `msg="x (repeated)" similar=2`) {
		t.Fatalf("lines = %q", got)
	}
}

// TestSummaryIsWrittenWhenTheWindowEnds runs on the real clock: the
// summary of a burst comes from the timer, with no further line.
func TestSummaryIsWrittenWhenTheWindowEnds(t *testing.T) {
	l, buf := newLogger(20*time.Millisecond, nil)
	defer l.Close()
	for range 5 {
		l.Log(context.Background(), slog.LevelError, "burst")
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(lines(buf)) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("no summary within 10s: %q", lines(buf))
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got := lines(buf); len(got) != 2 || !strings.Contains(got[1], "similar=4") {
		t.Fatalf("lines = %q", got)
	}
}

func TestNilLoggerDiscards(t *testing.T) {
	var l *Logger
	l.Log(context.Background(), slog.LevelError, "x")
	l.Flush()
	l.Close()
	New(nil, Config{}).Log(context.Background(), slog.LevelError, "x")
}

// TestBurstAndKinds: with a Burst, that many lines of a kind are written
// per window before the rest are counted; lines are grouped by kind, not
// by their varying message, and the summary repeats the last message.
func TestBurstAndKinds(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(1_700_000_000, 0)
	l := New(slog.New(slog.NewTextHandler(&buf, nil)), Config{Every: time.Minute, Burst: 3, Now: func() time.Time { return now }})
	for i := range 10 {
		l.LogKind(context.Background(), slog.LevelWarn, "bad request %d", fmt.Sprintf("bad request %d", i))
	}
	if n := strings.Count(buf.String(), "\n"); n != 3 {
		t.Fatalf("%d lines for 10 of one kind with a burst of 3:\n%s", n, buf.String())
	}
	l.Flush()
	if out := buf.String(); !strings.Contains(out, `msg="bad request 9 (repeated)" similar=7`) {
		t.Fatalf("the summary does not count the 7 others with the last message:\n%s", out)
	}
}
