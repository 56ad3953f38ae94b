package limit

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Algorithm names one of the five algorithms.
type Algorithm uint8

// The algorithms, named as in configuration files.
const (
	AlgFixedWindow   Algorithm = iota + 1 // "fixed_window"
	AlgSlidingLog                         // "sliding_log"
	AlgSlidingWindow                      // "sliding_window"
	AlgTokenBucket                        // "token_bucket"
	AlgLeakyBucket                        // "leaky_bucket"
)

var algorithmNames = [...]string{
	AlgFixedWindow:   "fixed_window",
	AlgSlidingLog:    "sliding_log",
	AlgSlidingWindow: "sliding_window",
	AlgTokenBucket:   "token_bucket",
	AlgLeakyBucket:   "leaky_bucket",
}

// String returns the configuration name of a, e.g. "token_bucket".
func (a Algorithm) String() string {
	if int(a) < len(algorithmNames) && algorithmNames[a] != "" {
		return algorithmNames[a]
	}
	return fmt.Sprintf("Algorithm(%d)", uint8(a))
}

// ErrUnknownAlgorithm reports an algorithm name ParseAlgorithm does not know.
var ErrUnknownAlgorithm = errors.New("unknown algorithm")

// ParseAlgorithm returns the algorithm with configuration name s.
func ParseAlgorithm(s string) (Algorithm, error) {
	for a, name := range algorithmNames {
		if name != "" && name == s {
			return Algorithm(a), nil
		}
	}
	if name := closestAlgorithm(s); name != "" {
		return 0, fmt.Errorf("%w %q (did you mean %q?)", ErrUnknownAlgorithm, s, name)
	}
	return 0, fmt.Errorf("%w %q (want fixed_window, sliding_log, sliding_window, token_bucket or leaky_bucket)", ErrUnknownAlgorithm, s)
}

// closestAlgorithm returns the algorithm name within two edits of s,
// ignoring case ("token_bukket", "TokenBucket"), or "".
func closestAlgorithm(s string) string {
	return Closest(s, algorithmNames[1:]...)
}

// Closest returns the word of words within two edits of s (Levenshtein
// distance in bytes, ignoring the case of s), the nearest first, or ""
// when none is that near. It is the "did you mean" of tollgate's error
// messages, for every package that names a misspelt word.
func Closest(s string, words ...string) string {
	s = strings.ToLower(s)
	best, bestD := "", 3
	for _, w := range words {
		if w == "" {
			continue
		}
		if d := editDistance(s, w); d < bestD {
			best, bestD = w, d
		}
	}
	return best
}

// editDistance returns the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c++
			}
			cur[j] = min(c, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// ErrInvalidPolicy reports a policy whose parameters cannot work.
var ErrInvalidPolicy = errors.New("invalid policy")

// Quota is what a policy promises, in the terms of the IETF RateLimit-Policy
// header: Limit units of cost per Window.
type Quota struct {
	Limit  int64
	Window time.Duration
}

// Policy is an algorithm with its parameters. Implementations are small
// immutable values; convert one to a Policy once and reuse it, since the
// conversion of a struct to an interface allocates.
type Policy interface {
	// Algorithm names the algorithm.
	Algorithm() Algorithm
	// Validate reports every problem with the parameters, or nil.
	Validate() error
	// Quota is the policy's promise for RateLimit-Policy headers.
	Quota() Quota
	// String describes the policy in configuration syntax.
	String() string
}

// Stateful is a Policy that keeps a fixed-size State per key: every
// algorithm but the sliding log.
type Stateful interface {
	Policy
	// Decide applies a request of cost (>= 0; 0 only peeks) at now (Unix
	// ns) to st, the key's state (the zero State for an absent key), and
	// returns the state to store and the decision. A refused request or a
	// peek returns st unchanged. Decide does no I/O and does not allocate.
	Decide(st State, now, cost int64) (State, Decision)
}

// Logged is a Policy that keeps a variable-size Log per key: the sliding
// log.
type Logged interface {
	Policy
	// DecideLog applies a request of cost at now to the log l, which it
	// changes only to record an allowed request and to forget entries that
	// have left the window. A new key's log is the zero Log.
	DecideLog(l *Log, now, cost int64) Decision
}
