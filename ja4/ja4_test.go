package ja4

import (
	"bufio"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// shape is what every JA4 fingerprint this package writes looks like.
var shape = regexp.MustCompile(`^t(13|12|11|10|s3|s2|d1|d2|d3|00)[di][0-9]{4}[0-9A-Za-z]{2}_[0-9a-f]{12}_[0-9a-f]{12}$`)

func parseHexList(t testing.TB, s string) []uint16 {
	t.Helper()
	if s == "" {
		return nil
	}
	var out []uint16
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseUint(f, 16, 16)
		if err != nil {
			t.Fatalf("bad hex %q: %v", f, err)
		}
		out = append(out, uint16(v))
	}
	return out
}

// helloFromRawOriginal rebuilds the ClientHelloInfo crypto/tls would give
// for the hello FoxIO's JA4_ro describes, with GREASE values added where
// Chrome puts them (the fingerprint must ignore them).
func helloFromRawOriginal(t testing.TB, ro string) *tls.ClientHelloInfo {
	t.Helper()
	parts := strings.Split(ro, "_")
	if len(parts) < 3 || len(parts) > 4 || len(parts[0]) != 10 {
		t.Fatalf("bad JA4_ro %q", ro)
	}
	a := parts[0]
	h := &tls.ClientHelloInfo{}
	switch a[1:3] {
	case "13":
		h.SupportedVersions = []uint16{0x3a3a, 0x0304, 0x0303}
	case "12": // no supported_versions: crypto/tls lists up to the legacy version
		h.SupportedVersions = []uint16{0x0303, 0x0302, 0x0301}
	case "10":
		h.SupportedVersions = []uint16{0x0301}
	default:
		t.Fatalf("version %q not in the vectors' set", a[1:3])
	}
	switch a[8:10] {
	case "h2":
		h.SupportedProtos = []string{"h2", "http/1.1"}
	case "h1":
		h.SupportedProtos = []string{"http/1.1"}
	case "00":
	default:
		t.Fatalf("ALPN %q not in the vectors' set", a[8:10])
	}
	h.CipherSuites = append([]uint16{0x0a0a}, parseHexList(t, parts[1])...)
	exts := parseHexList(t, parts[2])
	h.Extensions = append(append([]uint16{0x1a1a}, exts...), 0x2a2a)
	for _, e := range exts {
		if e == extServerName {
			h.ServerName = "example.com"
		}
	}
	if a[3] == 'd' && h.ServerName == "" {
		t.Fatalf("%q: 'd' without extension 0000", ro)
	}
	if len(parts) == 4 {
		h.SignatureSchemes = append(h.SignatureSchemes, 0xeaea)
		for _, s := range parseHexList(t, parts[3]) {
			h.SignatureSchemes = append(h.SignatureSchemes, tls.SignatureScheme(s))
		}
	}
	return h
}

// TestFoxIOVectors: for each of FoxIO's published hellos, all four forms
// match FoxIO's expected outputs.
func TestFoxIOVectors(t *testing.T) {
	f, err := os.Open("testdata/foxio-vectors.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		c := strings.Split(line, "\t")
		if len(c) != 5 {
			t.Fatalf("bad line %q", line)
		}
		src, ja4, r, o, ro := c[0], c[1], c[2], c[3], c[4]
		h := helloFromRawOriginal(t, ro)
		if got := String(h); got != ja4 {
			t.Errorf("%s: JA4 = %s, want %s (JA4_ro %s)", src, got, ja4, ro)
		}
		if got := Raw(h); got != r {
			t.Errorf("%s: JA4_r = %s, want %s", src, got, r)
		}
		// FoxIO's Python tool writes JA4_o's extension hash as zeros when
		// the *sorted* list (SNI and ALPN removed) is empty, even though the
		// original list (here: SNI alone) is not; its Rust tool hashes the
		// original list, as this package does. Only https3-301-get has it.
		if sortedExtsEmpty(r) && strings.HasSuffix(o, "_000000000000") {
			sum := sha256.Sum256([]byte(strings.Join(strings.Split(ro, "_")[2:], "_")))
			o = o[:24] + hex.EncodeToString(sum[:6])
		}
		if got := Original(h); got != o {
			t.Errorf("%s: JA4_o = %s, want %s", src, got, o)
		}
		if got := RawOriginal(h); got != ro {
			t.Errorf("%s: JA4_ro = %s, want %s", src, got, ro)
		}
		n++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 80 {
		t.Fatalf("%d vectors read, want the 88 of testdata", n)
	}
}

// sortedExtsEmpty reports whether JA4_r r has no extensions and no
// signature algorithms.
func sortedExtsEmpty(r string) bool {
	parts := strings.Split(r, "_")
	return len(parts) == 3 && parts[2] == ""
}

// TestSpecExample is the worked example of FoxIO's technical_details/JA4.md.
func TestSpecExample(t *testing.T) {
	h := &tls.ClientHelloInfo{
		CipherSuites:      []uint16{0x1301, 0x1302, 0x1303, 0xc02b, 0xc02f, 0xc02c, 0xc030, 0xcca9, 0xcca8, 0xc013, 0xc014, 0x009c, 0x009d, 0x002f, 0x0035},
		Extensions:        []uint16{0x001b, 0x0000, 0x0033, 0x0010, 0x4469, 0x0017, 0x002d, 0x000d, 0x0005, 0x0023, 0x0012, 0x002b, 0xff01, 0x000b, 0x000a, 0x0015},
		SignatureSchemes:  []tls.SignatureScheme{0x0403, 0x0804, 0x0401, 0x0503, 0x0805, 0x0501, 0x0806, 0x0601},
		SupportedVersions: []uint16{0x0304, 0x0303},
		SupportedProtos:   []string{"h2", "http/1.1"},
		ServerName:        "example.com",
	}
	for _, c := range []struct{ name, got, want string }{
		{"JA4", String(h), "t13d1516h2_8daaf6152771_e5627efa2ab1"},
		{"JA4_r", Raw(h), "t13d1516h2_002f,0035,009c,009d,1301,1302,1303,c013,c014,c02b,c02c,c02f,c030,cca8,cca9_0005,000a,000b,000d,0012,0015,0017,001b,0023,002b,002d,0033,4469,ff01_0403,0804,0401,0503,0805,0501,0806,0601"},
		{"JA4_o", Original(h), "t13d1516h2_acb858a92679_18f69afefd3d"},
		{"JA4_ro", RawOriginal(h), "t13d1516h2_1301,1302,1303,c02b,c02f,c02c,c030,cca9,cca8,c013,c014,009c,009d,002f,0035_001b,0000,0033,0010,4469,0017,002d,000d,0005,0023,0012,002b,ff01,000b,000a,0015_0403,0804,0401,0503,0805,0501,0806,0601"},
	} {
		if c.got != c.want {
			t.Errorf("%s = %s, want %s", c.name, c.got, c.want)
		}
	}
	// Without signature algorithms the list ends with no underscore (the
	// specification's second hash).
	h.SignatureSchemes = nil
	if got, want := String(h)[24:], "6d807ffa2a79"; got != want {
		t.Errorf("extension hash without signature algorithms = %s, want %s", got, want)
	}
}

func TestALPN(t *testing.T) {
	for _, c := range []struct {
		protos []string
		want   string
	}{
		{nil, "00"},
		{[]string{""}, "00"},
		{[]string{"h2"}, "h2"},
		{[]string{"http/1.1", "h2"}, "h1"},
		{[]string{"h3"}, "h3"},
		{[]string{"x"}, "xx"},
		// The specification's hex examples.
		{[]string{"\xab"}, "ab"},
		{[]string{"\xab\xcd"}, "ad"},
		{[]string{"\x30\xab"}, "3b"},
		{[]string{"\x30\x31\xab\xcd"}, "3d"},
		{[]string{"\x30\xab\xcd\x31"}, "01"},
		{[]string{"/x"}, "28"},
	} {
		if got := string(appendALPN(nil, c.protos)); got != c.want {
			t.Errorf("ALPN %q = %q, want %q", c.protos, got, c.want)
		}
	}
}

func TestVersionAndCounts(t *testing.T) {
	for _, c := range []struct {
		versions []uint16
		want     string
	}{
		{nil, "00"},
		{[]uint16{0x0a0a}, "00"},                 // only GREASE
		{[]uint16{0xfafa, 0x0304, 0x0303}, "13"}, // GREASE first, highest wins
		{[]uint16{0x0303, 0x0304}, "13"},         // order does not matter
		{[]uint16{0x0303, 0x0302, 0x0301}, "12"}, // what crypto/tls gives without supported_versions
		{[]uint16{0x0301}, "10"},
		{[]uint16{0x0300}, "s3"},
		{[]uint16{0x7f1c}, "00"}, // a draft version: unknown
	} {
		if got := versionCode(c.versions); got != c.want {
			t.Errorf("version %04x = %s, want %s", c.versions, got, c.want)
		}
	}
	// Counts: GREASE not counted, capped at 99; SNI from the extension.
	h := &tls.ClientHelloInfo{Extensions: []uint16{0x0000, 0x0a0a}}
	for i := 0; i < 150; i++ {
		h.CipherSuites = append(h.CipherSuites, uint16(0x1000+i))
	}
	h.CipherSuites = append(h.CipherSuites, 0x2a2a)
	got := String(h)
	if want := "t00d9901"; got[:8] != want {
		t.Errorf("prefix = %s, want %s", got[:8], want)
	}
	if got := String(&tls.ClientHelloInfo{}); got != "t00i000000_000000000000_000000000000" {
		t.Errorf("empty hello = %s", got)
	}
	if got := String(nil); got != "t00i000000_000000000000_000000000000" {
		t.Errorf("nil hello = %s", got)
	}
}

// TestGREASEValues: exactly RFC 8701's sixteen values are GREASE.
func TestGREASEValues(t *testing.T) {
	n := 0
	for v := 0; v <= 0xffff; v++ {
		if isGREASE(uint16(v)) {
			n++
			if b := byte(v); v>>8 != int(b) || b&0x0f != 0x0a {
				t.Errorf("%04x taken for GREASE", v)
			}
		}
	}
	if n != 16 {
		t.Fatalf("%d GREASE values, want 16", n)
	}
}

// TestAppendAllocatesNothing: with room in dst, no allocation, for a
// Chrome-sized hello.
func TestAppendAllocatesNothing(t *testing.T) {
	h := helloFromRawOriginal(t, "t13d1517h2_1301,1302,1303,c02b,c02f,c02c,c030,cca9,cca8,c013,c014,009c,009d,002f,0035_fe0d,0010,0017,0033,44cd,ff01,000a,000d,0023,002b,000b,ca34,002d,0000,0005,001b,0012_0904,0905,0906,0403,0804,0401,0503,0805,0501,0806,0601")
	buf := make([]byte, 0, 512)
	for name, fn := range map[string]func([]byte, *tls.ClientHelloInfo) []byte{
		"Append": Append, "AppendRaw": AppendRaw, "AppendOriginal": AppendOriginal, "AppendRawOriginal": AppendRawOriginal,
	} {
		if n := testing.AllocsPerRun(200, func() { buf = fn(buf[:0], h) }); n != 0 {
			t.Errorf("%s: %v allocations a call, want 0", name, n)
		}
	}
}

func BenchmarkAppend(b *testing.B) {
	h := helloFromRawOriginal(b, "t13d1516h2_1301,1302,1303,c02b,c02f,c02c,c030,cca9,cca8,c013,c014,009c,009d,002f,0035_001b,0000,0033,0010,4469,0017,002d,000d,0005,0023,0012,002b,ff01,000b,000a,0015_0403,0804,0401,0503,0805,0501,0806,0601")
	buf := make([]byte, 0, 64)
	b.ReportAllocs()
	for b.Loop() {
		buf = Append(buf[:0], h)
	}
}
