package fleetsim

// The strict and eventual tiers talk to Redis in script calls: EVALSHA,
// the script's SHA-1, one key and eight arguments (the clock, the TTL
// floor, the cost, the force flag and four policy parameters, see
// store/redis), answered by an array of integers. Their sizes are
// estimated as RESP frames with arguments of typical lengths: the
// simulator does not run Redis.
const (
	// scriptArgBytes is the typical length of one of the seven numeric
	// arguments besides the cost (a clock in ms has 13 digits, a flag 1).
	scriptArgBytes = 8
	// scriptReplyBytes is a reply: an array of 14 integers of about 8
	// digits, ":12345678\r\n" each, after "*14\r\n".
	scriptReplyBytes = 5 + 14*11
)

// scriptCallBytes is the RESP size of one script call on a key of keyLen
// bytes with cost.
func scriptCallBytes(keyLen int, cost int64) int {
	n := len("*12\r\n") + bulk(len("EVALSHA")) + bulk(40) + bulk(1) + bulk(keyLen)
	n += bulk(digits(cost))
	n += 7 * bulk(scriptArgBytes)
	return n
}

// bulk is the RESP size of a bulk string of n bytes: $n\r\n...\r\n.
func bulk(n int) int { return 1 + digits(int64(n)) + 2 + n + 2 }

// digits is the number of decimal digits of n ≥ 0.
func digits(n int64) int {
	d := 1
	for n >= 10 {
		n /= 10
		d++
	}
	return d
}
