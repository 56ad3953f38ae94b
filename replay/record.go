package replay

import "errors"

// maxFields is how many extra named fields (field:NAME key parts) one run
// may extract from JSON or CSV lines.
const maxFields = 8

// record is one parsed log line. Its byte slices point into the line
// being parsed and are valid only until the next line is read.
type record struct {
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
	// Cost is the request's weight; 1 unless the line says otherwise.
	Cost int64
	// Fields holds the values of the extra named fields a key asks for,
	// in the order of [Fields.Extra]; nil when absent from the line.
	Fields [maxFields][]byte
}

// reset clears r for the next line; nf is how many extra fields are in
// use (the rest are never written).
func (r *record) reset(nf int) {
	r.Time, r.Cost = 0, 1
	r.Addr, r.User, r.Method, r.Path, r.Query, r.Host, r.Status, r.Key = nil, nil, nil, nil, nil, nil, nil, nil
	for i := range nf {
		r.Fields[i] = nil
	}
}

// Parse errors: sentinel values, so that a malformed line costs no
// allocation. The reader attaches the line number when it shows one.
var (
	errSyntax  = errors.New("line does not match the format")
	errNoTime  = errors.New("no timestamp field")
	errBadCost = errors.New("bad cost")
	errTooLong = errors.New("line longer than the read buffer")
)

// maxCost is the largest cost a line may give a request; a larger one is
// a bad cost. It keeps costs far from overflowing the policies' arithmetic
// and the report's sums (which also saturate, for very long runs).
const maxCost = 1 << 40

// lineParser parses one line (without its newline) into r, which the
// caller has reset.
type lineParser interface {
	parse(line []byte, r *record) error
}

// setField stores a field value read for slot, one of the slots a record
// holds as is (every slot but slotNone, slotTime and slotCost, which their
// parsers convert).
func (r *record) setField(slot int, v []byte) {
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
		r.Fields[slot-slotExtra] = v
	}
}

// setTarget splits a request target into r's path and query string.
func (r *record) setTarget(t []byte) {
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
