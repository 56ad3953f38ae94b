package rules

import "github.com/tollgate-dev/tollgate/limit"

// The failure modes, the values of Config.OnError and Rule.OnError: what a
// rule answers when its store fails. One vocabulary for every setting that
// chooses it (the gateway's file has no other).
const (
	// OnErrorOpen allows the request.
	OnErrorOpen = "open"
	// OnErrorClosed refuses the request.
	OnErrorClosed = "closed"
	// OnErrorLocal decides in this process with the same policies, each
	// gateway alone, until the store is back: store/redis keeps an
	// in-memory store for it. An error that reaches the engine (a store
	// that has no such fallback) is then allowed, as with OnErrorOpen.
	OnErrorLocal = "local"
)

// oldOnError maps the spellings of the failure modes before they were one
// vocabulary to their words now.
var oldOnError = map[string]string{
	"fail_open": OnErrorOpen, "fail_closed": OnErrorClosed,
	"allow": OnErrorOpen, "refuse": OnErrorClosed,
}

// OnErrorOf returns the failure mode of r, one of the rules of c: r.OnError
// when set, else c.OnError, else OnErrorLocal. It is the one place a
// rule's mode is decided: the engine refuses by it, the gateway chooses
// the store's fallback by it, and `tollgate check` prints it. Eventual and
// local rules decide in this process, so a Redis outage never fails them;
// their mode only answers errors their store returns.
func (c *Config) OnErrorOf(r *Rule) string {
	switch {
	case r.OnError != "":
		return r.OnError
	case c.OnError != "":
		return c.OnError
	}
	return OnErrorLocal
}

// checkOnError reports a failure mode that is not one of the words at
// path, naming the word an old spelling became.
func checkOnError(mode, path string, ps *problems) {
	switch mode {
	case "", OnErrorOpen, OnErrorClosed, OnErrorLocal:
		return
	}
	if now, ok := oldOnError[mode]; ok {
		ps.add(path, "%q is the old spelling: write %s: %s", mode, lastName(path), now)
		return
	}
	if w := limit.Closest(mode, OnErrorOpen, OnErrorClosed, OnErrorLocal); w != "" {
		ps.add(path, "%q: want open, closed or local (did you mean %q?)", mode, w)
		return
	}
	ps.add(path, "%q: want open, closed or local", mode)
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
