package accesslog

import "strings"

// csvParser reads comma-separated lines as RFC 4180 (and encoding/csv)
// does, one line at a time: a quoted field may hold commas and doubled
// quotes ("a ""b"", c" is a "b", c), not line breaks; a quote inside an
// unquoted field is taken as is. A quoted field must end at its closing
// quote, or the line is malformed. Without a header the columns are
// timestamp,key[,cost][,path]; a first line whose first column is not a
// timestamp is a header, and then columns are matched by name (see
// Fields; "timestamp", "key", "cost" and "path" always work).
type csvParser struct {
	spec    Fields
	cols    []string // the header's column names, when there was one
	slots   []int    // column -> slot
	seen    bool     // the first line has been looked at
	unquote []byte   // the decoded quoted fields of the current line
}

func newCSVParser(f Fields) *csvParser {
	return &csvParser{spec: f.WithDefaults(), slots: []int{slotTime, slotKey, slotCost, slotPath}}
}

func (p *csvParser) Parse(line []byte, r *Record) error {
	p.unquote = p.unquote[:0]
	if !p.seen {
		p.seen = true
		first, _, ok := p.field(line, 0)
		if !ok {
			return ErrSyntax
		}
		if _, ok := ParseTime(first); !ok {
			return p.header(line)
		}
	}
	var costVal []byte
	haveTime, timeCol := false, false
	i, col := 0, 0
	for i <= len(line) {
		f, next, ok := p.field(line, i)
		if !ok {
			return ErrSyntax
		}
		if col < len(p.slots) {
			switch s := p.slots[col]; s {
			case slotNone:
			case slotTime:
				timeCol = true
				t, ok := ParseTime(f)
				if !ok {
					return ErrTime
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
		if timeCol {
			return ErrTime // the line ends before its time column
		}
		return ErrNoTime
	}
	if len(costVal) > 0 {
		c, ok := parseCost(costVal)
		if !ok {
			return ErrBadCost
		}
		r.Cost = c
	}
	return nil
}

// header maps the header's column names to slots; a header that is not
// valid CSV leaves the columns as they were and is malformed.
func (p *csvParser) header(line []byte) error {
	t := newNameTable(p.spec)
	var slots []int
	var cols []string
	for i := 0; i <= len(line); {
		f, next, ok := p.field(line, i)
		if !ok {
			return ErrSyntax
		}
		name := strings.ToLower(strings.TrimSpace(string(f)))
		cols = append(cols, name)
		slot, best := slotNone, 1<<30
		t.lookup([]byte(name), func(s, rank int) {
			if rank < best {
				slot, best = s, rank
			}
		})
		slots = append(slots, slot)
		i = next
	}
	p.slots, p.cols = slots, cols
	return ErrHeader
}

// fields lists the header's column names when there was one (at most
// 32), or nil.
func (p *csvParser) FieldNames(line []byte) []string {
	return p.cols[:min(len(p.cols), 32)]
}

// field returns the field starting at line[i], decoded, and the index
// after its comma (len(line)+1 at the end of the line). ok is false for
// a quoted field not closed, or closed before its end. A decoded quoted
// field is valid until the next line.
func (p *csvParser) field(line []byte, i int) (f []byte, next int, ok bool) {
	if i >= len(line) || line[i] != '"' {
		j := i
		for j < len(line) && line[j] != ',' {
			j++
		}
		return line[i:j], j + 1, true
	}
	start := len(p.unquote)
	for j := i + 1; j < len(line); j++ {
		if line[j] != '"' {
			continue
		}
		if j+1 < len(line) && line[j+1] == '"' { // a doubled quote
			p.unquote = append(p.unquote, line[i+1:j+1]...)
			i = j + 1
			j++
			continue
		}
		if j+1 < len(line) && line[j+1] != ',' {
			return nil, 0, false // text after the closing quote
		}
		if start == len(p.unquote) { // no doubled quote: no copy
			return line[i+1 : j], j + 2, true
		}
		p.unquote = append(p.unquote, line[i+1:j]...)
		n := len(p.unquote)
		return p.unquote[start:n:n], j + 2, true
	}
	return nil, 0, false
}
