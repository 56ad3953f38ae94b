package rules

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/textproto"
	"strconv"
	"strings"
)

// keySep separates the parts of a store key: rule, policy, key values. It
// cannot appear in a name, and a key value containing it is hashed, so no
// two (rule, policy, value) triples share a store key.
const keySep = "\x1f"

// anonymousValue is the key value of the shared anonymous bucket. Raw
// values never contain control bytes (they are hashed), so no client can
// forge it.
const anonymousValue = "\x1eanonymous"

type partKind uint8

const (
	partIP partKind = iota
	partHeader
	partQuery
	partPath
	partMethod
	partHost
	partGlobal
	partGRPCService
	partGRPCMethod
	partCountry // geo.go
	partASN
	partJA4
)

// globalValue is the key value of the global part: one counter for every
// request the rule matches.
const globalValue = "*"

type keyPart struct {
	kind partKind
	name string // header (canonical) or query parameter name
}

// compileKey parses k; the zero Key is the client IP.
func compileKey(k Key, path string, ps *problems) []keyPart {
	if len(k) == 0 {
		return []keyPart{{kind: partIP}}
	}
	var parts []keyPart
	for i, s := range k {
		kind, name, _ := strings.Cut(strings.TrimSpace(s), ":")
		var p keyPart
		switch strings.ToLower(kind) {
		case "ip":
			p.kind = partIP
		case "path":
			p.kind = partPath
		case "method":
			p.kind = partMethod
		case "host":
			p.kind = partHost
		case "global":
			p.kind = partGlobal
		case "grpc_service":
			p.kind = partGRPCService
		case "grpc_method":
			p.kind = partGRPCMethod
		case "country":
			p.kind = partCountry
		case "asn":
			p.kind = partASN
		case "ja4":
			p.kind = partJA4
		case "header":
			p.kind, p.name = partHeader, textproto.CanonicalMIMEHeaderKey(strings.TrimSpace(name))
			if !isToken(p.name) {
				ps.add(fmt.Sprintf("%s[%d]", path, i), "%q needs a header name (header:X-API-Key)", s)
				continue
			}
		case "query":
			p.kind, p.name = partQuery, strings.TrimSpace(name)
			if p.name == "" {
				ps.add(fmt.Sprintf("%s[%d]", path, i), "%q needs a parameter name (query:api_key)", s)
				continue
			}
		default:
			ps.add(fmt.Sprintf("%s[%d]", path, i), "unknown key part %q (want ip, header:NAME, query:NAME, path, method, host, global, grpc_service, grpc_method, country, asn or ja4)", s)
			continue
		}
		if p.kind != partHeader && p.kind != partQuery && name != "" {
			ps.add(fmt.Sprintf("%s[%d]", path, i), "%q takes no name", s)
			continue
		}
		parts = append(parts, p)
	}
	return parts
}

// appendKey appends the key value of parts for req to dst, reporting false
// when a part is missing.
func (d *decision) appendKey(dst []byte, parts []keyPart) ([]byte, bool) {
	for i, p := range parts {
		if i > 0 {
			dst = append(dst, keySep...)
		}
		switch p.kind {
		case partIP:
			a := d.clientIP()
			if !a.IsValid() {
				return dst, false
			}
			pfx := d.e.ip.aggregate(a)
			dst = pfx.Addr().AppendTo(dst)
			if pfx.Bits() != a.BitLen() {
				dst = append(dst, '/')
				dst = strconv.AppendInt(dst, int64(pfx.Bits()), 10)
			}
		case partHeader:
			v, ok := firstHeader(d.req, p.name)
			if !ok || v == "" {
				return dst, false
			}
			dst = d.e.appendClientValue(dst, v)
		case partQuery:
			v, ok := d.req.Query(p.name)
			if !ok || v == "" {
				return dst, false
			}
			dst = d.e.appendClientValue(dst, v)
		case partPath:
			dst = d.e.appendClientValue(dst, d.path)
		case partMethod:
			dst = d.e.appendClientValue(dst, d.method)
		case partGlobal:
			dst = append(dst, globalValue...)
		case partCountry:
			c, ok := d.country()
			if !ok {
				return dst, false
			}
			dst = append(dst, c...)
		case partASN:
			n, ok := d.asn()
			if !ok {
				return dst, false
			}
			dst = appendASN(dst, n)
		case partJA4:
			fp := d.ja4()
			if fp == "" {
				return dst, false
			}
			dst = d.e.appendClientValue(dst, fp)
		case partGRPCService, partGRPCMethod:
			service, _, ok := GRPCMethod(d.path)
			if !ok {
				return dst, false
			}
			if p.kind == partGRPCMethod {
				service = d.path[1:] // "package.Service/Method"
			}
			dst = d.e.appendClientValue(dst, service)
		case partHost:
			if d.host == "" {
				return dst, false
			}
			start := len(dst)
			dst = d.e.appendClientValue(dst, d.host)
			for j := start; j < len(dst); j++ {
				if c := dst[j]; c >= 'A' && c <= 'Z' {
					dst[j] = c + ('a' - 'A')
				}
			}
		}
	}
	return dst, true
}

// appendClientValue appends v raw when it is short and printable, else
// "#" and the hex of its SHA-256 (so raw values never start with '#').
func (e *Engine) appendClientValue(dst []byte, v string) []byte {
	if len(v) <= e.maxKeyLen && v != "" && v[0] != '#' && printable(v) {
		return append(dst, v...)
	}
	sum := sha256.Sum256([]byte(v))
	dst = append(dst, '#')
	return hex.AppendEncode(dst, sum[:16])
}

func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			return false
		}
	}
	return true
}
