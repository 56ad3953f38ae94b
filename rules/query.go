package rules

// QueryValue returns the first value of parameter name in rawQuery (the
// part of a URL after '?', as in url.URL.RawQuery), decoded, and whether it
// is present. It allocates only when the value is percent- or
// plus-encoded. Adapters use it to implement Request.Query.
func QueryValue(rawQuery, name string) (string, bool) {
	return "", false
}
