package accesslog

// MaxExtraFields is how many extra named fields (Fields.Extra) one
// parser may extract from JSON or CSV lines.
const MaxExtraFields = 8

// MaxCost is the largest cost a line may give a request; a larger one is
// ErrBadCost. It keeps costs far from overflowing a simulator's
// arithmetic and its sums.
const MaxCost = 1 << 40

// Record is one parsed log line. Its byte slices point into the line
// being parsed (or the parser's buffers) and are valid only until the
// next line is parsed.
type Record struct {
	// Time is the request's instant, Unix nanoseconds.
	Time int64
	// Addr is the client address (remote_addr, the first CLF field).
	Addr []byte
	// User is the authenticated user ("-" or empty when none).
	User []byte
	// Method is the HTTP method, e.g. "GET".
	Method []byte
	// Path is the request target without its query string.
	Path []byte
	// Query is the raw query string, without the '?'.
	Query []byte
	// Host is the request's host, when the log has it (JSON "host").
	Host []byte
	// Status is the response status code as written, e.g. "429".
	Status []byte
	// Key is the CSV key column, or a JSON field named "key".
	Key []byte
	// Cost is the request's weight, 0 to MaxCost; 1 unless the line
	// says otherwise.
	Cost int64
	// Extra holds the values of the extra named fields, in the order of
	// Fields.Extra; nil when absent from the line.
	Extra [MaxExtraFields][]byte
}

// Reset clears r for the next line; nExtra is how many extra fields are
// in use (the rest are never written).
func (r *Record) Reset(nExtra int) {
	r.Time, r.Cost = 0, 1
	r.Addr, r.User, r.Method, r.Path, r.Query, r.Host, r.Status, r.Key = nil, nil, nil, nil, nil, nil, nil, nil
	for i := range nExtra {
		r.Extra[i] = nil
	}
}

// setField stores a field value read for slot, one of the slots a Record
// holds as is (every slot but slotNone, slotTime and slotCost, which their
// parsers convert).
func (r *Record) setField(slot int, v []byte) {
	switch slot {
	case slotAddr:
		r.Addr = v
	case slotUser:
		r.User = v
	case slotMethod:
		r.Method = v
	case slotPath:
		r.setTarget(v)
	case slotStatus:
		r.Status = v
	case slotHost:
		r.Host = v
	case slotKey:
		r.Key = v
	default:
		r.Extra[slot-slotExtra] = v
	}
}

// parseCost reads a cost: a whole number from 0 to MaxCost.
func parseCost(b []byte) (int64, bool) {
	c, ok := digits(b)
	return c, ok && c <= MaxCost
}

// setTarget splits a request target into r's path and query string.
func (r *Record) setTarget(t []byte) {
	for i, c := range t {
		if c == '?' || c == '#' {
			r.Path = t[:i]
			if c == '?' {
				q := t[i+1:]
				if j := indexByte(q, '#'); j >= 0 {
					q = q[:j]
				}
				r.Query = q
			}
			return
		}
	}
	r.Path = t
}
