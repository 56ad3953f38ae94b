package gateway

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/tollgate-dev/tollgate/gateway/observe"
)

// The combined format is nginx's, with the rule and the decision
// appended, so tools reading combined logs (and tollgate replay) read it.
func TestAccessLogCombined(t *testing.T) {
	file := filepath.Join(t.TempDir(), "access.log")
	g, base := startTestGateway(t, `routes: [{path: /, upstream: demo}]
access_log: {path: "`+file+`", format: combined}
rules: [{name: one, policies: [{algorithm: fixed_window, limit: 1, window: 1h}]}]
`)
	get(t, base+"/a?b=\"c\"", "")
	get(t, base+"/a", "")
	g.Close()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	re := regexp.MustCompile(`^127\.0\.0\.1 - - \[\d\d/\w{3}/\d{4}:\d\d:\d\d:\d\d [+-]\d{4}\] "GET (\S+) HTTP/1\.1" (\d{3}) (\d+) "-" "Go-http-client/1\.1" rule=(\S+) decision=(\S+)$`)
	want := [][]string{{`/a?b=\x22c\x22`, "200", "one", "allowed"}, {"/a", "429", "one", "refused"}}
	if len(lines) != len(want) {
		t.Fatalf("lines:\n%s", data)
	}
	for i, l := range lines {
		m := re.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("line %d does not parse: %q", i, l)
		}
		if m[1] != want[i][0] || m[2] != want[i][1] || m[4] != want[i][2] || m[5] != want[i][3] || m[3] == "0" {
			t.Errorf("line %d = %q, want %v", i, l, want[i])
		}
	}
}

// sendRaw writes raw to the gateway at addr and reads the answer until the
// gateway closes the connection (the request asks it to).
func sendRaw(t *testing.T, addr, raw string) string {
	t.Helper()
	_, br := dialRaw(t, addr, raw)
	b, _ := io.ReadAll(br)
	return string(b)
}

// hostileRequest carries tabs, quotes, backslashes and invalid UTF-8 in
// every client-controlled field the access log shows. (fasthttp refuses
// other control bytes in the request line and header values.)
const hostileRequest = "GET /p?q=\"a\\b\"%20\xff\xfe\xc3\xa9 HTTP/1.1\r\n" +
	"Host: h\xff\xc3\xa9\r\n" +
	"User-Agent: x\xffy\tz\"q\\\xe2\x82\r\n" +
	"Referer: r\"\\\t\xc0\xafs\u00e9\U0001F600\r\n" +
	"Connection: close\r\n\r\n"

// Every line of the JSON access log is valid JSON whatever the client
// sends: control bytes are escaped, invalid UTF-8 becomes U+FFFD, valid
// UTF-8 is kept.
func TestAccessLogJSONEscapes(t *testing.T) {
	file := filepath.Join(t.TempDir(), "access.log")
	g, _ := startTestGateway(t, `routes: [{path: /, upstream: demo}]
access_log: {path: "`+file+`", format: json}
rules: [{name: r.1, policies: [{algorithm: fixed_window, limit: 10, window: 1h}]}]
`)
	if out := sendRaw(t, g.Addr().String(), hostileRequest); !strings.HasPrefix(out, "HTTP/1.1 200") {
		t.Fatalf("response: %q", out)
	}
	g.Close()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 1 || !json.Valid([]byte(lines[0])) {
		t.Fatalf("not one valid JSON line:\n%q", data)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &got); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{
		"method":     "GET",
		"uri":        "/p?q=\"a\\b\"%20\ufffd\ufffd\u00e9",
		"host":       "h\ufffd\u00e9",
		"user_agent": "x\ufffdy\tz\"q\\\ufffd\ufffd",
		"rule":       "r.1",
		"decision":   "allowed",
	} {
		if got[k] != want {
			t.Errorf("%s = %q, want %q", k, got[k], want)
		}
	}
}

// In the combined format no client value can end a quoted field or the
// line: '"', '\\', control bytes and non-ASCII bytes are escaped as \xHH.
func TestAccessLogCombinedEscapes(t *testing.T) {
	file := filepath.Join(t.TempDir(), "access.log")
	g, _ := startTestGateway(t, `routes: [{path: /, upstream: demo}]
access_log: {path: "`+file+`", format: combined}
rules: [{name: r.1, policies: [{algorithm: fixed_window, limit: 10, window: 1h}]}]
`)
	sendRaw(t, g.Addr().String(), hostileRequest)
	g.Close()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	line, ok := strings.CutSuffix(string(data), "\n")
	re := regexp.MustCompile(`^127\.0\.0\.1 - - \[[^]]+\] "GET ([^" ]+) HTTP/1\.1" 200 \d+ "([^"]*)" "([^"]*)" rule=(\S+) decision=(\S+)$`)
	m := re.FindStringSubmatch(line)
	if !ok || strings.ContainsAny(line, "\n\r\t") || m == nil {
		t.Fatalf("line does not parse: %q", data)
	}
	for i, want := range []string{
		`/p?q=\x22a\x5Cb\x22%20\xFF\xFE\xC3\xA9`,
		`r\x22\x5C\x09\xC0\xAFs\xC3\xA9\xF0\x9F\x98\x80`,
		`x\xFFy\x09z\x22q\x5C\xE2\x82`,
		"r.1",
		"allowed",
	} {
		if m[i+1] != want {
			t.Errorf("field %d = %s, want %s", i+1, m[i+1], want)
		}
	}
	// The request line's method and protocol, which fasthttp checks today,
	// are escaped by the writer all the same.
	file = filepath.Join(t.TempDir(), "direct.log")
	a, err := observe.OpenAccessLog(file, "combined")
	if err != nil {
		t.Fatal(err)
	}
	a.Finish(&fasthttp.RequestCtx{}, &observe.Entry{Method: []byte("GE\"T\n"), Uri: []byte("/"), Proto: []byte("HTTP/1.1\" 200 0 \"")})
	a.Close()
	if data, err = os.ReadFile(file); err != nil {
		t.Fatal(err)
	}
	if want := ` "GE\x22T\x0A / HTTP/1.1\x22 200 0 \x22" 200 0 "-" "-" rule=- decision=-` + "\n"; !strings.HasSuffix(string(data), want) || strings.Count(string(data), "\n") != 1 {
		t.Errorf("line = %q, want it to end with %q", data, want)
	}
}
