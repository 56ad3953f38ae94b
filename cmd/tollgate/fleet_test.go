package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// fleetLog writes a log of one client (10.0.0.1) sending 30 requests a
// second for 3 seconds, interleaved with garbage lines.
func fleetLog(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for i := range 90 {
		at := start.Add(time.Duration(i) * time.Second / 30)
		b.WriteString(`{"time":"` + at.Format(time.RFC3339Nano) + `","remote_addr":"10.0.0.1","method":"GET","uri":"/x","status":200}` + "\n")
		if i%10 == 0 {
			b.WriteString("garbage \x00 line\n{\"time\":\n")
		}
	}
	path := filepath.Join(t.TempDir(), "fleet.log")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// `tollgate replay -fleet` reports every tier in the text, JSON and HTML
// reports; the garbage lines are skipped and counted, not fed to the
// fleet.
func TestReplayFleet(t *testing.T) {
	log := fleetLog(t)
	dir := t.TempDir()
	jsonOut, htmlOut := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.html")
	code, out, errOut := runCLI("replay", "-progress", "never", "-policy", "fixed_window:limit=20,window=10s",
		"-fleet", "3", "-fleet-routing", "roundrobin", "-json", jsonOut, "-html", htmlOut, log)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"18 malformed lines skipped", "Fleet of 3 nodes, roundrobin routing", "90 requests on 1 keys",
		"the exact single counter admits 20 and refuses 70", "local", "eventual", "gossip", "strict"} {
		if !strings.Contains(out, want) {
			t.Errorf("text report lacks %q:\n%s", want, out)
		}
	}
	var rep struct {
		Input    struct{ Malformed int }
		Sections []struct {
			Title string
			Data  []struct {
				Requests int
				Tiers    []struct {
					Tier      string
					Admitted  int
					Overshoot int
				}
			}
		}
	}
	b, err := os.ReadFile(jsonOut)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Input.Malformed != 18 || len(rep.Sections) != 1 || len(rep.Sections[0].Data) != 1 {
		t.Fatalf("json: %s", b)
	}
	fl := rep.Sections[0].Data[0]
	if fl.Requests != 90 || len(fl.Tiers) != 4 {
		t.Fatalf("json fleet: %+v", fl)
	}
	for _, tr := range fl.Tiers {
		if tr.Admitted-tr.Overshoot > 20 {
			t.Errorf("%s admitted %d with overshoot %d: more than the limit within it", tr.Tier, tr.Admitted, tr.Overshoot)
		}
	}
	dom := chromiumDOM(t, htmlOut)
	if !strings.Contains(dom, "Fleet simulation") {
		t.Fatal("the HTML report has no fleet section")
	}
	// One chart, a line per series: overshoot and false refusals of
	// each of the four tiers.
	if n := len(regexp.MustCompile(`<svg class="fleet-chart"`).FindAllString(dom, -1)); n != 1 {
		t.Fatalf("%d fleet charts", n)
	}
	if n := len(regexp.MustCompile(`<polyline[^>]*points="[0-9]`).FindAllString(dom, -1)); n < 8 {
		t.Fatalf("%d polylines drawn, want 8 or more", n)
	}
}

func TestReplayFleetUsageErrors(t *testing.T) {
	log := fleetLog(t)
	for _, args := range [][]string{
		{"-fleet", "3", "-fleet-routing", "anycast"},
		{"-fleet", "3", "-fleet-tiers", "local,paxos"},
		{"-fleet", "3", "-fleet-routing", "regional", "-fleet-weights", "4,0"},
		{"-fleet", "-2"},
		{"-fleet", "3", "-fleet-loss", "2"},
	} {
		a := append([]string{"replay", "-progress", "never", "-policy", "fixed_window:limit=20,window=10s"}, args...)
		if code, _, errOut := runCLI(append(a, log)...); code != exitUsage || !strings.Contains(errOut, "tollgate replay:") {
			t.Errorf("%v: exit %d: %s", args, code, errOut)
		}
	}
}

// chromiumDOM renders file in headless Chromium and returns its DOM.
func chromiumDOM(t *testing.T, file string) string {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--no-first-run", "--user-data-dir="+t.TempDir(), "--dump-dom", "file://"+file)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, errb.String())
	}
	return out.String()
}
