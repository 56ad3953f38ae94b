//go:build tollgate_testclock

package gossip

import (
	"os"
	"time"
)

// testClockOffset shifts the real clock of every Store without a
// Config.Clock by the duration in TOLLGATE_TEST_CLOCK_OFFSET (such as
// "-3s"), read once at start: the end-to-end tests' way to run tollgate
// serve processes on clocks seconds apart. TEST ONLY: this file is built
// only with the build tag tollgate_testclock, which no release build
// sets; without it (testclock_off.go) the offset is always zero and the
// variable is never read.
var testClockOffset = func() time.Duration {
	d, err := time.ParseDuration(os.Getenv("TOLLGATE_TEST_CLOCK_OFFSET"))
	if err != nil {
		return 0
	}
	return d
}()
