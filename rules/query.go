package rules

import (
	"net/url"
	"strings"
)

// QueryValue returns the first value of parameter name in rawQuery (the
// part of a URL after '?', as in url.URL.RawQuery), decoded, and whether it
// is present. It allocates only when the value is percent- or
// plus-encoded. Pairs that do not decode are skipped, as net/url skips
// them. Parameters whose name is encoded are matched after
// decoding. Adapters use it to implement Request.Query.
func QueryValue(rawQuery, name string) (string, bool) {
	for rawQuery != "" {
		var pair string
		pair, rawQuery, _ = strings.Cut(rawQuery, "&")
		k, v, _ := strings.Cut(pair, "=")
		if k != name {
			if !strings.ContainsAny(k, "%+") {
				continue
			}
			dk, err := url.QueryUnescape(k)
			if err != nil || dk != name {
				continue
			}
		}
		if !strings.ContainsAny(v, "%+") {
			return v, true
		}
		dv, err := url.QueryUnescape(v)
		if err != nil {
			// Skipped, as url.ParseQuery skips it: a backend reading
			// the parameter gets the next value, and so must the key.
			continue
		}
		return dv, true
	}
	return "", false
}
