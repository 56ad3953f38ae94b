package replay

import (
	"strconv"
	"unicode/utf8"
)

// TerminalSafe returns s with everything a terminal could act on written
// as a visible escape instead: C0 and C1 control characters and DEL
// ("\x1b", "\u009b"), the bidirectional overrides and isolates that
// reorder what is shown (U+202A to U+202E, U+2066 to U+2069, U+200E,
// U+200F, U+061C), and bytes that are not UTF-8 ("\xff"). A backslash
// stays as it is. Text read from a log (paths, keys, whole lines) goes
// through it before it reaches a terminal, so that a line such as
// "GET /\x1b]0;title\x07" cannot retitle the window or clear the screen.
// s is returned as is, without allocating, when it holds none of these.
func TerminalSafe(s string) string {
	i := 0
	for i < len(s) {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if unsafeRune(r, n) {
			break
		}
		i += n
	}
	if i == len(s) {
		return s
	}
	b := make([]byte, 0, len(s)+16)
	b = append(b, s[:i]...)
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			b = append(b, `\x`...)
			b = append(b, hexDigits[s[i]>>4], hexDigits[s[i]&0xf])
		case unsafeRune(r, n):
			q := strconv.QuoteRuneToASCII(r) // '\x1b', '\u202e'
			b = append(b, q[1:len(q)-1]...)
		default:
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return string(b)
}

const hexDigits = "0123456789abcdef"

// unsafeRune reports whether the rune r, n bytes long, is one that
// TerminalSafe escapes.
func unsafeRune(r rune, n int) bool {
	switch {
	case r == utf8.RuneError && n <= 1: // not UTF-8
		return true
	case r < 0x20, r >= 0x7f && r < 0xa0:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}
