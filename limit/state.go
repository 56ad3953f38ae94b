package limit

// State is the fixed-size per-key state of every algorithm but the sliding
// log: two algorithm-specific words and the instant the state becomes idle.
//
// The zero State is an absent key. A State whose Idle is at or before now
// is equivalent to the zero State for every later decision, so stores may
// drop it then (and give Redis keys exactly that TTL). What A and B hold is
// private to each algorithm:
//
//	token_bucket    A = theoretical arrival time (TAT), Unix ns
//	fixed_window    A = window index, B = count charged in it
//	sliding_window  A = count in the current window, B = count in the
//	                previous one; the current window is Idle/window - 2
//	leaky_bucket    A = excess level in ns of drain, B = last update, Unix ns
type State struct {
	A, B int64
	// Idle is the instant (Unix ns) from which this state equals an absent
	// key; zero for an absent key.
	Idle int64
}

// IsIdle reports whether st is equivalent to an absent key at now.
func (st State) IsIdle(now int64) bool { return st.Idle <= now }
