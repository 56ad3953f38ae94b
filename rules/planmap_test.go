package rules

import (
	"bytes"
	"encoding/json"
	"maps"
	"regexp"
	"strings"
	"testing"
)

// Every plan map error names the file and the line (and, in JSON, the
// column), never the identity; a JSON file is one object of strings with
// no repeated identity, as a text file has none.
func TestPlanMapErrorsArePlaced(t *testing.T) {
	cases := []struct {
		name, src, want string
	}{
		{"m.json", `{"secret-a": "free", "secret-a": "pro"}`, "m.json:1:22: identity repeated"},
		{"m.json", "{\n  \"secret-a\": \"free\"\n}\n{\"secret-b\": \"pro\"}\n", "m.json:4:1: invalid character '{' after top-level value"},
		{"m.json", "{\n  \"secret-a\": pro\n}", "m.json:2:15: invalid character 'p' looking for beginning of value"},
		{"m.json", "{\n  \"secret-a\": 5\n}", "m.json:2:15: want a plan name (a string), found a number"},
		{"m.json", `["secret-a"]`, "m.json:1:1: want a JSON object mapping identity to plan, found a list"},
		{"m.json", `{"secret-a": "free"`, "m.json:1:20: unexpected end of JSON input"},
		{"m.json", "", "m.json:1:1: want a JSON object mapping identity to plan, found nothing"},
		{"m.txt", "ok free\n\nsecret-a " + strings.Repeat("x", maxPlanMapLine) + "\n", "m.txt:3: line longer than 1048576 bytes"},
		{"m.txt", "secret-a free\nsecret-a pro\n", "m.txt:2: identity repeated"},
	}
	for _, c := range cases {
		_, err := parsePlanMap(c.name, strings.NewReader(c.src), strings.HasSuffix(c.name, ".json"))
		if err == nil || err.Error() != c.want {
			t.Errorf("%q: %v, want %s", c.src, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("%q: the error names an identity: %v", c.src, err)
		}
	}
	// Through the exported parser, which knows JSON by the name.
	if _, err := ParsePlanMap("members.json", strings.NewReader(`{"a": "free", "a": "pro"}`)); err == nil || !strings.HasPrefix(err.Error(), "members.json:1:15: identity repeated") {
		t.Errorf("ParsePlanMap: %v", err)
	}
	// A file that never ends (/dev/zero) is read only so far.
	if _, err := parsePlanMap("m.txt", zeros{}, false); err == nil || err.Error() != "m.txt:1: line longer than 1048576 bytes" {
		t.Errorf("endless text: %v", err)
	}
	if _, err := readAtMost(zeros{}, 1000); err == nil || err.Error() != "larger than 1000 bytes" {
		t.Errorf("endless JSON: %v", err)
	}
}

// zeros reads as an endless run of zero bytes, as /dev/zero does.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

var planMapErrorRE = map[bool]*regexp.Regexp{
	false: regexp.MustCompile(`^m\.txt:[1-9][0-9]*: `),
	true:  regexp.MustCompile(`^m\.json:[1-9][0-9]*:[1-9][0-9]*: `),
}

// FuzzParsePlanMap: a members file never panics the loader; every error
// carries the file and a position; a JSON file that loads holds what
// encoding/json reads from it.
func FuzzParsePlanMap(f *testing.F) {
	f.Add([]byte("# members\nkey-a pro\nkey-b\tfree\n"), false)
	f.Add([]byte("k free extra\n"), false)
	f.Add([]byte("k free\nk pro\n"), false)
	f.Add([]byte(`{"key-a": "pro", "key-b": "free"}`), true)
	f.Add([]byte(`{"a": "free", "a": "pro"}`), true)
	f.Add([]byte("{\"a\": 1}\n"), true)
	f.Add([]byte(`{"a":"b"} {}`), true)
	f.Fuzz(func(t *testing.T, data []byte, isJSON bool) {
		name := "m.txt"
		if isJSON {
			name = "m.json"
		}
		m, err := parsePlanMap(name, bytes.NewReader(data), isJSON)
		if err != nil {
			if !planMapErrorRE[isJSON].MatchString(err.Error()) {
				t.Fatalf("error without a position: %v", err)
			}
			return
		}
		if !isJSON {
			for id, plan := range m {
				if id == "" || plan == "" || strings.ContainsAny(id+plan, " \t\n") {
					t.Fatalf("entry %q -> %q", id, plan)
				}
			}
			return
		}
		var want map[string]string
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatalf("loaded %v, but encoding/json: %v", m, err)
		}
		if !maps.Equal(m, want) {
			t.Fatalf("loaded %v, encoding/json reads %v", m, want)
		}
	})
}
