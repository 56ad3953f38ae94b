package escape

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// FuzzAppendJSONString: the result is valid JSON that decodes to v, with
// invalid UTF-8 replaced as encoding/json replaces it, and it is what
// encoding/json itself writes.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "plain", `q"b\s`, "\n\r\t\x00\x1f\x7f", "<a>&", "é\u2028\u2029", "\xff\xfe", "a\xc3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := AppendJSONString(nil, s)
		if string(AppendJSONString(nil, []byte(s))) != string(got) {
			t.Fatalf("string and []byte differ for %q", s)
		}
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("%q gave invalid JSON %s: %v", s, got, err)
		}
		if want := string([]rune(s)); utf8.ValidString(s) && back != want {
			t.Fatalf("%q read back as %q", s, back)
		}
		want, _ := json.Marshal(s)
		if string(want) != string(got) && s != "\x7f" && !containsDEL(s) {
			t.Fatalf("%q: %s, encoding/json writes %s", s, got, want)
		}
	})
}

func containsDEL(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == 0x7f {
			return true
		}
	}
	return false
}

func TestAppendPath(t *testing.T) {
	if got := string(AppendPath(nil, "/a b/%/?#/é/~!$&'()*+,;=:@")); got != "/a%20b/%25/%3F%23/%C3%A9/~!$&'()*+,;=:@" {
		t.Errorf("AppendPath: %s", got)
	}
}

func TestNoAllocations(t *testing.T) {
	buf := make([]byte, 0, 256)
	in := []byte("a \"quoted\" é \xff value\n")
	if n := testing.AllocsPerRun(100, func() {
		buf = AppendJSONString(buf[:0], in)
		buf = AppendPath(buf, in)
	}); n != 0 {
		t.Errorf("%v allocations", n)
	}
}

// TestAppendJSONString pins the escapes of hand-picked inputs, for string
// and []byte alike.
func TestAppendJSONString(t *testing.T) {
	for in, want := range map[string]string{
		"":                           `""`,
		"plain /a?b=c":               `"plain /a?b=c"`,
		"\"\\":                       `"\"\\"`,
		"\n\r\t\b\f\x00\x1f\x7f":     `"\n\r\t\b\f\u0000\u001f\u007f"`,
		"\xff":                       `"\ufffd"`,
		"a\xe2\x82":                  `"a\ufffd\ufffd"`,
		"\xed\xa0\x80":               `"\ufffd\ufffd\ufffd"`, // a surrogate
		"é€😀 <&>":                    `"é€😀 \u003c\u0026\u003e"`,
		"\u2028\u2029":               `"\u2028\u2029"`,
		"\xc3\xa9\xff\xc3\xa9":       `"é\ufffdé"`,
		"\U0010FFFF\xf4\x90\x80\x80": `"` + "\U0010FFFF" + `\ufffd\ufffd\ufffd\ufffd"`,
	} {
		for _, got := range []string{string(AppendJSONString(nil, in)), string(AppendJSONString([]byte("x"), []byte(in))[1:])} {
			if got != want {
				t.Errorf("AppendJSONString(%q) = %s, want %s", in, got, want)
			}
		}
	}
}
