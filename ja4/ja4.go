package ja4

import (
	"crypto/sha256"
	"crypto/tls"
	"slices"
)

// Extension IDs that the fingerprint treats apart.
const (
	extServerName = 0x0000 // server_name (SNI): shown as 'd'/'i', left out of the extension hash
	extALPN       = 0x0010 // application_layer_protocol_negotiation: shown as two characters, left out of the extension hash
)

// stackValues is how many values of one list (ciphers, or extensions) are
// sorted in a buffer on the stack; a longer list (no real client sends
// one) is sorted in a heap copy. stackText is the same bound for the
// text of a list before it is hashed.
const (
	stackValues = 256
	stackText   = 2048
)

// form selects one of the four outputs FoxIO's tools print.
type form uint8

const (
	formJA4   form = iota // JA4: sorted lists, hashed
	formRaw               // JA4_r: sorted lists, in clear
	formOrig              // JA4_o: original order, hashed
	formRawOr             // JA4_ro: original order, in clear
)

func (f form) sorted() bool { return f == formJA4 || f == formRaw }
func (f form) hashed() bool { return f == formJA4 || f == formOrig }

var emptyHello tls.ClientHelloInfo

// Append appends the JA4 fingerprint of h (such as
// "t13d1516h2_8daaf6152771_e5627efa2ab1") to dst and returns the extended
// slice. It allocates nothing when dst has room for the 36 bytes and the
// hello's lists are of any real client's length (up to 256 ciphers,
// 256 extensions). A nil h is fingerprinted as an empty hello.
func Append(dst []byte, h *tls.ClientHelloInfo) []byte { return appendForm(dst, h, formJA4) }

// String returns the JA4 fingerprint of h.
func String(h *tls.ClientHelloInfo) string {
	var buf [36]byte
	return string(Append(buf[:0], h))
}

// AppendRaw appends JA4_r, the fingerprint before hashing: the sorted
// cipher list and the sorted extension list (without SNI and ALPN)
// followed by the signature algorithms, in clear. For debugging.
func AppendRaw(dst []byte, h *tls.ClientHelloInfo) []byte { return appendForm(dst, h, formRaw) }

// Raw returns JA4_r (see AppendRaw).
func Raw(h *tls.ClientHelloInfo) string { return string(AppendRaw(nil, h)) }

// AppendOriginal appends JA4_o: as JA4, but the lists are hashed in the
// order the client sent them, SNI and ALPN included. It changes when a
// client shuffles its extensions (Chromium does, per connection), so it
// is for debugging, not for keys.
func AppendOriginal(dst []byte, h *tls.ClientHelloInfo) []byte { return appendForm(dst, h, formOrig) }

// Original returns JA4_o (see AppendOriginal).
func Original(h *tls.ClientHelloInfo) string {
	var buf [36]byte
	return string(AppendOriginal(buf[:0], h))
}

// AppendRawOriginal appends JA4_ro: the lists in clear, in the order the
// client sent them, SNI and ALPN included (GREASE still left out).
func AppendRawOriginal(dst []byte, h *tls.ClientHelloInfo) []byte {
	return appendForm(dst, h, formRawOr)
}

// RawOriginal returns JA4_ro (see AppendRawOriginal).
func RawOriginal(h *tls.ClientHelloInfo) string { return string(AppendRawOriginal(nil, h)) }

func appendForm(dst []byte, h *tls.ClientHelloInfo, f form) []byte {
	if h == nil {
		h = &emptyHello
	}
	dst = appendPrefix(dst, h)
	dst = append(dst, '_')

	// Ciphers.
	var cbuf [stackValues]uint16
	ciphers := keep(cbuf[:0], h.CipherSuites, false)
	if f.sorted() {
		slices.Sort(ciphers)
	}
	if f.hashed() {
		var tbuf [stackText]byte
		text := appendList(tbuf[:0], ciphers)
		dst = appendHash(dst, text)
	} else {
		dst = appendList(dst, ciphers)
	}
	dst = append(dst, '_')

	// Extensions, then the signature algorithms in the client's order.
	var ebuf [stackValues]uint16
	exts := keep(ebuf[:0], h.Extensions, f.sorted())
	if f.sorted() {
		slices.Sort(exts)
	}
	if f.hashed() {
		var tbuf [stackText]byte
		text := appendExtSigs(tbuf[:0], exts, h.SignatureSchemes)
		dst = appendHash(dst, text)
	} else {
		dst = appendExtSigs(dst, exts, h.SignatureSchemes)
	}
	return dst
}

// appendPrefix appends JA4_a: protocol, version, SNI, the two counts and
// the ALPN characters ("t13d1516h2").
func appendPrefix(dst []byte, h *tls.ClientHelloInfo) []byte {
	// 't': TLS over TCP. crypto/tls serves only TCP; QUIC ('q') and DTLS
	// ('d') hellos never reach a ClientHelloInfo here.
	dst = append(dst, 't')
	dst = append(dst, versionCode(h.SupportedVersions)...)
	if hasSNI(h) {
		dst = append(dst, 'd')
	} else {
		dst = append(dst, 'i')
	}
	dst = appendCount(dst, countKept(h.CipherSuites))
	dst = appendCount(dst, countKept(h.Extensions))
	return appendALPN(dst, h.SupportedProtos)
}

// isGREASE reports whether v is one of RFC 8701's sixteen GREASE values
// (0x0a0a, 0x1a1a, ..., 0xfafa), which clients send to keep servers
// tolerant and vary per connection: the fingerprint ignores them everywhere.
func isGREASE(v uint16) bool { return v&0x0f0f == 0x0a0a && v>>8 == v&0xff }

// versionCode is the highest non-GREASE version in versions, as JA4
// writes it; "00" when there is none or it is unknown.
//
// crypto/tls fills ClientHelloInfo.SupportedVersions from the
// supported_versions extension when the client sent it (JA4's rule: its
// highest value). Without the extension it lists the versions crypto/tls
// knows (TLS 1.0 to 1.3) up to the hello's legacy version, so its highest
// entry is the legacy version, JA4's rule again — except for a legacy
// version crypto/tls does not know: SSL 3.0 (0x0300) or older gives an
// empty list, so "00" where FoxIO's tools print "s3", and a legacy version
// above TLS 1.3 reads as "13".
func versionCode(versions []uint16) string {
	var best uint16
	found := false
	for _, v := range versions {
		if isGREASE(v) {
			continue
		}
		if !found || v > best {
			best, found = v, true
		}
	}
	if !found {
		return "00"
	}
	switch best {
	case 0x0304:
		return "13"
	case 0x0303:
		return "12"
	case 0x0302:
		return "11"
	case 0x0301:
		return "10"
	case 0x0300:
		return "s3"
	case 0x0002:
		return "s2"
	case 0xfeff:
		return "d1"
	case 0xfefd:
		return "d2"
	case 0xfefc:
		return "d3"
	}
	return "00"
}

// hasSNI reports whether the hello carried the server_name extension.
// ServerName is checked too, for a ClientHelloInfo built by hand without
// Extensions.
func hasSNI(h *tls.ClientHelloInfo) bool {
	return h.ServerName != "" || slices.Contains(h.Extensions, extServerName)
}

func countKept(vals []uint16) int {
	n := 0
	for _, v := range vals {
		if !isGREASE(v) {
			n++
		}
	}
	return n
}

// appendCount appends n as two decimal digits, capped at 99.
func appendCount(dst []byte, n int) []byte {
	n = min(n, 99)
	return append(dst, byte('0'+n/10), byte('0'+n%10))
}

// appendALPN appends the first and last characters of the first ALPN
// value ("h2", "h1" for "http/1.1"); "00" when the client offered none
// or the first is empty. A one-character value gives that character
// twice. When the first or the last byte is not an ASCII letter or digit,
// it gives the first and last characters of the value's hex form (0xab
// 0xcd: "ad"), as FoxIO's specification says (FoxIO's own tools print
// "99" or '9' for non-ASCII there; the specification is followed).
func appendALPN(dst []byte, protos []string) []byte {
	if len(protos) == 0 || protos[0] == "" {
		return append(dst, '0', '0')
	}
	p := protos[0]
	first, last := p[0], p[len(p)-1]
	if isAlnum(first) && isAlnum(last) {
		return append(dst, first, last)
	}
	return append(dst, hexDigits[first>>4], hexDigits[last&0x0f])
}

func isAlnum(c byte) bool {
	return '0' <= c && c <= '9' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z'
}

const hexDigits = "0123456789abcdef"

// keep appends to dst the non-GREASE values of vals (without SNI and
// ALPN when dropNamed), using dst's stack array when it is long enough.
func keep(dst []uint16, vals []uint16, dropNamed bool) []uint16 {
	if len(vals) > cap(dst) {
		dst = make([]uint16, 0, len(vals))
	}
	for _, v := range vals {
		if isGREASE(v) || dropNamed && (v == extServerName || v == extALPN) {
			continue
		}
		dst = append(dst, v)
	}
	return dst
}

// appendList appends vals as four-digit lower-case hex, comma separated.
func appendList[T ~uint16](dst []byte, vals []T) []byte {
	for i, v := range vals {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendHex4(dst, uint16(v))
	}
	return dst
}

func appendHex4(dst []byte, v uint16) []byte {
	return append(dst, hexDigits[v>>12], hexDigits[v>>8&0xf], hexDigits[v>>4&0xf], hexDigits[v&0xf])
}

// appendExtSigs appends the extension list, then "_" and the signature
// algorithms (GREASE left out, the client's order) when there are any.
func appendExtSigs(dst []byte, exts []uint16, sigs []tls.SignatureScheme) []byte {
	dst = appendList(dst, exts)
	first := true
	for _, s := range sigs {
		if isGREASE(uint16(s)) {
			continue
		}
		if first {
			dst = append(dst, '_')
			first = false
		} else {
			dst = append(dst, ',')
		}
		dst = appendHex4(dst, uint16(s))
	}
	return dst
}

// appendHash appends the first 12 hex characters of text's SHA-256, or
// "000000000000" when text is empty (JA4 marks an empty list so, rather
// than with the hash of nothing).
func appendHash(dst []byte, text []byte) []byte {
	if len(text) == 0 {
		return append(dst, "000000000000"...)
	}
	sum := sha256.Sum256(text)
	for _, b := range sum[:6] {
		dst = append(dst, hexDigits[b>>4], hexDigits[b&0xf])
	}
	return dst
}
