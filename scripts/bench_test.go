// Package scripts holds the repository's shell scripts; its tests check
// scripts/bench.sh without running a benchmark: the table writer's output
// for a sample results file, and a dry run that lists every step's
// command and checks that each exists.
package scripts

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func bench(t *testing.T, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	cmd := exec.Command("bash", append([]string{"bench.sh"}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("bench.sh %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

// tableRows returns the Markdown table's rows after its header and
// separator, each split into its cells.
func tableRows(t *testing.T, out string) (header []string, rows [][]string) {
	t.Helper()
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "| ") {
			lines = append(lines, l)
		}
	}
	if len(lines) < 2 {
		t.Fatalf("no table in:\n%s", out)
	}
	cells := func(l string) []string {
		f := strings.Split(strings.Trim(l, "|"), " | ")
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		return f
	}
	for _, l := range lines[2:] {
		rows = append(rows, cells(l))
	}
	return cells(lines[0]), rows
}

func TestBenchTable(t *testing.T) {
	out := bench(t, "-table", "testdata/bench-results.txt")
	want, err := os.ReadFile("testdata/bench-table.md")
	if err != nil {
		t.Fatal(err)
	}
	if out != string(want) {
		t.Errorf("table of testdata/bench-results.txt:\n%s\nwant testdata/bench-table.md:\n%s", out, want)
	}
	header, rows := tableRows(t, out)
	if got := strings.Join(header, ","); got != "what,tollgate,peer,ratio,target,command" {
		t.Errorf("header %q", got)
	}
	if len(rows) == 0 || len(rows) > 10 {
		t.Errorf("%d rows, want 1 to 10 (BENCHMARKS.md's first table)", len(rows))
	}
	for _, r := range rows {
		if len(r) != len(header) {
			t.Errorf("row %q has %d cells, want %d", r[0], len(r), len(header))
		}
		if !strings.Contains(r[4], "met") && !strings.Contains(r[4], "not measured") {
			t.Errorf("row %q: target %q has no verdict", r[0], r[4])
		}
	}
}

// A -compare run adds the other build's figure and this ÷ that, from the
// rounds' pairs; a figure not measured shows as "–", not as 0.
func TestBenchTableCompare(t *testing.T) {
	sample, err := os.ReadFile("testdata/bench-results.txt")
	if err != nil {
		t.Fatal(err)
	}
	extra := "#ref v1\ngateway.deny.ref.cpu 1 8.1\ncore.rand.ref.ns 1 170\ncore.rand.ref.ns 2 169\n"
	path := filepath.Join(t.TempDir(), "results")
	if err := os.WriteFile(path, append(sample, extra...), 0o644); err != nil {
		t.Fatal(err)
	}
	header, rows := tableRows(t, bench(t, "-table", path))
	if len(header) != 8 || header[6] != "v1" || !strings.HasPrefix(header[7], "this ÷ v1") {
		t.Fatalf("header %q", header)
	}
	got := map[string][2]string{}
	for _, r := range rows {
		if len(r) != len(header) {
			t.Fatalf("row %q has %d cells, want %d", r[0], len(r), len(header))
		}
		got[r[0]] = [2]string{r[6], r[7]}
	}
	for what, want := range map[string][2]string{
		"gateway refusing every request (429)":            {"8.1", "2.00×"},
		"one decision, memory store, random key among 1M": {"169.5", "2.00×"},
		"gateway proxying, rule never refusing":           {"–", "–"},
	} {
		if got[what] != want {
			t.Errorf("%s: ref %q, want %q", what, got[what], want)
		}
	}
}

// The dry run names every harness and checks each exists; every benchmark
// it runs is one that bench/ defines.
func TestBenchDryRun(t *testing.T) {
	out := bench(t, "-quick", "-dry-run", "-compare", "HEAD")
	for _, h := range []string{"scripts/bench-gateway.sh", "scripts/bench-forwardauth.sh", "scripts/bench-h2.sh",
		"bench/replay_speed.sh", "/rlsload ", "/replay_gen ", "bench.test", "git worktree add", "TOLLGATE_B=/"} {
		if !strings.Contains(out, h) {
			t.Errorf("dry run does not run %s:\n%s", h, out)
		}
	}
	src, err := filepath.Glob("../bench/*_test.go")
	if err != nil || len(src) == 0 {
		t.Fatalf("no ../bench/*_test.go: %v", err)
	}
	var all []byte
	for _, f := range src {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	// The benchmark patterns: ^PREFIX(A|B)$/... or ^PREFIX$.
	pats := regexp.MustCompile(`-test\.bench \^Benchmark(\w*)(?:\(([\w|]+)\))?`).FindAllStringSubmatch(out, -1)
	if len(pats) < 3 {
		t.Fatalf("%d benchmark runs in the dry run, want core, http and redis:\n%s", len(pats), out)
	}
	for _, p := range pats {
		for _, alt := range strings.Split(p[2], "|") {
			n := p[1] + alt
			if !bytes.Contains(all, []byte("func Benchmark"+n+"(b *testing.B)")) {
				t.Errorf("bench.sh runs Benchmark%s, which bench/ does not define", n)
			}
		}
	}
	if !strings.Contains(out, "sample table") {
		t.Errorf("dry run formats no sample table:\n%s", out)
	}
}

// The bench module builds as committed: a merge that changes the root
// module's requirements can leave bench/go.mod needing an update, which
// only a full bench.sh run (its first build) would otherwise find.
func TestBenchModuleNeedsNoUpdate(t *testing.T) {
	if testing.Short() {
		t.Skip("lists the bench module's packages")
	}
	cmd := exec.Command("go", "list", "-mod=readonly", "-deps", "./...")
	cmd.Dir = filepath.Join("..", "bench")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go list in bench/: %v\n%s", err, out)
	}
}
