package rules

import (
	"github.com/tollgate-dev/tollgate/failmode"
	"github.com/tollgate-dev/tollgate/limit"
)

// OnErrorOf returns the failure mode of r, one of the rules of c: r.OnError
// when set, else c.OnError, else failmode.Default (failmode.Of). It is the
// one place a rule's mode is decided: the engine refuses by it, the
// gateway chooses the store's fallback by it, and `tollgate check` prints
// it. Eventual and local rules decide in this process, so a Redis outage
// never fails them; their mode only answers errors their store returns.
func (c *Config) OnErrorOf(r *Rule) failmode.Mode {
	return failmode.Of(r.OnError, c.OnError)
}

// checkOnError reports a failure mode that is not one of the words at
// path, naming the word an old spelling became.
func checkOnError(mode failmode.Mode, path string, ps *problems) {
	if mode == failmode.Unset || mode.Known() {
		return
	}
	if now, ok := failmode.Old(string(mode)); ok {
		ps.add(path, "%q is the old spelling: write %s: %s", mode, lastName(path), now)
		return
	}
	if w := limit.Closest(string(mode), string(failmode.Open), string(failmode.Closed), string(failmode.Local)); w != "" {
		ps.add(path, "%q: want %s (did you mean %q?)", mode, failmode.Words, w)
		return
	}
	ps.add(path, "%q: want %s", mode, failmode.Words)
}

// lastName is the last name of a field path: "rules[2].on_error" gives
// "on_error".
func lastName(path string) string {
	for i := len(path) - 1; i >= 0; i-- {
		if path[i] == '.' {
			return path[i+1:]
		}
	}
	return path
}
