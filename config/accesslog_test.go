package config

import "testing"

// access_log.query and redact are checked at their lines.
func TestAccessLogQueryProblems(t *testing.T) {
	for _, c := range []struct {
		src  string
		want []want
	}{
		{"access_log:\n  path: \"-\"\n  query: hide\n", []want{{3, `access_log.query "hide": want keep, drop or redact`}}},
		{"access_log:\n  path: \"-\"\n  query: redcat\n", []want{{3, `(did you mean "redact"?)`}}},
		{"access_log:\n  path: \"-\"\n  redact: [token]\n", []want{{3, "access_log.redact: parameter names to redact are read only with query: redact"}}},
		{"access_log:\n  path: \"-\"\n  query: redact\n  redact: [\"\"]\n", []want{{4, "access_log.redact: parameter name"}}},
		{"access_log:\n  query: drop\n", []want{{1, "access_log.query and redact are set but access_log.path is not"}}},
	} {
		_, err := Parse("c.yaml", []byte(c.src))
		checkProblems(t, err, c.want)
	}
	for _, ok := range []string{
		"access_log: {path: \"-\", query: keep}\n",
		"access_log: {path: \"-\", query: drop}\n",
		"access_log: {path: \"-\", query: redact}\n",
		"access_log: {path: \"-\", query: redact, redact: [token, API_KEY]}\n",
	} {
		if _, err := Parse("c.yaml", []byte(ok)); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
}
