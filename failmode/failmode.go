// Package failmode is the failure mode, what a rate-limit decision answers
// while its store fails: the one type (Mode) of every setting that chooses
// it, the top-level on_error and a rule's, used by package rules (which
// decides each rule's mode), package storeopen (which gives each rule a
// view of its store answering by that mode) and store/redis (whose views
// answer by it). It is a leaf, importing the standard library only, so
// that a configuration can name a mode without importing a store driver.
//
// A Mode is its configuration word ("open", "closed", "local"): decoding
// it from YAML needs no parse, and no code reads a string back into a
// mode at run time. The zero Mode is Unset, which inherits (a rule's mode
// from the top-level one, that one from Default); Of is the one place the
// inheritance is decided. The old spellings (fail_open, fail_closed,
// allow, refuse) are in one table, Old, read only to name the word to
// write in an error.
package failmode

// Mode is a failure mode.
type Mode string

// The failure modes.
const (
	// Unset inherits the mode of the enclosing setting (see Of).
	Unset Mode = ""
	// Open allows the request.
	Open Mode = "open"
	// Closed refuses the request.
	Closed Mode = "closed"
	// Local decides in this process with the same policies, each
	// gateway alone, until the store is back: store/redis keeps an
	// in-memory store for it. An error that reaches the rule engine (a
	// store that has no such fallback) is then allowed, as with Open.
	Local Mode = "local"
)

// Default is the mode when none is set anywhere.
const Default = Local

// Of returns the first mode of modes that is set, or Default: Of(rule,
// top) is a rule's mode.
func Of(modes ...Mode) Mode {
	for _, m := range modes {
		if m != Unset {
			return m
		}
	}
	return Default
}

// Known reports whether m is one of Open, Closed and Local.
func (m Mode) Known() bool { return m == Open || m == Closed || m == Local }

// Words are the modes' words, for messages.
const Words = "open, closed or local"

// old maps the spellings of the failure modes before they were one
// vocabulary to their modes now.
var old = map[string]Mode{
	"fail_open": Open, "fail_closed": Closed,
	"allow": Open, "refuse": Closed,
}

// Old returns the mode an old spelling (fail_open, fail_closed, allow,
// refuse) became, or the mode itself when s is already a word, and
// whether s was either.
func Old(s string) (Mode, bool) {
	if m := Mode(s); m.Known() {
		return m, true
	}
	m, ok := old[s]
	return m, ok
}
