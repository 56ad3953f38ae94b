//go:build race

package memory

// raceEnabled: the race detector makes sync.Pool drop items at random, so
// allocation counts are not meaningful (as in rules/race_on_test.go).
const raceEnabled = true
