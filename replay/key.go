package replay

import (
	"bytes"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"unsafe"

	"github.com/tollgate-dev/tollgate/accesslog"
	"github.com/tollgate-dev/tollgate/rules"
)

// KeySpec says how a request's rate-limit key is built: one or more parts
// joined by '|'. Parts: ip (client address, IPv6 aggregated to
// IPv6Prefix bits), user, method, path, status, key (the CSV key column
// or JSON "key" field), field:NAME (any JSON field or CSV column) and all
// (one key for every request, a global limit), and host when the log
// has one.
type KeySpec struct {
	parts []keyPart
	// IPv6Prefix is how many leading bits of an IPv6 client address form
	// its key (a /64 is one customer on most networks). Zero means
	// rules.DefaultIPv6Prefix, as in the gateway; 128 keeps whole addresses.
	IPv6Prefix int
	// IPv4Prefix likewise aggregates IPv4 addresses; zero means 32.
	IPv4Prefix int
	// Extra lists the names of field:NAME parts, in order.
	Extra []string
	text  string
}

type keyPart struct {
	kind  partKind
	field int // for partField: index into Extra
}

// partKind is what a key part reads from a record.
type partKind uint8

// The key parts.
const (
	partAll partKind = iota
	partAddr
	partUser
	partMethod
	partPath
	partStatus
	partHost
	partKey
	partField // a field:NAME part
)

// ParseKeySpec reads a --key value such as "ip", "user", "ip,path" or
// "field:tenant,method".
func ParseKeySpec(s string) (KeySpec, error) {
	var k KeySpec
	k.text = s
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		switch {
		case p == "ip" || p == "addr" || p == "client":
			k.parts = append(k.parts, keyPart{kind: partAddr})
		case p == "user":
			k.parts = append(k.parts, keyPart{kind: partUser})
		case p == "method":
			k.parts = append(k.parts, keyPart{kind: partMethod})
		case p == "path":
			k.parts = append(k.parts, keyPart{kind: partPath})
		case p == "status":
			k.parts = append(k.parts, keyPart{kind: partStatus})
		case p == "host":
			k.parts = append(k.parts, keyPart{kind: partHost})
		case p == "key":
			k.parts = append(k.parts, keyPart{kind: partKey})
		case p == "all" || p == "global":
			k.parts = append(k.parts, keyPart{kind: partAll})
		case strings.HasPrefix(p, "field:") && len(p) > len("field:"):
			if len(k.Extra) == accesslog.MaxExtraFields {
				return KeySpec{}, fmt.Errorf("key %q: at most %d field: parts", s, accesslog.MaxExtraFields)
			}
			k.parts = append(k.parts, keyPart{kind: partField, field: len(k.Extra)})
			k.Extra = append(k.Extra, p[len("field:"):])
		default:
			return KeySpec{}, fmt.Errorf("key %q: unknown part %q (want ip, user, method, path, status, host, key, field:NAME or all)", s, p)
		}
	}
	if len(k.parts) == 0 {
		return KeySpec{}, fmt.Errorf("key %q is empty", s)
	}
	return k, nil
}

// String returns the spec as written.
func (k KeySpec) String() string { return k.text }

// check reports a key using a part that format f cannot supply.
func (k KeySpec) check(f accesslog.Format) error {
	if f != accesslog.FormatCombined && f != accesslog.FormatCommon {
		return nil
	}
	for _, p := range k.parts {
		if p.kind == partKey || p.kind == partField {
			return fmt.Errorf("key %q: the %v format has no key column or named fields", k.text, f)
		}
	}
	return nil
}

// append appends r's key to dst.
func (k *KeySpec) append(dst []byte, r *accesslog.Record) []byte {
	for i, p := range k.parts {
		if i > 0 {
			dst = append(dst, '|')
		}
		var v []byte
		switch p.kind {
		case partAll:
			dst = append(dst, '*')
			continue
		case partAddr:
			dst = k.appendAddr(dst, r.Addr)
			continue
		case partUser:
			v = r.User
		case partMethod:
			v = r.Method
		case partPath:
			v = r.Path
		case partStatus:
			v = r.Status
		case partHost:
			v = r.Host
		case partKey:
			v = r.Key
		case partField:
			v = r.Extra[p.field]
		}
		if len(v) == 0 {
			v = dash
		}
		dst = append(dst, v...)
	}
	return dst
}

var dash = []byte("-")

// appendAddr appends a client address without its port, IPv6 addresses
// (and IPv4 ones, if IPv4Prefix < 32) masked to their prefix.
func (k *KeySpec) appendAddr(dst, a []byte) []byte {
	if len(a) == 0 {
		return append(dst, '-')
	}
	a = rules.HostOnly(a) // v4:port, [v6]:port: as the rule engine reads a host
	if bytes.IndexByte(a, ':') < 0 {
		bits := k.IPv4Prefix
		if bits == 0 || bits >= 32 {
			return append(dst, a...)
		}
		return appendPrefix(dst, a, bits)
	}
	bits := k.IPv6Prefix
	if bits == 0 {
		bits = rules.DefaultIPv6Prefix
	}
	if bits >= 128 {
		return append(dst, a...)
	}
	return appendPrefix(dst, a, bits)
}

func appendPrefix(dst, a []byte, bits int) []byte {
	// The address is parsed in place: netip keeps nothing of its text
	// past the call but in the error, which is dropped (a copy would
	// allocate on every IPv6 line).
	addr, err := netip.ParseAddr(unsafe.String(unsafe.SliceData(a), len(a)))
	if err != nil {
		return append(dst, a...)
	}
	if addr.Is4In6() {
		addr = addr.Unmap()
	}
	if addr.Is4() && bits > 32 {
		return addr.AppendTo(dst)
	}
	p, err := addr.WithZone("").Prefix(bits)
	if err != nil {
		return append(dst, a...)
	}
	dst = p.Addr().AppendTo(dst)
	dst = append(dst, '/')
	return strconv.AppendInt(dst, int64(bits), 10)
}
