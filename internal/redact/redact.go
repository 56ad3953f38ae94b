// Package redact hides client keys (IP addresses, API keys, store keys
// built from them) from log lines: a key is replaced by a short hex of a
// keyed hash, the same for the same key within one process (so that the
// lines of one client can be told apart and followed) and meaningless
// outside it (the hash key is random per process, so that an IPv4 address
// cannot be found by hashing all 2^32 of them).
package redact

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// secret keys the hash; drawn once per process.
var secret = func() []byte {
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand panics rather than return short)
	return b
}()

// Key returns key's stand-in for a log line: "key#" and 16 hex digits of
// HMAC-SHA-256(process secret, key). Safe for concurrent use.
func Key(key string) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(key))
	var sum [sha256.Size]byte
	return "key#" + hex.EncodeToString(m.Sum(sum[:0])[:8])
}

// Keys returns msg with every occurrence of each non-empty key replaced by
// Key(key), longest keys first (so that a key containing another is
// replaced whole).
func Keys(msg string, keys ...string) string {
	sorted := make([]string, 0, len(keys))
	for _, k := range keys {
		if k != "" && strings.Contains(msg, k) {
			sorted = append(sorted, k)
		}
	}
	if len(sorted) == 0 {
		return msg
	}
	// Few keys: insertion sort by length, longest first.
	for i := 1; i < len(sorted); i++ {
		for j := i; j > 0 && len(sorted[j]) > len(sorted[j-1]); j-- {
			sorted[j], sorted[j-1] = sorted[j-1], sorted[j]
		}
	}
	for _, k := range sorted {
		msg = strings.ReplaceAll(msg, k, Key(k))
	}
	return msg
}
