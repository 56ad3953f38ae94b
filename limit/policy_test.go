package limit_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/limit"
)

// A misspelt algorithm name is answered with the name it was probably
// meant to be; one far from every name lists them all.
func TestParseAlgorithmSuggests(t *testing.T) {
	cases := map[string]string{
		"token_bukket":  `unknown algorithm "token_bukket" (did you mean "token_bucket"?)`,
		"TokenBucket":   `unknown algorithm "TokenBucket" (did you mean "token_bucket"?)`,
		"leaky-bucket":  `(did you mean "leaky_bucket"?)`,
		"sliding_windw": `(did you mean "sliding_window"?)`,
		"fixed_windows": `(did you mean "fixed_window"?)`,
		"gcra":          "(want fixed_window, sliding_log, sliding_window, token_bucket or leaky_bucket)",
	}
	for in, want := range cases {
		_, err := limit.ParseAlgorithm(in)
		if !errors.Is(err, limit.ErrUnknownAlgorithm) || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseAlgorithm(%q) = %v, want an ErrUnknownAlgorithm containing %q", in, err, want)
		}
	}
}
