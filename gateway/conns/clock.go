package conns

import "time"

// monoBase anchors monoNow.
var monoBase = time.Now()

// MonoNow returns the current time for measuring durations with one read
// of the monotonic clock, where time.Now reads both the wall and the
// monotonic clock (on this machine about 50 ns, for every request). Its
// wall part drifts from the system clock's when that is set: use it only
// with Sub, Since and Add.
func MonoNow() time.Time { return monoBase.Add(time.Since(monoBase)) }
