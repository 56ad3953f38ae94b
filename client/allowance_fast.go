package client

// fastRateLimitList parses the common shape of a draft-10 RateLimit field
// without allocating: one field line holding a List of Items, each a String
// without escapes, with parameters that are all non-negative Integers, and
// with r and t present. handled is false for anything else (another field
// line, an escape, a Token or Decimal or Boolean parameter, a missing t,
// a syntax error...), and the caller then parses with the general parser,
// which also decides what is malformed. When handled, the result is the
// one parseRateLimitList gives (FuzzFastRateLimitList checks that).
func fastRateLimitList(v []string) (a Allowance, ok, handled bool) {
	if len(v) != 1 {
		return Allowance{}, false, false
	}
	s := v[0]
	i := 0
	for i < len(s) && s[i] == ' ' {
		i++
	}
	if i == len(s) {
		return Allowance{}, false, false
	}
	found := false
	for {
		// sf-string, no escapes.
		if s[i] != '"' {
			return Allowance{}, false, false
		}
		i++
		start := i
		for i < len(s) && s[i] != '"' {
			if c := s[i]; c == '\\' || c < 0x20 || c > 0x7e {
				return Allowance{}, false, false
			}
			i++
		}
		if i == len(s) {
			return Allowance{}, false, false
		}
		name := s[start:i]
		i++
		// Parameters: ;*SP key=integer.
		var r, t int64 = -1, -1
		for i < len(s) && s[i] == ';' {
			i++
			for i < len(s) && s[i] == ' ' {
				i++
			}
			ks := i
			if i == len(s) || !(isLCAlpha(s[i]) || s[i] == '*') {
				return Allowance{}, false, false
			}
			i++
			for i < len(s) && isKeyChar(s[i]) {
				i++
			}
			key := s[ks:i]
			if i == len(s) || s[i] != '=' {
				return Allowance{}, false, false // Boolean parameter, or worse
			}
			i++
			ds := i
			for i < len(s) && s[i] >= '0' && s[i] <= '9' {
				i++
			}
			if i == ds || i-ds > 15 || (i < len(s) && s[i] == '.') {
				return Allowance{}, false, false
			}
			var n int64
			for _, c := range []byte(s[ds:i]) {
				n = n*10 + int64(c-'0')
			}
			switch key {
			case paramRemaining:
				r = n
			case paramReset:
				t = n
			}
		}
		if r < 0 || t < 0 {
			return Allowance{}, false, false
		}
		b := Allowance{Remaining: r, Reset: seconds(t), Policy: name}
		if !found || b.tighter(a) {
			a, found = b, true
		}
		// OWS, then the end or a comma and OWS and another member.
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
		if i == len(s) {
			return a, true, true
		}
		if s[i] != ',' {
			return Allowance{}, false, false
		}
		i++
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
		if i == len(s) {
			return Allowance{}, false, false // trailing comma
		}
	}
}

func isLCAlpha(c byte) bool { return 'a' <= c && c <= 'z' }

// isKeyChar reports a character allowed after the first in an SF key.
func isKeyChar(c byte) bool {
	return isLCAlpha(c) || ('0' <= c && c <= '9') || c == '_' || c == '-' || c == '.' || c == '*'
}
