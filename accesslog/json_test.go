package accesslog

import (
	"encoding/json"
	"testing"
	"time"
	"unicode/utf8"
)

func TestAppendJSON(t *testing.T) {
	e := &Entry{
		Time: time.Date(2026, 3, 4, 5, 6, 7, 8000, time.FixedZone("", 3600)), Remote: []byte("::1"),
		Method: []byte("GET"), Host: []byte("api.example"), URI: []byte("/a?b=\"c\""), Status: 200, Bytes: 3,
		Duration: 1500 * time.Microsecond, UserAgent: []byte("x\xffy"), Rule: "r", Decision: "allowed",
	}
	want := `{"time":"2026-03-04T04:06:07.000008Z","remote_addr":"::1","method":"GET","host":"api.example","uri":"/a?b=\"c\"","status":200,"bytes":3,"duration_ms":1.500,"user_agent":"x\ufffdy","rule":"r","decision":"allowed"}` + "\n"
	if got := string(AppendJSON(nil, e)); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	buf := make([]byte, 0, 512)
	if n := testing.AllocsPerRun(100, func() { buf = AppendJSON(buf[:0], e) }); n != 0 {
		t.Errorf("AppendJSON allocates %v times", n)
	}
}

func TestAppendJSONString(t *testing.T) {
	for in, want := range map[string]string{
		"":                           `""`,
		"plain /a?b=c":               `"plain /a?b=c"`,
		"\"\\":                       `"\"\\"`,
		"\n\r\t\x00\x1f\x7f":         `"\n\r\t\u0000\u001f` + "\x7f" + `"`,
		"\xff":                       `"\ufffd"`,
		"a\xe2\x82":                  `"a\ufffd\ufffd"`,
		"\xed\xa0\x80":               `"\ufffd\ufffd\ufffd"`, // a surrogate
		"é€😀 <&>":                    `"é€😀 <&>"`,
		"\xc3\xa9\xff\xc3\xa9":       `"é\ufffdé"`,
		"\U0010FFFF\xf4\x90\x80\x80": `"` + "\U0010FFFF" + `\ufffd\ufffd\ufffd\ufffd"`,
	} {
		for _, got := range []string{string(appendJSONString(nil, in)), string(appendJSONString([]byte("x"), []byte(in))[1:])} {
			if got != want {
				t.Errorf("appendJSONString(%q) = %s, want %s", in, got, want)
			}
		}
		var s string
		if err := json.Unmarshal([]byte(want), &s); err != nil || !utf8.ValidString(s) {
			t.Errorf("%q: %s does not decode to valid UTF-8: %v", in, want, err)
		}
	}
	buf := make([]byte, 0, 256)
	in := []byte("x\xffy\tz\"é")
	if n := testing.AllocsPerRun(100, func() { buf = appendJSONString(buf[:0], in) }); n != 0 {
		t.Errorf("appendJSONString allocates %v times", n)
	}
}
