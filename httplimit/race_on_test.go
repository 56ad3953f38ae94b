//go:build race

package httplimit

// raceEnabled: the race detector slows every request several times.
const raceEnabled = true
