//go:build !tollgate_testclock

package gossip

import "time"

// testClockOffset is zero outside builds tagged tollgate_testclock (see
// testclock.go): a release build cannot shift its clock.
const testClockOffset time.Duration = 0
