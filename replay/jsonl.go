package replay

// jsonParser reads JSON lines: one object per line, whose top-level fields
// are matched by name (see Fields). String values are taken raw, without
// unescaping; nested objects and arrays are skipped.
type jsonParser struct {
	names nameTable
}

func newJSONParser(f Fields) *jsonParser {
	return &jsonParser{names: newNameTable(f.withDefaults())}
}

func (p *jsonParser) parse(line []byte, r *record) error {
	var ranks [slotExtra + maxFields]int8
	for i := range ranks {
		ranks[i] = 127
	}
	var timeVal []byte
	var costVal []byte
	i := skipSpace(line, 0)
	if i >= len(line) || line[i] != '{' {
		return errSyntax
	}
	i++
	for {
		i = skipSpace(line, i)
		if i >= len(line) {
			return errSyntax
		}
		if line[i] == '}' {
			break
		}
		if line[i] == ',' {
			i++
			continue
		}
		if line[i] != '"' {
			return errSyntax
		}
		ks := i + 1
		ke, ok := endString(line, i)
		if !ok {
			return errSyntax
		}
		name := line[ks:ke]
		i = skipSpace(line, ke+1)
		if i >= len(line) || line[i] != ':' {
			return errSyntax
		}
		i = skipSpace(line, i+1)
		vs, ve, next, ok := value(line, i)
		if !ok {
			return errSyntax
		}
		i = next
		val := line[vs:ve]
		p.names.lookup(name, func(slot, rank int) {
			if int8(rank) >= ranks[slot] {
				return
			}
			ranks[slot] = int8(rank)
			switch slot {
			case slotTime:
				timeVal = val
			case slotCost:
				costVal = val
			default:
				r.setField(slot, val)
			}
		})
	}
	if timeVal == nil {
		return errNoTime
	}
	t, ok := parseAnyTime(timeVal)
	if !ok {
		return errNoTime
	}
	r.Time = t
	if costVal != nil {
		c, ok := digits(costVal)
		if !ok {
			return errBadCost
		}
		r.Cost = c
	}
	return nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r') {
		i++
	}
	return i
}

// endString returns the index of the closing quote of the string whose
// opening quote is at b[i].
func endString(b []byte, i int) (int, bool) {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j, true
		}
	}
	return 0, false
}

// value scans the JSON value at b[i]: for a string, [vs, ve) is its
// content without quotes; for anything else the raw token. next is the
// index after the value.
func value(b []byte, i int) (vs, ve, next int, ok bool) {
	if i >= len(b) {
		return 0, 0, 0, false
	}
	switch b[i] {
	case '"':
		e, ok := endString(b, i)
		if !ok {
			return 0, 0, 0, false
		}
		return i + 1, e, e + 1, true
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				e, ok := endString(b, j)
				if !ok {
					return 0, 0, 0, false
				}
				j = e
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i, j + 1, j + 1, true
				}
			}
		}
		return 0, 0, 0, false
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ' ' && b[j] != '\t' {
		j++
	}
	if j == i {
		return 0, 0, 0, false
	}
	return i, j, j, true
}
