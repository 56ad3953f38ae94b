package scripts

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// The issue-26 scripts (bench-rules.sh, login-attack.sh), which need a
// quiet machine or minutes and so are not run here: each parses, every
// helper it calls is one bench-lib.sh defines, and every bench program it
// runs (go run ./X, go build ./X in bench/) exists.
func TestIssue26Scripts(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	lib, err := os.ReadFile("bench-lib.sh")
	if err != nil {
		t.Fatal(err)
	}
	defined := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^(\w+)\(\) \{`).FindAllStringSubmatch(string(lib), -1) {
		defined[m[1]] = true
	}
	for _, f := range []string{"bench-rules.sh", "login-attack.sh"} {
		t.Run(f, func(t *testing.T) {
			if out, err := exec.Command("bash", "-n", f).CombinedOutput(); err != nil {
				t.Fatalf("bash -n: %v\n%s", err, out)
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			src := string(b)
			m := regexp.MustCompile(`(?m)^\. "\$ROOT/scripts/bench-lib.sh" # (.*)$`).FindStringSubmatch(src)
			if m == nil {
				t.Fatal("does not source bench-lib.sh, naming what it uses")
			}
			for _, fn := range strings.Split(m[1], ", ") {
				if !defined[fn] {
					t.Errorf("uses %s, which bench-lib.sh does not define", fn)
				} else if len(regexp.MustCompile(`\b`+fn+`\b`).FindAllString(src, 3)) < 2 {
					t.Errorf("names %s but never calls it", fn)
				}
			}
			progs := regexp.MustCompile(`go (?:run|build -o \S+) \./(\w+)`).FindAllStringSubmatch(src, -1)
			if len(progs) == 0 {
				t.Fatal("runs no bench program")
			}
			for _, p := range progs {
				if _, err := os.Stat("../bench/" + p[1] + "/main.go"); err != nil {
					t.Errorf("runs bench/%s: %v", p[1], err)
				}
			}
		})
	}
}
