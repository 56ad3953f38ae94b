package ja4

import (
	"crypto/sha256"
	"crypto/tls"
	"encoding/binary"
	"encoding/hex"
	"strings"
	"testing"
)

func u16s(b []byte) []uint16 {
	out := make([]uint16, len(b)/2)
	for i := range out {
		out[i] = binary.BigEndian.Uint16(b[2*i:])
	}
	return out
}

// FuzzJA4: whatever a ClientHelloInfo holds, the fingerprint never panics,
// always has JA4's shape, and its hashes are those of JA4_r's lists (the
// hashed and the raw form agree), and likewise JA4_o's of JA4_ro's.
func FuzzJA4(f *testing.F) {
	// Seeds: the specification's example hello, an empty one, GREASE only,
	// a hex-rule ALPN, and lists past the stack buffers.
	f.Add([]byte{0x13, 0x01, 0x13, 0x02, 0xc0, 0x2b, 0x0a, 0x0a}, []byte{0x00, 0x00, 0x00, 0x10, 0x00, 0x2b, 0x00, 0x0d, 0x1a, 0x1a},
		[]byte{0x04, 0x03, 0x08, 0x04}, []byte{0x03, 0x04, 0x03, 0x03}, "example.com", "h2", "http/1.1")
	f.Add([]byte{}, []byte{}, []byte{}, []byte{}, "", "", "")
	f.Add([]byte{0x0a, 0x0a}, []byte{0xfa, 0xfa}, []byte{0xea, 0xea}, []byte{0x3a, 0x3a}, "", "", "")
	f.Add([]byte{0x00}, []byte{0x00, 0x10, 0x00}, []byte{0x06}, []byte{0x03, 0x00}, "", "\xab\xcd", "")
	f.Add(make([]byte, 2000), make([]byte, 1200), make([]byte, 800), []byte{0xfe, 0xfd}, "x", "/", "z")
	f.Fuzz(func(t *testing.T, ciphers, exts, sigs, versions []byte, sni, alpn1, alpn2 string) {
		h := &tls.ClientHelloInfo{
			CipherSuites:      u16s(ciphers),
			Extensions:        u16s(exts),
			SupportedVersions: u16s(versions),
			ServerName:        sni,
		}
		for _, s := range u16s(sigs) {
			h.SignatureSchemes = append(h.SignatureSchemes, tls.SignatureScheme(s))
		}
		if alpn1 != "" || alpn2 != "" {
			h.SupportedProtos = []string{alpn1, alpn2}
		}
		check := func(name, hashed, raw string) {
			if !shape.MatchString(hashed) {
				t.Fatalf("%s %q does not have JA4's shape", name, hashed)
			}
			parts := strings.SplitN(raw, "_", 3)
			if len(parts) != 3 || parts[0] != hashed[:10] {
				t.Fatalf("raw %q does not go with %s %q", raw, name, hashed)
			}
			if got, want := hashed[11:23], hash12(parts[1]); got != want {
				t.Fatalf("%s cipher hash %s, want %s of %q", name, got, want, parts[1])
			}
			if got, want := hashed[24:], hash12(parts[2]); got != want {
				t.Fatalf("%s extension hash %s, want %s of %q", name, got, want, parts[2])
			}
		}
		check("JA4", String(h), Raw(h))
		check("JA4_o", Original(h), RawOriginal(h))
	})
}

func hash12(s string) string {
	if s == "" {
		return "000000000000"
	}
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:6])
}
