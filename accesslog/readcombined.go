package accesslog

// clfParser reads the NCSA common and combined log formats, which nginx
// and Apache both write by default (and AppendCombined writes):
//
//	host ident user [dd/Mon/yyyy:hh:mm:ss +zzzz] "METHOD target proto" status bytes ["referer" "agent"]
//
// Everything after the status is ignored, so the common format, the
// combined format and the many "combined plus extra fields" variants all
// parse. The request's escapes are decoded: Apache writes a quote as \"
// and a backslash as \\, both write other special bytes as \xHH (nginx
// a quote too).
type clfParser struct {
	times timeCache
	req   []byte // the request line, decoded, when it had escapes
}

func (p *clfParser) Parse(line []byte, r *Record) error {
	i := 0
	n := len(line)
	field := func() []byte {
		start := i
		for i < n && line[i] != ' ' {
			i++
		}
		f := line[start:i]
		for i < n && line[i] == ' ' {
			i++
		}
		return f
	}
	r.Addr = field()
	_ = field() // ident
	// The user may be quoted or contain spaces in odd logs; take up to " [".
	start := i
	for i < n && !(line[i] == '[' && (i == start || line[i-1] == ' ')) {
		i++
	}
	if i >= n || len(r.Addr) == 0 {
		return ErrSyntax
	}
	u := line[start:i]
	for len(u) > 0 && u[len(u)-1] == ' ' {
		u = u[:len(u)-1]
	}
	r.User = u
	i++ // '['
	ts := i
	if j := indexByte(line[i:], ']'); j >= 0 {
		i += j
	} else {
		i = n
	}
	if i >= n {
		return ErrSyntax
	}
	t, ok := p.times.clf(line[ts:i])
	if !ok {
		return ErrTime
	}
	r.Time = t
	i++
	for i < n && line[i] == ' ' {
		i++
	}
	if i >= n || line[i] != '"' {
		return ErrSyntax
	}
	i++
	rs := i
	// The first quote ends the request unless a backslash comes before
	// it, which may escape it: then walk the escapes.
	escaped := false
	if q := indexByte(line[i:], '"'); q >= 0 && indexByte(line[i:i+q], '\\') < 0 {
		i += q
	} else {
		escaped = true
		for i < n && line[i] != '"' {
			if line[i] == '\\' {
				i++
			}
			i++
		}
	}
	if i >= n {
		return ErrSyntax
	}
	req := line[rs:i]
	if escaped && indexByte(req, '\\') >= 0 {
		p.req = Unquote(p.req[:0], req)
		req = p.req
	}
	i++
	// METHOD SP target SP proto; "-" or garbage leaves method and path empty.
	if sp := indexByte(req, ' '); sp > 0 {
		r.Method = req[:sp]
		rest := req[sp+1:]
		if sp2 := indexByte(rest, ' '); sp2 >= 0 {
			rest = rest[:sp2]
		}
		r.setTarget(rest)
	}
	for i < n && line[i] == ' ' {
		i++
	}
	ss := i
	for i < n && line[i] != ' ' {
		i++
	}
	r.Status = line[ss:i]
	if len(r.Status) == 0 {
		return ErrSyntax
	}
	return nil
}

// FieldNames returns nil: the combined format's fields have no names.
func (p *clfParser) FieldNames([]byte) []string { return nil }
