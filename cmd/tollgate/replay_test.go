package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// excerpt is 373 lines of a real Apache log (see replay/testdata); the
// figures below come from replay/testdata/reference.py, an independent
// computation.
const excerpt = "../../replay/testdata/apache_excerpt.log"

func TestReplayText(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run([]string{"replay", "-policy", "token_bucket:rate=1/s,burst=20", "-suggest", excerpt}, &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{
		"373 requests simulated, 30 distinct keys",
		"refused 35 (9.38%)",
		"the busiest client, 75.97.9.59 (273 requests), would have been refused 35 times, first at 2015-05-18T08:05:22Z",
		"burst 49 refuses none of the 10 busiest keys (token_bucket:rate=1/s,burst=49)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// stderr is not a terminal: no progress bar, nothing at all.
	if stderr.Len() != 0 {
		t.Errorf("stderr: %q", stderr.String())
	}
}

func TestReplayJSONAndHTMLFromStdin(t *testing.T) {
	data, err := os.ReadFile(excerpt)
	if err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	o := registerReplayFlags(fs)
	dir := t.TempDir()
	html := filepath.Join(dir, "r.html")
	if err := fs.Parse([]string{"-policy", "fixed_window:limit=20,window=30s", "-json", "-", "-html", html, "-progress", "never"}); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if err := runReplay(context.Background(), o, "-", bytes.NewReader(data), &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Input struct {
			Simulated int64 `json:"simulated"`
		} `json:"input"`
		Policies []struct {
			Refused int64 `json:"refused"`
			Seam    struct {
				Admitted int64 `json:"admitted"`
			} `json:"seam"`
		} `json:"policies"`
		Timelines []struct {
			Key string `json:"key"`
		} `json:"timelines"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("stdout is not the JSON report: %v\n%.500s", err, stdout.String())
	}
	if rep.Input.Simulated != 373 || len(rep.Policies) != 1 || rep.Policies[0].Refused != 117 || rep.Policies[0].Seam.Admitted != 26 {
		t.Errorf("JSON report %+v; want 373 simulated, 117 refused, seam 26", rep)
	}
	// Standard input was spooled so that the second pass could record the
	// busiest keys' timelines.
	if len(rep.Timelines) != 5 || rep.Timelines[0].Key != "75.97.9.59" {
		t.Errorf("timelines %+v", rep.Timelines)
	}
	page, err := os.ReadFile(html)
	if err != nil || !bytes.Contains(page, []byte(`id="report-data"`)) {
		t.Errorf("HTML report: %v, %d bytes", err, len(page))
	}
}

func TestReplayConfigFile(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "tollgate.yaml")
	yaml := `rules:
  - name: per-ip
    key: ip
    policies:
      - algorithm: token_bucket
        rate: 1/s
        burst: 20
`
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"replay", "-config", cfg, "-json", "-", excerpt}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var rep struct {
		Policies []struct {
			Name      string           `json:"name"`
			Refused   int64            `json:"refused"`
			RefusedBy map[string]int64 `json:"refused_by"`
		} `json:"policies"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Policies) != 1 || rep.Policies[0].Refused != 35 || rep.Policies[0].RefusedBy["per-ip"] != 35 {
		t.Errorf("config replay: %+v; want 35 refused by per-ip", rep.Policies)
	}
}

func TestReplayProgressAlways(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"replay", "-progress", "always", "-policy", "token_bucket:rate=1/s", excerpt}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if stderr.Len() == 0 {
		t.Error("-progress always drew nothing on stderr")
	}
}

func TestReplayUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"replay", excerpt},
		{"replay", "-policy", "token_bucket:rate=fast", excerpt},
		{"replay", "-policy", "token_bucket:rate=1/s", "-format", "xml", excerpt},
		{"replay", "-policy", "token_bucket:rate=1/s", "-key", "ip,shoe", excerpt},
		{"replay", "-policy", "token_bucket:rate=1/s", "a", "b"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != exitUsage {
			t.Errorf("%q: exit %d, want %d (%s)", args, code, exitUsage, stderr.String())
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"replay", "-policy", "token_bucket:rate=1/s", "/nonexistent/log"}, &stdout, &stderr); code != exitFail {
		t.Errorf("missing file: exit %d, want %d", code, exitFail)
	}
	if want := "tollgate replay: stat /nonexistent/log: no such file or directory\n"; stderr.String() != want {
		t.Errorf("missing file: stderr %q; want %q", stderr.String(), want)
	}
}

// -reorder-lines bounds the reordering window: the real log, up to a
// minute out of order, then has lines simulated early and late.
func TestReplayReorderLinesBoundsTheWindow(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run([]string{"replay", "-policy", "token_bucket:rate=1/s,burst=20", "-reorder-lines", "2", excerpt}, &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, want := range []string{"reordering window had passed: the window holds at most 2 lines (-reorder-lines)",
		"requests arrived after a later time had been simulated"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, stdout.String())
		}
	}
}

// A run that simulated nothing exits non-zero and says why, naming the
// fields it saw when none was a timestamp; what it quotes from the input
// reaches the terminal escaped.
func TestReplayFailsWhenNothingWasSimulated(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name, content string
		want          []string
	}{
		{"empty.log", "\n\n", []string{"the input has no log lines"}},
		{"garbage.log", "not a log line\nnor this one\n", []string{"all 2 lines are malformed for the combined format"}},
		{"binary.log", "\x7fELF\x02\x01\x01\x00\x00\x00\x00\n\x00\x00\x03\x00>\x00\n", []string{"not a text log (NUL bytes in 2 lines)"}},
		{"fields.jsonl", `{"when":"2026-11-30T00:00:00Z","ip":"192.0.2.1","\u001b[2J":1}` + "\n",
			[]string{`no timestamp field among when, ip, \x1b[2J; name it with -field time=NAME (looked for time, ts,`}},
		{"filtered.log", `192.0.2.1 - - [17/May/2015:10:05:03 +0000] "GET /static/x HTTP/1.1" 200 5` + "\n",
			[]string{"the filters left none of 1 requests"}},
	} {
		path := filepath.Join(dir, c.name)
		if err := os.WriteFile(path, []byte(c.content), 0o644); err != nil {
			t.Fatal(err)
		}
		var stdout, stderr bytes.Buffer
		code := run([]string{"replay", "-policy", "token_bucket:rate=1/s", "-path-prefix", "/api/", path}, &stdout, &stderr)
		if code != exitFail {
			t.Errorf("%s: exit %d, want %d", c.name, code, exitFail)
		}
		for _, w := range c.want {
			if !strings.Contains(stderr.String(), w) {
				t.Errorf("%s: stderr %q lacks %q", c.name, stderr.String(), w)
			}
		}
		if strings.ContainsRune(stdout.String()+stderr.String(), 0x1b) {
			t.Errorf("%s: an escape character reached the terminal:\n%q\n%q", c.name, stdout.String(), stderr.String())
		}
	}
}

// On a terminal the progress bar is drawn on stderr; through a pipe there
// is none (TestReplayText). script(1) gives the binary a pseudo-terminal.
func TestReplayProgressBarOnTerminal(t *testing.T) {
	scriptBin, err := exec.LookPath("script")
	if err != nil {
		t.Skip("script(1) not installed")
	}
	bin := tollgateBinary(t)
	abs, err := filepath.Abs(excerpt)
	if err != nil {
		t.Fatal(err)
	}
	cmdline := bin + " replay -policy token_bucket:rate=1/s,burst=20 " + abs
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, scriptBin, "-qec", cmdline, "/dev/null").CombinedOutput()
	if err != nil {
		t.Fatalf("script: %v\n%s", err, out)
	}
	if !bytes.Contains(out, []byte("replaying")) || !bytes.Contains(out, []byte("refused 35")) {
		t.Errorf("no progress bar (or no report) on a terminal:\n%q", out)
	}
	// The same command through pipes: the report only, stderr silent.
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "replay", "-policy", "token_bucket:rate=1/s,burst=20", abs)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if stderr.Len() != 0 || !bytes.Contains(stdout.Bytes(), []byte("refused 35")) {
		t.Errorf("through pipes: stderr %q, stdout %.200q", stderr.String(), stdout.String())
	}
}

// A members_file is read relative to the configuration file, wherever
// tollgate replay runs from, and its members get their plan: the client
// the free plan refuses 35 times is a pro member and is not refused.
func TestReplayConfigMembersFileRelative(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "members.txt"), []byte("75.97.9.59 pro\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "tollgate.yaml")
	yaml := `rules:
  - name: per-ip
    key: ip
    tiers:
      default: free
      plans:
        free: [{algorithm: token_bucket, rate: 1/s, burst: 20}]
        pro: [{algorithm: token_bucket, rate: 1000/s, burst: 1000}]
      members_file: members.txt
`
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"replay", "-config", cfg, "-json", "-", excerpt}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var rep struct {
		Policies []struct {
			Refused int64 `json:"refused"`
		} `json:"policies"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Policies) != 1 || rep.Policies[0].Refused != 0 {
		t.Errorf("replay with the members file: %+v; want the pro member not refused", rep.Policies)
	}
}
