package fastpath

import "testing"

func TestValidFieldNames(t *testing.T) {
	for raw, want := range map[string]bool{
		"":                          true,
		"Host: a\r\n\r\n":           true,
		"A: 1\r\n b\r\n\tc\r\n\r\n": true,
		"A: 1\nB: 2\n\n":            true,
		"A B: 1\r\n":                false,
		"A : 1\r\n":                 false,
		": 1\r\n":                   false,
		"A\r\n":                     false,
		"A\x00: 1\r\n":              false,
		"Ä: 1\r\n":                  false,
	} {
		if got := ValidFieldNames([]byte(raw)); got != want {
			t.Errorf("validFieldNames(%q) = %v, want %v", raw, got, want)
		}
	}
}

// BenchmarkValidFieldNames is the check's cost per request for a typical
// browser request head (11 fields, 480 bytes).
func BenchmarkValidFieldNames(b *testing.B) {
	head := []byte("Host: api.example.com\r\nUser-Agent: Mozilla/5.0 (X11; Linux x86_64) Gecko/20100101 Firefox/128.0\r\n" +
		"Accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8\r\nAccept-Language: en-US,en;q=0.5\r\n" +
		"Accept-Encoding: gzip, deflate, br\r\nConnection: keep-alive\r\nCookie: session=0123456789abcdef0123456789abcdef\r\n" +
		"Upgrade-Insecure-Requests: 1\r\nSec-Fetch-Dest: document\r\nSec-Fetch-Mode: navigate\r\nX-Api-Key: sk-live-0123456789\r\n\r\n")
	b.SetBytes(int64(len(head)))
	for b.Loop() {
		if !ValidFieldNames(head) {
			b.Fatal("refused")
		}
	}
}
