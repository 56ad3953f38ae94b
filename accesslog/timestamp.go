package accesslog

import "math"

// monthIndex maps the three-letter English month abbreviations of the
// common log format (any case) to 1..12, or 0.
func monthIndex(b []byte) int {
	if len(b) != 3 {
		return 0
	}
	k := uint32(b[0]|0x20)<<16 | uint32(b[1]|0x20)<<8 | uint32(b[2]|0x20)
	for i, m := range monthKeys {
		if m == k {
			return i + 1
		}
	}
	return 0
}

var monthKeys = func() (k [12]uint32) {
	for i, m := range []string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"} {
		k[i] = uint32(m[0])<<16 | uint32(m[1])<<8 | uint32(m[2])
	}
	return k
}()

// daysFromCivil returns the days since 1970-01-01 of a proleptic Gregorian
// date (Howard Hinnant's algorithm).
func daysFromCivil(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era = (y - 399) / 400
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// digits parses b as an unsigned decimal; ok is false for an empty or
// non-digit b.
func digits(b []byte) (n int64, ok bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

const (
	nsSecond = int64(1e9)
	nsMinute = 60 * nsSecond
	nsHour   = 60 * nsMinute
	nsDay    = 24 * nsHour
)

// Timestamps are Unix nanoseconds in an int64, which spans about
// 1677-09-21 to 2262-04-11. A time outside that span is malformed: it
// must not wrap around to some other instant.
const (
	// minUnixSec and maxUnixSec bound the whole seconds whose nanoseconds
	// fit an int64; the range starts and ends part way through the seconds
	// minUnixSec-1 and maxUnixSec.
	minUnixSec = math.MinInt64 / nsSecond // rounds towards zero
	maxUnixSec = math.MaxInt64 / nsSecond
)

// secNanos returns sec seconds plus frac nanoseconds (0 <= frac < 1e9) as
// Unix nanoseconds, or false when that is outside the int64 range.
func secNanos(sec, frac int64) (int64, bool) {
	switch {
	case sec >= minUnixSec && sec <= maxUnixSec:
		n := sec * nsSecond
		if n > 0 && frac > math.MaxInt64-n {
			return 0, false
		}
		return n + frac, true
	case sec == minUnixSec-1:
		// The range starts within this second: count back from the next.
		n, back := (sec+1)*nsSecond, nsSecond-frac
		if back > n-math.MinInt64 {
			return 0, false
		}
		return n - back, true
	}
	return 0, false
}

// unixNanos assembles a civil date and time (already range-checked, so
// that its seconds cannot overflow: years 1 to 9999 are some 3.2e11
// seconds) into Unix nanoseconds, subtracting the zone offset in seconds.
// ok is false when the instant is outside the int64 nanosecond range.
func unixNanos(y, mo, d, h, mi, s, frac, offset int64) (int64, bool) {
	sec := daysFromCivil(y, mo, d)*86400 + h*3600 + mi*60 + s - offset
	return secNanos(sec, frac)
}

func validCivil(y, mo, d, h, mi, s int64) bool {
	return y >= 1 && y <= 9999 && mo >= 1 && mo <= 12 && d >= 1 && d <= 31 &&
		h <= 23 && mi <= 59 && s <= 60
}

// parseCLFTime parses the common log format's "17/May/2015:10:05:03 +0000"
// (the part between the brackets) into Unix nanoseconds.
func parseCLFTime(b []byte) (int64, bool) {
	// dd/Mon/yyyy:hh:mm:ss +zzzz: 26 bytes; the zone is optional.
	if len(b) < 20 || b[2] != '/' || b[6] != '/' || b[11] != ':' || b[14] != ':' || b[17] != ':' {
		return 0, false
	}
	d, ok1 := digits(b[0:2])
	mo := int64(monthIndex(b[3:6]))
	y, ok2 := digits(b[7:11])
	h, ok3 := digits(b[12:14])
	mi, ok4 := digits(b[15:17])
	s, ok5 := digits(b[18:20])
	if !(ok1 && ok2 && ok3 && ok4 && ok5) || !validCivil(y, mo, d, h, mi, s) {
		return 0, false
	}
	rest := b[20:]
	var off int64
	if len(rest) > 0 {
		if rest[0] != ' ' {
			return 0, false
		}
		var ok bool
		if off, ok = parseZone(rest[1:]); !ok {
			return 0, false
		}
	}
	return unixNanos(y, mo, d, h, mi, s, 0, off)
}

// parseZone parses "Z", "+hhmm", "+hh:mm" or "+hh" into seconds east of UTC.
func parseZone(b []byte) (int64, bool) {
	if len(b) == 1 && (b[0] == 'Z' || b[0] == 'z') {
		return 0, true
	}
	if len(b) < 3 || (b[0] != '+' && b[0] != '-') {
		return 0, false
	}
	h, ok := digits(b[1:3])
	if !ok || h > 23 {
		return 0, false
	}
	var m int64
	switch r := b[3:]; len(r) {
	case 0:
	case 2:
		if m, ok = digits(r); !ok {
			return 0, false
		}
	case 3:
		if r[0] != ':' {
			return 0, false
		}
		if m, ok = digits(r[1:]); !ok {
			return 0, false
		}
	default:
		return 0, false
	}
	if m > 59 {
		return 0, false
	}
	off := h*3600 + m*60
	if b[0] == '-' {
		off = -off
	}
	return off, true
}

// parseISOTime parses RFC 3339 and its common relaxations:
// "2015-05-17T10:05:03Z", "2015-05-17 10:05:03.123+02:00",
// "2015-05-17T10:05:03.123456789-0700". A missing zone means UTC.
func parseISOTime(b []byte) (int64, bool) {
	if len(b) < 19 || b[4] != '-' || b[7] != '-' || (b[10] != 'T' && b[10] != 't' && b[10] != ' ') || b[13] != ':' || b[16] != ':' {
		return 0, false
	}
	y, ok1 := digits(b[0:4])
	mo, ok2 := digits(b[5:7])
	d, ok3 := digits(b[8:10])
	h, ok4 := digits(b[11:13])
	mi, ok5 := digits(b[14:16])
	s, ok6 := digits(b[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || !validCivil(y, mo, d, h, mi, s) {
		return 0, false
	}
	rest := b[19:]
	var frac int64
	if len(rest) > 0 && (rest[0] == '.' || rest[0] == ',') {
		i := 1
		scale := int64(1e8)
		for ; i < len(rest) && rest[i] >= '0' && rest[i] <= '9'; i++ {
			frac += int64(rest[i]-'0') * scale
			scale /= 10
		}
		if i == 1 {
			return 0, false
		}
		rest = rest[i:]
	}
	var off int64
	if len(rest) > 0 {
		var ok bool
		if off, ok = parseZone(rest); !ok {
			return 0, false
		}
	}
	return unixNanos(y, mo, d, h, mi, s, frac, off)
}

// parseEpochTime parses a Unix time in seconds with an optional fraction
// ("1431857103", "1431857103.25"); integers of 13 or more digits are read
// as milliseconds, 16 or more as microseconds, 19 as nanoseconds. A time
// outside the int64 nanosecond range (about 1677 to 2262) is rejected.
func parseEpochTime(b []byte) (int64, bool) {
	intPart, frac := b, []byte(nil)
	for i, c := range b {
		if c == '.' {
			intPart, frac = b[:i], b[i+1:]
			break
		}
	}
	n, ok := digits(intPart)
	if !ok {
		if len(intPart) == 19 && frac == nil {
			// Nanoseconds do not fit digits' 18-digit guard; parse directly,
			// refusing what exceeds an int64.
			var v int64
			for _, c := range intPart {
				if c < '0' || c > '9' {
					return 0, false
				}
				d := int64(c - '0')
				if v > (math.MaxInt64-d)/10 {
					return 0, false
				}
				v = v*10 + d
			}
			return v, true
		}
		return 0, false
	}
	var scale int64
	switch {
	case len(intPart) >= 16:
		scale = 1e3
	case len(intPart) >= 13:
		scale = 1e6
	default:
		scale = 1e9
	}
	if n > math.MaxInt64/scale {
		return 0, false
	}
	t := n * scale
	if len(frac) > 0 {
		// The fraction adds less than scale.
		var fr int64
		f := scale / 10
		for _, c := range frac {
			if c < '0' || c > '9' {
				return 0, false
			}
			fr += int64(c-'0') * f
			f /= 10
		}
		if fr > math.MaxInt64-t {
			return 0, false
		}
		t += fr
	}
	return t, true
}

// ParseTime tries ISO 8601/RFC 3339, then the common log format's
// date, then a Unix epoch number.
func ParseTime(b []byte) (int64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	if len(b) >= 19 && b[4] == '-' {
		return parseISOTime(b)
	}
	if len(b) >= 20 && b[2] == '/' {
		if b[0] == '[' && b[len(b)-1] == ']' {
			b = b[1 : len(b)-1]
		}
		return parseCLFTime(b)
	}
	if b[0] == '[' && len(b) > 2 {
		return parseCLFTime(b[1 : len(b)-1])
	}
	return parseEpochTime(b)
}

// timeCache remembers the last common-log-format timestamp's minute:
// consecutive lines almost always share it, and then only the seconds
// need parsing.
type timeCache struct {
	prefix [17]byte // "dd/Mon/yyyy:hh:mm"
	zone   [8]byte
	zlen   int
	base   int64 // Unix ns of the minute, zone applied
	valid  bool
}

// clf parses b as parseCLFTime does.
func (c *timeCache) clf(b []byte) (int64, bool) {
	if c.valid && len(b) >= 20 && len(b)-20 == c.zlen && b[17] == ':' &&
		string(b[:17]) == string(c.prefix[:]) && string(b[20:]) == string(c.zone[:c.zlen]) {
		// The minute's other seconds may lie past the int64 range.
		if s, ok := digits(b[18:20]); ok && s <= 60 && c.base <= math.MaxInt64-s*nsSecond {
			return c.base + s*nsSecond, true
		}
	}
	t, ok := parseCLFTime(b)
	if !ok || len(b)-20 > len(c.zone) {
		c.valid = false
		return t, ok
	}
	s, _ := digits(b[18:20])
	if t < math.MinInt64+s*nsSecond { // the minute starts before the int64 range
		c.valid = false
		return t, true
	}
	copy(c.prefix[:], b[:17])
	c.zlen = copy(c.zone[:], b[20:])
	c.base = t - s*nsSecond
	c.valid = true
	return t, true
}
