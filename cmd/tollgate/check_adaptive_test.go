package main

import (
	"strings"
	"testing"
)

func TestCheckSummaryPrintsControllers(t *testing.T) {
	code, out, errOut := runCLI("check", "../../examples/adaptive-origin.yaml")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"limit  token_bucket rate 20/s burst 40 scaled by adaptive origin",
		"  origin\n    bounds    floor 10%, base 100%\n",
		"every     1s: cut by 50% × score, recover 5% per healthy interval after 1, hysteresis 10%",
		"signal    latency_p99 above 250ms, weight 0.5\n",
		"signal    error_rate above 5%, weight 0.3\n",
		"signal    header:X-Origin-Queue above 80, weight 0.2\n",
		"scales    api-per-ip\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}
