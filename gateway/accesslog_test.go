package gateway

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
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
