package replay

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// chromium renders file in headless Chromium and returns the DOM after
// its scripts ran.
func chromium(t *testing.T, file string) string {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		if _, err := os.Stat("/usr/bin/chromium"); err != nil {
			t.Skip("chromium not installed")
		}
		bin = "/usr/bin/chromium"
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

// The HTML report is one offline file whose script draws every chart:
// rendered in headless Chromium, each chart's SVG holds its marks.
func TestHTMLReportDrawsChartsInChromium(t *testing.T) {
	t.Parallel() // a headless Chromium each, in a directory of its own
	cfg := Config{Suggest: true, Policies: policies(t,
		"fixed_window:limit=20,window=30s",
		"sliding_window:limit=20,window=30s",
		"token_bucket:rate=1/s,burst=20",
	)}
	first := runFile(t, "testdata/apache_excerpt.log", cfg)
	for _, b := range first.Busiest[:3] {
		cfg.Track = append(cfg.Track, b.Key)
	}
	rep := runFile(t, "testdata/apache_excerpt.log", cfg)
	if len(rep.Timelines) != 3 || rep.Timelines[0].Key != "75.97.9.59" {
		t.Fatalf("timelines: %d, first %q", len(rep.Timelines), rep.Timelines[0].Key)
	}
	var buf bytes.Buffer
	if err := WriteHTML(&buf, rep); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	// Self-contained: nothing fetched from anywhere.
	for _, bad := range []string{"<script src", "<link", "@import", "<img", "<iframe"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page contains %q", bad)
		}
	}
	file := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := chromium(t, file)

	// 3 policies' overviews + 3 timelines + 2 peak histograms.
	if !strings.Contains(dom, `data-charts="8"`) {
		t.Fatalf("the page did not report 8 charts drawn:\n%.2000s", dom)
	}
	charts := regexp.MustCompile(`<svg[^>]*data-chart="(\w+)"[^>]*data-marks="(\d+)"`).FindAllStringSubmatch(dom, -1)
	count := map[string]int{}
	for _, m := range charts {
		count[m[1]]++
		marks, _ := strconv.Atoi(m[2])
		if marks == 0 && m[1] != "timeline" {
			t.Errorf("%s chart drew no marks", m[1])
		}
	}
	if count["overview"] != 3 || count["timeline"] != 3 || count["peaks"] != 2 {
		t.Errorf("charts drawn: %v", count)
	}
	// The busiest key was refused under every policy: its timeline marks
	// refusals; refused bars are in the overviews.
	if !regexp.MustCompile(`data-key="75\.97\.9\.59" data-marks="[1-9]`).MatchString(dom) {
		t.Error("the busiest key's timeline marks no refusal")
	}
	if n := strings.Count(dom, `class="refused"`); n == 0 {
		t.Error("no refused bars drawn")
	}
}

// The charts are read by people: every y tick is a whole number drawn at
// its value, x ticks fall on round UTC times and carry the date with its
// year, the axis says UTC and the bucket width, refusals have a panel of
// their own scale, counts have thousands separators, and the suggestions
// are in the policies table.
func TestHTMLChartsHaveReadableAxes(t *testing.T) {
	t.Parallel() // a headless Chromium each, in a directory of its own
	cfg := Config{Suggest: true, Policies: policies(t, "fixed_window:limit=20,window=30s", "token_bucket:rate=1/s,burst=20")}
	rep := runFile(t, realLog, cfg)
	var buf bytes.Buffer
	if err := WriteHTML(&buf, rep); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := chromium(t, file)

	yticks := regexp.MustCompile(`<text[^>]*class="ytick"[^>]*data-v="([^"]*)"[^>]*>([^<]*)</text>`).FindAllStringSubmatch(dom, -1)
	if len(yticks) < 6 {
		t.Fatalf("%d y ticks found", len(yticks))
	}
	for _, m := range yticks {
		v, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil || thousands(v) != m[2] {
			t.Errorf("y tick labelled %q drawn at value %s; want a whole number labelled as drawn", m[2], m[1])
		}
	}
	xticks := regexp.MustCompile(`<text[^>]*class="xtick"[^>]*data-t="([^"]*)"[^>]*>([^<]*)</text>`).FindAllStringSubmatch(dom, -1)
	if len(xticks) < 4 {
		t.Fatalf("%d x ticks found", len(xticks))
	}
	dated := 0
	for _, m := range xticks {
		ms, err := strconv.ParseInt(m[1], 10, 64)
		// The log spans three days: ticks every few hours, on the hour.
		if err != nil || ms%(3600*1000) != 0 {
			t.Errorf("x tick %q at %s ms, not on a whole hour", m[2], m[1])
		}
		if regexp.MustCompile(`^2015-05-\d\d`).MatchString(m[2]) {
			dated++
		}
	}
	if dated < 3 {
		t.Errorf("%d x tick labels carry the date with its year; want one per day", dated)
	}
	if !regexp.MustCompile(`class="xcaption"[^>]*>time \(UTC\); bars: 5 min buckets<`).MatchString(dom) {
		t.Error("no x axis caption naming UTC and the bucket width")
	}
	panels := regexp.MustCompile(`<g class="refusals-panel" data-marks="(\d+)"`).FindAllStringSubmatch(dom, -1)
	if len(panels) != 2 || panels[0][1] == "0" || panels[1][1] == "0" {
		t.Errorf("refusals panels %v; want one per policy, each with marks", panels)
	}
	for _, want := range []string{"10,000 requests from 10,000 lines", "1,753 distinct keys", "All times are UTC",
		`<td class="suggestion">limit <b>60</b> for the 10 busiest keys`, `burst <b>49</b> for the 10 busiest keys`} {
		if !strings.Contains(dom, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}
