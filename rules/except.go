package rules

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strings"
)

// Bounds of an exemption list (Except's Clients, Keys and their files):
// a list longer than MaxListEntries or an entry longer than
// MaxListEntryBytes is an error, never a process that grows without
// bound on a file someone pointed at /dev/zero.
const (
	MaxListEntries    = 1_000_000
	MaxListEntryBytes = 4 << 10
	// MaxListFileBytes bounds a list file as a whole.
	MaxListFileBytes = 256 << 20
)

// maxListFile is MaxListFileBytes, a variable for tests.
var maxListFile int64 = MaxListFileBytes

// clientSet is a compiled list of client prefixes: sorted, merged,
// disjoint address ranges, one table per family, searched by bisection
// (no map and no allocation per request, O(log n) for any size).
type clientSet struct {
	v4 []v4Range
	v6 []v6Range
}

type v4Range struct{ lo, hi uint32 }

// u128 is an IPv6 address as a number.
type u128 struct{ hi, lo uint64 }

func (a u128) less(b u128) bool { return a.hi < b.hi || a.hi == b.hi && a.lo < b.lo }

// next is a+1, and whether it did not wrap.
func (a u128) next() (u128, bool) {
	if a.lo != ^uint64(0) {
		return u128{a.hi, a.lo + 1}, true
	}
	if a.hi != ^uint64(0) {
		return u128{a.hi + 1, 0}, true
	}
	return u128{}, false
}

type v6Range struct{ lo, hi u128 }

func addr4(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

func addr6(a netip.Addr) u128 {
	b := a.As16()
	var n u128
	for i := 0; i < 8; i++ {
		n.hi = n.hi<<8 | uint64(b[i])
		n.lo = n.lo<<8 | uint64(b[8+i])
	}
	return n
}

// newClientSet compiles prefixes (masked, IPv4 ones unmapped: see
// parseProxy) into a clientSet.
func newClientSet(prefixes []netip.Prefix) clientSet {
	var s clientSet
	for _, p := range prefixes {
		if p.Addr().Is4() {
			lo := addr4(p.Addr())
			hi := lo | uint32(uint64(1)<<(32-p.Bits())-1)
			s.v4 = append(s.v4, v4Range{lo, hi})
			continue
		}
		lo := addr6(p.Addr())
		hi := lo
		switch bits := p.Bits(); {
		case bits == 0:
			hi = u128{^uint64(0), ^uint64(0)}
		case bits <= 64:
			hi = u128{lo.hi | (uint64(1)<<(64-bits) - 1), ^uint64(0)}
		case bits < 128:
			hi.lo |= uint64(1)<<(128-bits) - 1
		}
		s.v6 = append(s.v6, v6Range{lo, hi})
	}
	slices.SortFunc(s.v4, func(a, b v4Range) int { return cmp.Compare(a.lo, b.lo) })
	merged4 := s.v4[:0]
	for _, r := range s.v4 {
		if n := len(merged4); n > 0 && (merged4[n-1].hi == ^uint32(0) || r.lo <= merged4[n-1].hi+1) {
			merged4[n-1].hi = max(merged4[n-1].hi, r.hi)
			continue
		}
		merged4 = append(merged4, r)
	}
	s.v4 = slices.Clip(merged4)
	slices.SortFunc(s.v6, func(a, b v6Range) int {
		if a.lo.less(b.lo) {
			return -1
		}
		if b.lo.less(a.lo) {
			return 1
		}
		return 0
	})
	merged6 := s.v6[:0]
	for _, r := range s.v6 {
		if n := len(merged6); n > 0 {
			last := &merged6[n-1]
			after, ok := last.hi.next()
			if !ok || !after.less(r.lo) {
				if last.hi.less(r.hi) {
					last.hi = r.hi
				}
				continue
			}
		}
		merged6 = append(merged6, r)
	}
	s.v6 = slices.Clip(merged6)
	return s
}

// contains reports whether a is in the set, an IPv4-mapped address as
// IPv4 (clientAddr returns them unmapped already). The invalid address
// is in no set.
func (s *clientSet) contains(a netip.Addr) bool {
	a = a.Unmap()
	switch {
	case a.Is4():
		n := addr4(a)
		// The last range starting at or before n.
		i, j := 0, len(s.v4)
		for i < j {
			h := int(uint(i+j) >> 1)
			if s.v4[h].lo <= n {
				i = h + 1
			} else {
				j = h
			}
		}
		return i > 0 && n <= s.v4[i-1].hi
	case a.Is6():
		n := addr6(a)
		i, j := 0, len(s.v6)
		for i < j {
			h := int(uint(i+j) >> 1)
			if !n.less(s.v6[h].lo) {
				i = h + 1
			} else {
				j = h
			}
		}
		return i > 0 && !s.v6[i-1].hi.less(n)
	}
	return false
}

// compileClients compiles a Match's Clients (and, for an exemption, the
// entries read from its ClientsFile, reported under fileAt), reporting
// bad and repeated entries at their path.
func compileClients(list []string, at func(int) string, file []string, fileAt string, ps *problems) (clientSet, bool) {
	if len(list) == 0 && file == nil {
		return clientSet{}, false
	}
	if len(list)+len(file) > MaxListEntries {
		ps.add(at(0), "%d client entries: at most %d", len(list)+len(file), MaxListEntries)
		return clientSet{}, true
	}
	prefixes := make([]netip.Prefix, 0, len(list)+len(file))
	seen := make(map[netip.Prefix]int, len(list))
	for i, s := range list {
		p, err := parseClient(s)
		if err != nil {
			ps.add(at(i), "%v", err)
			continue
		}
		if j, dup := seen[p]; dup {
			ps.add(at(i), "%s repeats clients[%d]", p, j)
			continue
		}
		seen[p] = i
		prefixes = append(prefixes, p)
	}
	for _, s := range file {
		// ParseClientsFile checked them, line by line.
		p, err := parseClient(s)
		if err != nil {
			ps.add(fileAt, "%v", err)
			continue
		}
		prefixes = append(prefixes, p)
	}
	return newClientSet(prefixes), true
}

// parseClient reads one client entry: an address (its own /32 or /128)
// or a CIDR prefix, read as trusted proxies are (parseProxy: masked,
// IPv4-mapped IPv6 unmapped).
func parseClient(s string) (netip.Prefix, error) {
	switch {
	case s == "":
		return netip.Prefix{}, errors.New("empty: want an address or a CIDR prefix")
	case len(s) > MaxListEntryBytes:
		return netip.Prefix{}, fmt.Errorf("longer than %d bytes", MaxListEntryBytes)
	case strings.Contains(s, "%"):
		return netip.Prefix{}, fmt.Errorf("%q: an address with a zone cannot be a client", s)
	}
	p, err := parseProxy(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q is not an address or a CIDR prefix", s)
	}
	return p, nil
}

// compiledExcept is one compiled Except entry.
type compiledExcept struct {
	match matcher
	// keys is the key list, by key value (the values as the key part
	// builds them: see exemptValue); nil when the entry has none.
	keys map[string]struct{}
	// part is the key part keys lists; nil: the rule's own key.
	part []keyPart
}

// exempt reports whether the request of d is exempt by one of list.
// own is the rule's key value (found: the request has the key), for
// entries that list the rule's own key.
func (d *decision) exempt(list []compiledExcept, own []byte, found bool) bool {
	for i := range list {
		x := &list[i]
		if !x.match.match(d) {
			continue
		}
		if x.keys == nil {
			return true
		}
		if x.part == nil {
			if found {
				if _, ok := x.keys[string(own)]; ok {
					return true
				}
			}
			continue
		}
		var kb [192]byte
		v, ok := d.appendKey(kb[:0], x.part)
		if !ok {
			continue
		}
		if _, ok := x.keys[string(v)]; ok {
			return true
		}
	}
	return false
}

// compileExcept compiles the entries of an except list at path
// ("except", "rules[1].except"). ruleKey is the rule's compiled key, nil
// for the top-level list (whose entries with keys must name their Key).
func (e *Engine) compileExcept(list []Except, path string, ruleKey []keyPart, ps *problems) []compiledExcept {
	var out []compiledExcept
	for i := range list {
		x := &list[i]
		at := fmt.Sprintf("%s[%d]", path, i)
		if x.isZero() {
			ps.add(at, "an entry with nothing set would exempt every request: set clients, keys or a matcher")
			continue
		}
		c := compiledExcept{match: compileMatchFiles(x.Match, at, x.FileClients, ps)}
		if x.ClientsFile != "" && x.FileClients == nil {
			ps.add(at+".clients_file", "%s is not loaded: package config reads it (or set FileClients, see ParseClientsFile)", x.ClientsFile)
		}
		if x.KeysFile != "" && x.FileKeys == nil {
			ps.add(at+".keys_file", "%s is not loaded: package config reads it (or set FileKeys, see ParseKeysFile)", x.KeysFile)
		}
		hasKeys := len(x.Keys) > 0 || x.KeysFile != ""
		parts := ruleKey
		switch {
		case x.Key != "":
			kps := problems{}
			c.part = compileKey(Key{x.Key}, at+".key", &kps)
			// compileKey places its problems at key[0]: the entry's key is
			// one string.
			for _, p := range kps {
				fe := p.(*FieldError)
				ps.add(at+".key", "%w", fe.Err)
			}
			parts = c.part
			if !hasKeys {
				ps.add(at+".key", "names a key part but the entry lists no keys (keys or keys_file)")
			}
		case hasKeys && ruleKey == nil:
			ps.add(at+".key", "a top-level entry with keys must name its key part (e.g. key: header:X-API-Key)")
			parts = nil
		}
		if hasKeys && parts != nil {
			for _, p := range parts {
				switch p.kind {
				case partIP:
					ps.add(at+".keys", "the key has an ip part: list addresses in clients")
					parts = nil
				case partGlobal:
					ps.add(at+".keys", "the key has a global part, the same for every request: use an entry without keys")
					parts = nil
				}
				if parts == nil {
					break
				}
			}
		}
		if hasKeys && parts != nil {
			c.keys = e.compileKeyList(x.Keys, x.FileKeys, parts, at, ps)
		}
		if hasKeys && c.keys == nil {
			// A key list that did not compile exempts no one (the problem
			// is reported; never an entry that exempts by its matchers
			// alone).
			c.keys = map[string]struct{}{}
		}
		out = append(out, c)
	}
	return out
}

// compileKeyList compiles an entry's Keys and FileKeys for the key
// parts parts.
func (e *Engine) compileKeyList(keys, file []string, parts []keyPart, at string, ps *problems) map[string]struct{} {
	if len(keys)+len(file) > MaxListEntries {
		ps.add(at+".keys", "%d keys: at most %d", len(keys)+len(file), MaxListEntries)
		return nil
	}
	set := make(map[string]struct{}, len(keys)+len(file))
	seen := make(map[string]int, len(keys))
	for i, k := range keys {
		where := fmt.Sprintf("%s.keys[%d]", at, i)
		if err := checkListEntry(k); err != nil {
			ps.add(where, "%v", err)
			continue
		}
		if j, dup := seen[k]; dup {
			// Name the index, never the key: it may be a secret.
			ps.add(where, "repeats keys[%d]", j)
			continue
		}
		seen[k] = i
		v, ok := e.exemptValue(k, parts)
		if !ok {
			ps.add(where, "has %d part(s) joined by \\x1f, the key has %d", strings.Count(k, keySep)+1, len(parts))
			continue
		}
		set[v] = struct{}{}
	}
	for _, k := range file {
		if v, ok := e.exemptValue(k, parts); ok {
			set[v] = struct{}{}
		} else {
			ps.add(at+".keys_file", "an entry has %d part(s) joined by \\x1f, the key has %d", strings.Count(k, keySep)+1, len(parts))
		}
	}
	return set
}

// exemptValue is the key value the key parts give a request whose raw
// part values are raw (a composite's joined by "\x1f", as the key
// joins them): each part as appendKey builds it, so that an exempt
// value is compared with the request's raw value, before the hashing of
// long or unusual values (a value the key hashes is compared by its
// SHA-256, as the key is).
func (e *Engine) exemptValue(raw string, parts []keyPart) (string, bool) {
	vals := []string{raw}
	if len(parts) > 1 {
		vals = strings.Split(raw, keySep)
	}
	if len(vals) != len(parts) {
		return "", false
	}
	var b []byte
	for i, v := range vals {
		if i > 0 {
			b = append(b, keySep...)
		}
		start := len(b)
		b = e.appendClientValue(b, v)
		if parts[i].kind == partHost {
			for j := start; j < len(b); j++ {
				if c := b[j]; c >= 'A' && c <= 'Z' {
					b[j] = c + ('a' - 'A')
				}
			}
		}
	}
	return string(b), true
}

// checkListEntry checks one entry of a key list.
func checkListEntry(s string) error {
	switch {
	case s == "":
		return errors.New("empty")
	case len(s) > MaxListEntryBytes:
		return fmt.Errorf("longer than %d bytes", MaxListEntryBytes)
	}
	return nil
}

// isZero reports whether the entry sets nothing.
func (x *Except) isZero() bool {
	m := &x.Match
	return len(m.Methods)+len(m.Hosts)+len(m.Paths)+len(m.PathPrefixes)+len(m.Patterns)+len(m.Headers)+
		len(m.Clients)+len(m.Countries)+len(m.ASNs)+len(m.JA4) == 0 &&
		x.ClientsFile == "" && x.Key == "" && len(x.Keys) == 0 && x.KeysFile == ""
}

// ParseClientsFile parses r, the contents of the client list file name
// (an Except.ClientsFile, which package config reads: rules opens no
// file): one address or CIDR prefix per line; blank lines and '#'
// comments (a line's rest from '#') are ignored. It returns the entries
// for Except.FileClients, never nil without an error. Errors name the
// file and the line: a bad entry, a repeated one, a line over
// MaxListEntryBytes, more than MaxListEntries entries.
func ParseClientsFile(name string, r io.Reader) ([]string, error) {
	seen := map[netip.Prefix]int{}
	return parseList(name, r, true, func(s string, line int) error {
		p, err := parseClient(s)
		if err != nil {
			return err
		}
		if first, dup := seen[p]; dup {
			return fmt.Errorf("%s repeats line %d", p, first)
		}
		seen[p] = line
		return nil
	})
}

// ParseKeysFile parses r, the contents of the key list file name (an
// Except.KeysFile, read as ParseClientsFile says): one key value per
// line, its leading and trailing spaces trimmed; blank lines and lines
// starting with '#' are ignored (a key value may hold a '#' after its
// first byte). Errors name the file and the line, never the key (it may
// be a secret).
func ParseKeysFile(name string, r io.Reader) ([]string, error) {
	seen := map[string]int{}
	return parseList(name, r, false, func(s string, line int) error {
		if first, dup := seen[s]; dup {
			return fmt.Errorf("repeats line %d", first)
		}
		seen[s] = line
		return nil
	})
}

// parseList reads the lines of a list file, the one reader of both list
// formats; check sees each entry with its line number.
// comments: a '#' ends a line's entry wherever it is (else only a line
// starting with one is a comment).
func parseList(name string, r io.Reader, comments bool, check func(s string, line int) error) ([]string, error) {
	out := []string{}
	lr := &io.LimitedReader{R: r, N: maxListFile + 1}
	sc := bufio.NewScanner(lr)
	sc.Buffer(make([]byte, 0, 4096), MaxListEntryBytes+2) // the entry and a "\r\n"
	line := 0
	for sc.Scan() {
		line++
		s := sc.Text()
		if line == 1 {
			// A byte order mark an editor wrote (Notepad): not part of
			// the first entry. A "\r" of a CRLF line end is trimmed as
			// space below.
			s = strings.TrimPrefix(s, "\ufeff")
		}
		if comments {
			s, _, _ = strings.Cut(s, "#")
		}
		s = strings.TrimSpace(s)
		if s == "" || s[0] == '#' {
			continue
		}
		if len(out) == MaxListEntries {
			return nil, fmt.Errorf("%s:%d: more than %d entries", name, line, MaxListEntries)
		}
		if len(s) > MaxListEntryBytes {
			return nil, fmt.Errorf("%s:%d: longer than %d bytes", name, line, MaxListEntryBytes)
		}
		if err := check(s, line); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%s:%d: line longer than %d bytes", name, line+1, MaxListEntryBytes)
		}
		return nil, fmt.Errorf("%s:%d: %w", name, line+1, err)
	}
	if lr.N == 0 {
		return nil, fmt.Errorf("%s:%d: larger than %d bytes", name, line, maxListFile)
	}
	return out, nil
}
