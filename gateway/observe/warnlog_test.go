package observe

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/logtest"
)

// The summary of a flood that stops is written when its window ends,
// without another message to trigger it, and at Close.
func TestWarnLogSummarizesAfterQuiet(t *testing.T) {
	var buf logtest.Buffer
	l := NewWarnLog(slog.New(slog.NewTextHandler(&buf, nil)), 50*time.Millisecond, 1, nil)
	defer l.Close()
	for range 3 {
		l.Printf("bad request %q", "secret")
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(buf.String(), "similar=2") {
		if time.Now().After(deadline) {
			t.Fatalf("no summary after the window:\n%s", buf.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	l.Printf("bad request %q", "secret")
	l.Printf("bad request %q", "secret")
	l.Close()
	if out := buf.String(); strings.Count(out, "similar=") != 2 || strings.Contains(out, "secret") {
		t.Fatalf("want a second summary at Close, and no secret:\n%s", out)
	}
}

func TestRedactQuoted(t *testing.T) {
	for in, want := range map[string]string{
		`plain`:                             `plain`,
		`a "b" c "d\"e" f`:                  `a "…" c "…" f`,
		`open "never closed \" still`:       `open "…"`,
		`x: buffer size=3, contents: "GET"`: `x: buffer size=3`,
		`trailing backslash "a\`:            `trailing backslash "…"`,
	} {
		if got := RedactQuoted(in); got != want {
			t.Errorf("redactQuoted(%q) = %q, want %q", in, got, want)
		}
	}
}
