package replay

import (
	"context"
	"strings"
	"testing"
)

// Paths, keys and malformed lines come from the log: in the text report
// a terminal must see their escape sequences as text, never act on them.
func TestTextReportShowsControlCharactersAsEscapes(t *testing.T) {
	evil := "/\x1b]0;PWNED\x07\x1b[2J\u202e\u009b"
	log := strings.Join([]string{
		`192.0.2.7 - - [17/May/2015:10:05:03 +0000] "GET ` + evil + ` HTTP/1.1" 200 5`,
		`192.0.2.7 - - [17/May/2015:10:05:03 +0000] "GET ` + evil + ` HTTP/1.1" 200 5`,
		"garbage \x1b[31mred\x1b[0m \xff",
	}, "\n")
	rep, err := Run(context.Background(), strings.NewReader(log), Config{
		Key: mustKey(t, "path"), Policies: policies(t, "fixed_window:limit=1,window=1m"),
	})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := WriteText(&b, rep); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for i, r := range out {
		if r != '\n' && (r < 0x20 || r >= 0x7f && r < 0xa0 || r == 0x202e || r == 0xfffd) {
			t.Fatalf("text report holds %U at byte %d:\n%q", r, i, out)
		}
	}
	for _, want := range []string{`/\x1b]0;PWNED\a\x1b[2J\u202e\u009b`, `garbage \x1b[31mred\x1b[0m \xff`} {
		if !strings.Contains(out, want) {
			t.Errorf("text report lacks %s:\n%s", want, out)
		}
	}
}

func TestTerminalSafe(t *testing.T) {
	for in, want := range map[string]string{
		"":                   "",
		"/api/x?q=1":         "/api/x?q=1",
		"é 日本 ✓":             "é 日本 ✓",
		`back\slash`:         `back\slash`,
		"\x1b[2J":            `\x1b[2J`,
		"a\tb\nc\r":          `a\tb\nc\r`,
		"\x00\x7f":           `\x00\x7f`,
		"\u009b31m":          `\u009b31m`,
		"\u202egnp.exe":      `\u202egnp.exe`,
		"\u2066x\u2069":      `\u2066x\u2069`,
		"bad \xff\xfe utf-8": `bad \xff\xfe utf-8`,
		"\xe2\x82":           `\xe2\x82`, // a truncated rune
	} {
		if got := TerminalSafe(in); got != want {
			t.Errorf("TerminalSafe(%q) = %q; want %q", in, got, want)
		}
	}
	clean := "192.0.2.7|/api/x"
	if n := testing.AllocsPerRun(100, func() { _ = TerminalSafe(clean) }); n != 0 {
		t.Errorf("%v allocations for a clean string", n)
	}
}
