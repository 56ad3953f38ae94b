package gateway

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/config"
	"github.com/tollgate-dev/tollgate/internal/redistest"
)

// A password file replaced by one the loader refuses (larger than its
// 4 KiB bound, or a link to /dev/zero) fails the reload, naming the file
// and never quoting it, and the running configuration keeps deciding on
// Redis with the password it had; the file put right reloads.
func TestReloadRefusesABadPasswordFile(t *testing.T) {
	srv := redistest.Start(t)
	srv.CLI(t, "ACL", "SETUSER", "app", "on", ">pw-good-5e1f", "~*", "+@all")
	dir := t.TempDir()
	pw := filepath.Join(dir, "redis.pw")
	if err := os.WriteFile(pw, []byte("pw-good-5e1f\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "c.yaml")
	yaml := `listen: {addr: "127.0.0.1:0"}
admin: {addr: "127.0.0.1:0"}
reload: {watch: false}
routes: [{path: /, upstream: demo}]
store: {redis: {url: "redis://app@` + srv.Addr + `", password_file: redis.pw, timeout: 2s}}
rules: [{name: r, policies: [{algorithm: fixed_window, limit: 100, window: 1h}]}]
`
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	base := "http://" + g.Addr().String()
	keys := func() string { return strings.TrimSpace(srv.CLI(t, "DBSIZE")) }
	if code, _, _ := get(t, base+"/", ""); code != 200 || keys() == "0" {
		t.Fatalf("before: %d, %s keys on Redis", code, keys())
	}
	const secret = "pw-leaked-if-quoted-77c2"
	big := filepath.Join(dir, "big.pw")
	if err := os.WriteFile(big, []byte(strings.Repeat(secret+"\n", 400)), 0o600); err != nil { // 10 KiB
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero.pw")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ from, text string }{
		{big, "larger than 4096 bytes"},
		{zero, "not a regular file (a character device)"},
	} {
		if err := os.Rename(c.from, pw); err != nil {
			t.Fatal(err)
		}
		err := g.ReloadFile(path)
		if err == nil || !strings.Contains(err.Error(), "store.redis.password_file") || !strings.Contains(err.Error(), pw) || !strings.Contains(err.Error(), c.text) {
			t.Fatalf("reload with %s as the password file: %v, want a refusal naming it: %s", c.from, err, c.text)
		}
		if strings.Contains(err.Error(), secret) {
			t.Fatalf("the refusal quotes the file: %v", err)
		}
		srv.CLI(t, "FLUSHALL")
		if code, _, _ := get(t, base+"/", ""); code != 200 || keys() == "0" {
			t.Fatalf("after the refused reload (%s): %d, %s keys on Redis: the old configuration does not serve", c.from, code, keys())
		}
	}
	if err := os.Remove(pw); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pw, []byte("pw-good-5e1f\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := g.ReloadFile(path); err != nil {
		t.Fatalf("the file put right: %v", err)
	}
	if v := testCounter(g, "failure"); v != 2 {
		t.Errorf("failed reloads %v, want 2", v)
	}
}
