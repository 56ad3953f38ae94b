package yamldecode

import (
	"bytes"
	"errors"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// The YAML library's syntax errors say "line N: problem", where N is not
// always the line at fault: a parser error (as opposed to a scanner
// error) counts lines from 0, and names the line where the enclosing
// mapping or list began rather than the one that broke it; an error on
// the first line has no line at all. syntaxError finds the line itself.

// parserProblems are the messages of the YAML parser's errors, whose line
// is counted from 0 and may be that of the enclosing collection.
var parserProblems = map[string]bool{
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"did not find expected '-' indicator":    true,
	"did not find expected <document start>": true,
	"did not find expected <stream-start>":   true,
	"did not find expected key":              true,
	"did not find expected node content":     true,
	"found duplicate %TAG directive":         true,
	"found duplicate %YAML directive":        true,
	"found incompatible YAML document":       true,
	"found undefined tag handle":             true,
}

var (
	syntaxLineRE = regexp.MustCompile(`^line (\d+): `)
	anchorRE     = regexp.MustCompile(`^unknown anchor '(.*)' referenced$`)
)

// syntaxError returns the position and the message, without the library's
// own "line N:", of the syntax error err found in data, the text of file.
func syntaxError(file string, data []byte, err error) (Pos, string) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if m := anchorRE.FindStringSubmatch(msg); m != nil {
		line, col := aliasPos(data, m[1])
		return Pos{File: file, Line: line, Col: col}, msg
	}
	if off := badByte(data, msg); off >= 0 {
		line := 1 + bytes.Count(data[:off], []byte("\n"))
		return Pos{File: file, Line: line, Col: off - bytes.LastIndexByte(data[:off], '\n')}, msg
	}
	line := 1 // no line: the error is on the first
	if m := syntaxLineRE.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = msg[len(m[0]):]
		if parserProblems[msg] {
			line = faultLine(data, line+1, msg)
		}
	}
	ends := lineEnds(data)
	line = min(max(line, 1), max(len(ends), 1))
	// The scanner's own tab errors may name the line of the scalar
	// before: the tab is on the first line from there that has one.
	last := line
	if strings.Contains(msg, "tab character") {
		last = len(ends)
	}
	for l := line; l <= last && l <= len(ends); l++ {
		start := 0
		if l > 1 {
			start = ends[l-2]
		}
		text := data[start:ends[l-1]]
		indent := len(text) - len(bytes.TrimLeft(text, " \t"))
		rest := bytes.TrimSpace(text[indent:])
		if len(rest) == 0 || rest[0] == '#' {
			continue // blank or a comment: its whitespace does not count
		}
		if i := bytes.IndexByte(text[:indent], '\t'); i >= 0 {
			return Pos{File: file, Line: l, Col: i + 1}, "a tab in the indentation: YAML indents with spaces only"
		}
	}
	if h := syntaxHints[msg]; h != "" {
		msg += " (" + h + ")"
	}
	return Pos{File: file, Line: line, Col: 1}, msg
}

// syntaxHints say what most often causes the library's terser errors.
var syntaxHints = map[string]string{
	"did not find expected key":                      "check this line's indentation: the keys of one mapping line up",
	"did not find expected '-' indicator":            "check this line's indentation: the items of one list line up",
	"mapping values are not allowed in this context": "quote a value holding \": \", or check the indentation",
}

// badByte returns the offset of the first byte of UTF-8 data that the
// YAML reader's error msg is about (a control character, a malformed
// UTF-8 sequence), or -1 when msg is not such an error or data is not
// UTF-8 (a BOM-marked UTF-16 file).
func badByte(data []byte, msg string) int {
	control := msg == "control characters are not allowed"
	if !control && !strings.Contains(msg, "UTF-8") && msg != "invalid Unicode character" {
		return -1
	}
	if bytes.HasPrefix(data, []byte("\xfe\xff")) || bytes.HasPrefix(data, []byte("\xff\xfe")) {
		return -1
	}
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			return i
		case r < 0x20 && r != '\t' && r != '\n' && r != '\r',
			r == 0x7f, r >= 0x80 && r < 0xa0 && r != 0x85,
			r >= 0xd800 && r <= 0xdfff, r == 0xfffe, r == 0xffff:
			return i
		}
		i += n
	}
	return -1
}

// faultLine returns the first line from which the first lines of data
// fail to parse with the error problem: the line at fault, when the
// library named the line where the enclosing collection began. It
// returns from when no later line does.
func faultLine(data []byte, from int, problem string) int {
	ends := lineEnds(data)
	fails := func(k int) bool { return firstProblem(data[:ends[k-1]]) == problem }
	if from < 1 || from > len(ends) || !fails(len(ends)) {
		return from
	}
	lo, hi := from, len(ends)
	for lo < hi {
		mid := lo + (hi-lo)/2
		if fails(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// lineEnds returns the offset just past each line of data.
func lineEnds(data []byte) []int {
	var ends []int
	for i, b := range data {
		if b == '\n' {
			ends = append(ends, i+1)
		}
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		ends = append(ends, len(data))
	}
	return ends
}

// firstProblem returns the message, without its line, of the first syntax
// error in the YAML stream data, or "".
func firstProblem(data []byte) string {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return ""
		}
		if err != nil {
			msg := strings.TrimPrefix(err.Error(), "yaml: ")
			if m := syntaxLineRE.FindStringSubmatch(msg); m != nil {
				msg = msg[len(m[0]):]
			}
			return msg
		}
	}
}

// aliasPos returns the line and column of the first alias *name in data,
// or 1, 1.
func aliasPos(data []byte, name string) (line, col int) {
	at := []byte("*" + name)
	for i := 0; ; {
		j := bytes.Index(data[i:], at)
		if j < 0 {
			return 1, 1
		}
		j += i
		end := j + len(at)
		if end == len(data) || bytes.IndexByte([]byte(" \t\r\n,]}"), data[end]) >= 0 {
			line = 1 + bytes.Count(data[:j], []byte("\n"))
			return line, j - bytes.LastIndexByte(data[:j], '\n')
		}
		i = j + 1
	}
}
