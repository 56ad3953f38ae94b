package gossipconf

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"testing"
)

func TestParseSecretKey(t *testing.T) {
	for _, n := range []int{16, 24, 32} {
		key := bytes.Repeat([]byte{0xab}, n)
		for _, text := range []string{hex.EncodeToString(key), base64.StdEncoding.EncodeToString(key), base64.RawStdEncoding.EncodeToString(key)} {
			got, err := ParseSecretKey(text)
			if err != nil || !bytes.Equal(got, key) {
				t.Errorf("ParseSecretKey(%q) = %x, %v", text, got, err)
			}
		}
	}
	for _, text := range []string{"", "not a key!", hex.EncodeToString(make([]byte, 20))} {
		if _, err := ParseSecretKey(text); err == nil {
			t.Errorf("ParseSecretKey(%q) accepted", text)
		}
	}
}
