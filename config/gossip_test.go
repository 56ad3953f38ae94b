package config

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/store/gossip/gossipconf"
)

const testKeyHex = "00112233445566778899aabbccddeeff"

func TestGossipSectionDecodesWithDefaults(t *testing.T) {
	c, err := Parse("t.yaml", []byte(`store:
  gossip:
    name: edge-1
    seeds: ["10.0.0.2:7946", "10.0.0.3:7946"]
    secret_key: `+testKeyHex+`
rules:
  - name: api
    consistency: gossip
    on_error: closed
    policies: [{rate: 10/s}]
`))
	if err != nil {
		t.Fatal(err)
	}
	g := c.Store.Gossip
	if g == nil || g.Name != "edge-1" || g.BindAddr != "127.0.0.1" || g.BindPort == nil || *g.BindPort != gossipconf.DefaultPort ||
		g.Interval != 100*time.Millisecond || len(g.Seeds) != 2 || g.MessageBytes != 1400 ||
		g.MaxStateBytes != 8<<20 || g.StateBytesInFlight != 16<<20 {
		t.Fatalf("gossip = %+v", g)
	}
	want, _ := hex.DecodeString(testKeyHex)
	if !bytes.Equal(g.Key, want) {
		t.Fatalf("key = %x", g.Key)
	}
	if c.Store.Memory == nil {
		t.Fatal("the store section's store is still memory beside gossip")
	}
	if c.Rules[0].Consistency != "gossip" || c.Rules[0].OnError != "closed" {
		t.Fatalf("rule = %+v", c.Rules[0])
	}
}

func TestGossipProblemsAtTheirLines(t *testing.T) {
	_, err := Parse("t.yaml", []byte(`rules:
  - name: a
    consistency: gossip
    policies: [{rate: 10/s}]
`))
	checkProblems(t, err, []want{{3, "gossip needs a store.gossip section"}})

	_, err = Parse("t.yaml", []byte(`store:
  gossip:
    bind_addr: localhost
    bind_port: 70000
    seeds: ["nohost"]
    interval: 1ms
    message_bytes: 100
    secret_key: "abc"
rules:
  - name: log
    consistency: gossip
    policies: [{algorithm: sliding_log, limit: 10, window: 1s}]
  - name: leaky
    consistency: gossip
    policies: [{algorithm: leaky_bucket, rate: 10/s, burst: 5}]
  - name: fine
    consistency: gossip
    policies: [{algorithm: fixed_window, limit: 10, window: 1s}, {algorithm: sliding_window, limit: 10, window: 1m}, {rate: 1/s}]
`))
	checkProblems(t, err, []want{
		{3, `store.gossip.bind_addr "localhost": want an IP address`},
		{4, "store.gossip.bind_port 70000"},
		{5, `store.gossip.seeds[0] "nohost": want host:port`},
		{6, "store.gossip.interval"},
		{7, "store.gossip.message_bytes 100"},
		{8, "store.gossip.secret_key: the secret key is"},
		{12, "rules[0].policies[0].algorithm: sliding_log has no gossip tier"},
		{15, "rules[1].policies[0].algorithm: leaky_bucket has no gossip tier"},
	})

	_, err = Parse("t.yaml", []byte(`store:
  gossip:
    max_state_bytes: 30000000
    state_bytes_in_flight: 1000
`))
	checkProblems(t, err, []want{
		{3, "store.gossip.max_state_bytes 30000000: want 0 to 20971520"},
		{4, "store.gossip.state_bytes_in_flight 1000: want at least max_state_bytes"},
	})
}

// TestGossipSecretKeySources: the key is read from the file, from the
// environment, or inline, hex or base64; at most one source; no message
// and no masked config ever shows it.
func TestGossipSecretKeySources(t *testing.T) {
	key, _ := hex.DecodeString(testKeyHex + "0011223344556677")
	b64 := base64.StdEncoding.EncodeToString(key)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "gossip.key"), []byte("  "+b64+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TOLLGATE_TEST_GOSSIP_KEY", hex.EncodeToString(key))
	for _, src := range []string{
		"secret_key_file: gossip.key",
		"secret_key_env: TOLLGATE_TEST_GOSSIP_KEY",
		"secret_key: " + b64,
		"secret_key: " + strings.TrimRight(base64.RawURLEncoding.EncodeToString(key), "="),
	} {
		c, err := Parse(filepath.Join(dir, "t.yaml"), []byte("store:\n  gossip:\n    "+src+"\n"))
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if !bytes.Equal(c.Store.Gossip.Key, key) {
			t.Fatalf("%s: key %x, want %x", src, c.Store.Gossip.Key, key)
		}
		shown, err := c.Masked()
		if err != nil {
			t.Fatal(err)
		}
		for _, secret := range []string{b64, hex.EncodeToString(key), base64.RawURLEncoding.EncodeToString(key)} {
			if bytes.Contains(shown, []byte(secret)) {
				t.Fatalf("%s: the masked config shows the key:\n%s", src, shown)
			}
		}
	}

	_, err := Parse(filepath.Join(dir, "t.yaml"), []byte("store:\n  gossip:\n    secret_key: "+b64+"\n    secret_key_env: TOLLGATE_TEST_GOSSIP_KEY\n"))
	checkProblems(t, err, []want{{4, "give one of secret_key and secret_key_env, not both"}})
	_, err = Parse(filepath.Join(dir, "t.yaml"), []byte("store:\n  gossip:\n    secret_key_env: TOLLGATE_TEST_NO_SUCH_VARIABLE\n"))
	checkProblems(t, err, []want{{3, "environment variable TOLLGATE_TEST_NO_SUCH_VARIABLE is not set"}})
	_, err = Parse(filepath.Join(dir, "t.yaml"), []byte("store:\n  gossip:\n    secret_key_file: missing.key\n"))
	checkProblems(t, err, []want{{3, "store.gossip.secret_key_file"}})

	// A key of the wrong length: the message gives its length, never it.
	short := base64.StdEncoding.EncodeToString(key[:10])
	_, err = Parse("t.yaml", []byte("store:\n  gossip:\n    secret_key: "+short+"\n"))
	checkProblems(t, err, []want{{3, "the secret key is 10 bytes, want 16, 24 or 32"}})
	if strings.Contains(err.Error(), short) {
		t.Fatalf("the error quotes the key: %v", err)
	}
}
