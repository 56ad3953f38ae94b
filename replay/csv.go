package replay

import "strings"

// csvParser reads comma-separated lines. Without a header the columns are
// timestamp,key[,cost][,path]; a first line whose first column is not a
// timestamp is a header, and then columns are matched by name (see
// Fields; "timestamp", "key", "cost" and "path" always work). Quoted
// fields ("a,b") are supported without embedded newlines.
type csvParser struct {
	fields Fields
	slots  []int // column -> slot
	seen   bool  // the first line has been looked at
}

func newCSVParser(f Fields) *csvParser {
	return &csvParser{fields: f.withDefaults(), slots: []int{slotTime, slotKey, slotCost, slotPath}}
}

// errHeader marks the header line: skipped, not malformed.
var errHeader = errHeaderT{}

type errHeaderT struct{}

func (errHeaderT) Error() string { return "header" }

func (p *csvParser) parse(line []byte, r *record) error {
	if !p.seen {
		p.seen = true
		first, _ := csvField(line, 0)
		if _, ok := parseAnyTime(first); !ok {
			p.header(line)
			return errHeader
		}
	}
	var costVal []byte
	haveTime := false
	i, col := 0, 0
	for i <= len(line) {
		f, next := csvField(line, i)
		if col < len(p.slots) {
			switch s := p.slots[col]; s {
			case slotNone:
			case slotTime:
				t, ok := parseAnyTime(f)
				if !ok {
					return errNoTime
				}
				r.Time, haveTime = t, true
			case slotCost:
				costVal = f
			default:
				r.setField(s, f)
			}
		}
		col++
		if next > len(line) {
			break
		}
		i = next
	}
	if !haveTime {
		return errNoTime
	}
	if len(costVal) > 0 {
		c, ok := digits(costVal)
		if !ok {
			return errBadCost
		}
		r.Cost = c
	}
	return nil
}

// header maps the header's column names to slots.
func (p *csvParser) header(line []byte) {
	t := newNameTable(p.fields)
	p.slots = p.slots[:0]
	for i := 0; i <= len(line); {
		f, next := csvField(line, i)
		name := strings.ToLower(strings.TrimSpace(string(f)))
		slot, best := slotNone, 1<<30
		t.lookup([]byte(name), func(s, rank int) {
			if rank < best {
				slot, best = s, rank
			}
		})
		p.slots = append(p.slots, slot)
		if next > len(line) {
			break
		}
		i = next
	}
}

// csvField returns the field starting at b[i] (unquoted) and the index
// after its comma (len(b)+1 at the end of the line).
func csvField(b []byte, i int) ([]byte, int) {
	if i < len(b) && b[i] == '"' {
		j := i + 1
		for j < len(b) {
			if b[j] == '"' {
				if j+1 < len(b) && b[j+1] == '"' {
					j += 2
					continue
				}
				break
			}
			j++
		}
		f := b[i+1 : min(j, len(b))]
		k := j + 1
		for k < len(b) && b[k] != ',' {
			k++
		}
		return f, k + 1
	}
	j := i
	for j < len(b) && b[j] != ',' {
		j++
	}
	return b[i:j], j + 1
}
