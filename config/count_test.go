package config

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestCountAndPenaltyDecodeAndDescribe(t *testing.T) {
	c, err := Parse("login.yaml", []byte(`routes: [{path: /, upstream: "http://127.0.0.1:9"}]
rules:
  - name: login
    match: {paths: [/login]}
    count:
      statuses: ["401", "403"]
    penalty: 15m
    policies:
      - {algorithm: fixed_window, limit: 5, window: 15m}
      - {algorithm: fixed_window, limit: 20, window: 1d, penalty: 24h}
`))
	if err != nil {
		t.Fatal(err)
	}
	r := c.Rules[0]
	if r.Count == nil || strings.Join(r.Count.Statuses, ",") != "401,403" || r.Penalty != 15*time.Minute || r.Policies[1].Penalty != 24*time.Hour {
		t.Fatalf("rule %+v", r)
	}
	var b bytes.Buffer
	c.Describe(&b)
	for _, want := range []string{
		"count  counts only answers 401, 403, charged after the answer",
		"penalty a refused key is refused for 15m\n",
		"limit 20 per 1d, a refused key is refused for 24h\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("describe lacks %q:\n%s", want, b.String())
		}
	}
}

func TestCountAndPenaltyProblemsAtTheirLines(t *testing.T) {
	_, err := Parse("login.yaml", []byte(`routes: [{path: /, upstream: "http://127.0.0.1:9"}]
rules:
  - name: login
    count:
      statuses:
        - "401"
        - "6xx"
    penalty: 500ms
    policies:
      - {algorithm: fixed_window, limit: 5, window: 15m}
      - algorithm: leaky_bucket
        rate: 1/s
      - algorithm: fixed_window
        limit: 5
        window: 1m
        penalty: 2000h
`))
	checkProblems(t, err, []want{
		{7, "rules[0].count.statuses[1]"},
		{8, "rules[0].penalty: 500ms: want between 1s and 720h (30 days)"},
		{11, "rules[0].policies[1].mode: a counting rule cannot delay"},
		{16, "rules[0].policies[2].penalty: 2000h0m0s"},
	})
}
