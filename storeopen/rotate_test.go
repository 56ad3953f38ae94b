package storeopen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/config"
	"github.com/tollgate-dev/tollgate/internal/redistest"
)

// New credentials are the same store (Rotate changes them); another
// address is not. Rotate connects with new credentials, refuses a
// password Redis refuses without quoting it, and does nothing when they
// did not change.
func TestSameAndRotate(t *testing.T) {
	srv := redistest.Start(t)
	srv.CLI(t, "ACL", "SETUSER", "app", "on", ">pw-one-a1", ">pw-two-b2", "~*", "+@all")
	dir := t.TempDir()
	load := func(password, extra string) *config.Config {
		t.Helper()
		os.WriteFile(filepath.Join(dir, "pw"), []byte(password), 0o600)
		c, err := config.Parse(filepath.Join(dir, "c.yaml"), []byte("store:\n  redis:\n    url: redis://app@"+srv.Addr+"\n    password_file: pw\n"+extra))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	set, err := Open(load("pw-one-a1", "").Store, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	if err := set.Rotate(load("pw-one-a1", "").Store); err != nil {
		t.Fatalf("unchanged credentials: %v", err)
	}
	wrong := load("pw-wrong-c3", "").Store
	if !set.Same(wrong) {
		t.Fatal("another password is another store: it should be a rotation")
	}
	if err := set.Rotate(wrong); err == nil || strings.Contains(err.Error(), "pw-wrong-c3") || !strings.Contains(err.Error(), "WRONGPASS") {
		t.Fatalf("refused password: %v", err)
	}
	if err := set.Rotate(load("pw-two-b2", "").Store); err != nil {
		t.Fatalf("accepted password: %v", err)
	}
	if set.Same(load("pw-two-b2", "    prefix: \"other:\"\n").Store) {
		t.Fatal("another prefix is the same store")
	}
	if !strings.Contains(srv.CLI(t, "CLIENT", "LIST"), "user=app") {
		t.Fatal("no connection as app")
	}
}
