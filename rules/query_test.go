package rules

import (
	"net/url"
	"testing"
)

func TestQueryValueAgreesWithNetURL(t *testing.T) {
	queries := []string{"", "a=1", "a=1&b=2", "b=2&a=1&a=3", "a", "a=", "a=x%20y", "a=x+y", "%61=encoded-name", "a=%zz", "b=1&&a=2", "ab=1&a=2"}
	for _, q := range queries {
		want, _ := url.ParseQuery(q)
		got, ok := QueryValue(q, "a")
		wv, wok := want["a"]
		if ok != wok || ok && got != wv[0] {
			// url.ParseQuery drops a malformed pair; so do we.
			t.Errorf("%q: %q %v, net/url %q %v", q, got, ok, wv, wok)
		}
	}
}
