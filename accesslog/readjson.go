package accesslog

import "github.com/valyala/fastjson"

// jsonParser reads JSON lines: one object per line, whose top-level fields
// are matched by name (see Fields). It is a real JSON parser (fastjson):
// a line that is not one valid JSON object is malformed, and names and
// string values are decoded ("\/api\/x" is /api/x, "\u00e9" is é).
// Numbers, booleans and null are taken as written; nested objects and
// arrays as compact JSON text. (fastjson reads numbers and escapes
// leniently: a number 192.0.2.1 is taken as that text, an unknown escape
// "\x" as written.)
type jsonParser struct {
	names nameTable
	p     fastjson.Parser
	text  []byte // the written form of values that are not strings
}

func newJSONParser(f Fields) *jsonParser {
	return &jsonParser{names: newNameTable(f.WithDefaults())}
}

func (p *jsonParser) Parse(line []byte, r *Record) error {
	o, ok := p.object(line)
	if !ok {
		return ErrSyntax
	}
	var ranks [slotExtra + MaxExtraFields]int8
	for i := range ranks {
		ranks[i] = 127
	}
	var timeVal, costVal []byte
	p.text = p.text[:0]
	o.Visit(func(name []byte, v *fastjson.Value) {
		p.names.lookup(name, func(slot, rank int) {
			if int8(rank) >= ranks[slot] {
				return
			}
			ranks[slot] = int8(rank)
			val := p.value(v)
			switch slot {
			case slotTime:
				timeVal = val
			case slotCost:
				costVal = val
			default:
				r.setField(slot, val)
			}
		})
	})
	if timeVal == nil {
		return ErrNoTime
	}
	t, ok := ParseTime(timeVal)
	if !ok {
		return ErrTime
	}
	r.Time = t
	if costVal != nil {
		c, ok := parseCost(costVal)
		if !ok {
			return ErrBadCost
		}
		r.Cost = c
	}
	return nil
}

// value returns a string's decoded bytes, or the written form of any
// other value. Either is valid until the next line is parsed.
func (p *jsonParser) value(v *fastjson.Value) []byte {
	if v.Type() == fastjson.TypeString {
		b, _ := v.StringBytes()
		if b == nil {
			b = []byte{} // present, though empty
		}
		return b
	}
	// Appending never moves what earlier values of this line point to:
	// a reallocation leaves them on the old array.
	start := len(p.text)
	p.text = v.MarshalTo(p.text)
	return p.text[start:len(p.text):len(p.text)]
}

// fields lists the names of the line's top-level fields, at most 32, or
// nil when the line is not a JSON object.
func (p *jsonParser) FieldNames(line []byte) []string {
	o, ok := p.object(line)
	if !ok {
		return nil
	}
	var names []string
	o.Visit(func(name []byte, _ *fastjson.Value) {
		if len(names) < 32 {
			names = append(names, string(name))
		}
	})
	return names
}

// object parses line as one JSON object, valid until the next line is
// parsed.
func (p *jsonParser) object(line []byte) (*fastjson.Object, bool) {
	v, err := p.p.ParseBytes(line)
	if err != nil {
		return nil, false
	}
	o, err := v.Object()
	return o, err == nil
}
