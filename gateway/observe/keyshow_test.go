package observe

import (
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/redact"
)

func TestShowKey(t *testing.T) {
	for _, tc := range []struct{ mode, key, want string }{
		{"plain", "a\x1fb", "a + b"},
		{"plain", "\x1eanonymous", "(anonymous)"},
		{"truncate", "2001:db8:1:2::9", "2001:db8:1::/48"},
		{"truncate", "::ffff:10.1.2.3", "10.1.2.0/24"},
		{"truncate", "abc", "***"},
		{"truncate", "10.0.0.1\x1fsecretkey", "10.0.0.0/24 + secr…"},
		{"hash", "x", redact.Key("x")},
	} {
		if got := ShowKey(tc.mode, tc.key); got != tc.want {
			t.Errorf("showKey(%s, %q) = %q, want %q", tc.mode, tc.key, got, tc.want)
		}
	}
}

// FuzzShowKey: whatever a client puts in its key, showing it never panics,
// the hash never carries the key, and truncation keeps at most a prefix.
func FuzzShowKey(f *testing.F) {
	f.Fuzz(func(t *testing.T, key string) {
		if h := ShowKey(KeysHash, key); len(key) > 3 && !strings.HasPrefix(key, AnonymousMark) && strings.Contains(h, key) {
			t.Fatalf("hash %q carries %q", h, key)
		}
		tr := ShowKey(KeysTruncate, key)
		if len(key) > 24 && strings.Contains(tr, key) {
			t.Fatalf("truncated %q carries %q", tr, key)
		}
		ShowKey(KeysPlain, key)
	})
}
