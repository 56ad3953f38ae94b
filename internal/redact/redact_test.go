package redact

import (
	"strings"
	"testing"
)

func TestKeyIsStableShortAndHidesTheKey(t *testing.T) {
	a, b := Key("10.1.2.3"), Key("10.1.2.3")
	if a != b {
		t.Fatalf("Key differs for one key: %s, %s", a, b)
	}
	if a == Key("10.1.2.4") {
		t.Fatalf("two keys share %s", a)
	}
	if len(a) != len("key#")+16 || strings.Contains(a, "10.1.2.3") {
		t.Fatalf("Key = %q", a)
	}
}

func TestKeysReplacesEveryOccurrenceLongestFirst(t *testing.T) {
	msg := "key tollgate:{api\x1fsecret-key} holds no state; raw secret-key again"
	got := Keys(msg, "secret-key", "tollgate:{api\x1fsecret-key}", "")
	if strings.Contains(got, "secret-key") {
		t.Fatalf("a key survived: %q", got)
	}
	want := "key " + Key("tollgate:{api\x1fsecret-key}") + " holds no state; raw " + Key("secret-key") + " again"
	if got != want {
		t.Fatalf("Keys = %q, want %q", got, want)
	}
	if Keys("nothing here", "k") != "nothing here" {
		t.Fatal("a message without keys changed")
	}
}
