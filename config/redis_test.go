package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/redistest"
)

// The password comes from a file or an environment variable, is read at
// load, and shows nowhere: not in Masked, not in Describe.
func TestRedisPasswordSources(t *testing.T) {
	dir := t.TempDir()
	const secret = "s3cret-from-file-4d1c"
	if err := os.WriteFile(filepath.Join(dir, "redis.pw"), []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "c.yaml")
	c, err := Parse(path, []byte("store:\n  redis:\n    url: redis://h:6379\n    username: app\n    password_file: redis.pw\n"))
	if err != nil {
		t.Fatal(err)
	}
	r := c.Store.Redis
	if r.Password() != secret || r.Username() != "app" {
		t.Fatalf("user %q password %q", r.Username(), r.Password())
	}
	if got := c.SecretFiles(); len(got) != 1 || got[0] != filepath.Join(dir, "redis.pw") {
		t.Fatalf("SecretFiles = %v", got)
	}
	shown, err := c.Masked()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(shown), secret) || strings.Contains(r.Describe(), secret) {
		t.Fatalf("the password shows:\n%s\n%s", shown, r.Describe())
	}

	const envSecret = "s3cret-from-env-77aa"
	t.Setenv("TOLLGATE_TEST_REDIS_PW", envSecret)
	c2, err := Parse(path, []byte("store:\n  redis:\n    url: redis://app@h:6379\n    password_env: TOLLGATE_TEST_REDIS_PW\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c2.Store.Redis.Password() != envSecret || c2.Store.Redis.Username() != "app" {
		t.Fatalf("from env: user %q password %q", c2.Store.Redis.Username(), c2.Store.Redis.Password())
	}
	if c2.Store.Redis.CredentialsSum() == c.Store.Redis.CredentialsSum() {
		t.Fatal("different credentials, same sum")
	}
}

// Every problem with the connection settings is reported at its line, and
// none quotes a password.
func TestRedisConnProblems(t *testing.T) {
	dir := t.TempDir()
	pki := redistest.NewPKI(t)
	cert, key := pki.Issue(t, true, time.Now().Add(-48*time.Hour), time.Now().Add(-24*time.Hour))
	src := `store:
  redis:
    url: "redis://u:hunter2@h:6379"
    username: other
    password_env: TOLLGATE_TEST_UNSET_VARIABLE
    tls:
      ca: ` + pki.CAFile + `
      cert: ` + cert + `
      key: ` + key + `
    cluster: ["h2:6379"]
    sentinel:
      addrs: ["s1:0"]
`
	os.Unsetenv("TOLLGATE_TEST_UNSET_VARIABLE")
	_, err := Parse(filepath.Join(dir, "c.yaml"), []byte(src))
	checkProblems(t, err, []want{
		{4, "store.redis.username: the URL names a user too"},
		{5, "store.redis: give the password one way"},
		{5, "the environment variable TOLLGATE_TEST_UNSET_VARIABLE is not set"},
		{6, "store.redis.tls is set but the URL is redis://"},
		{6, "expired at"},
		{11, "store.redis.sentinel.master is required"},
		{11, "choose one of cluster or sentinel"},
		{12, `store.redis.sentinel.addrs[0] "s1:0"`},
	})
	if strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("a password is quoted: %v", err)
	}

	src = `store:
  redis:
    url: "rediss://h:6379"
    password_file: missing.pw
    tls:
      ca: missing-ca.pem
      min_version: "1.1"
`
	_, err = Parse(filepath.Join(dir, "c.yaml"), []byte(src))
	checkProblems(t, err, []want{
		{4, "store.redis.password_file: open " + filepath.Join(dir, "missing.pw")},
		{7, `store.redis.tls.min_version "1.1": want "1.2" or "1.3"`},
	})
}

// rediss:// alone turns TLS on with the system's authorities; a tls
// section alone too; the Sentinel settings load.
func TestRedisTLSAndSentinelLoad(t *testing.T) {
	pki := redistest.NewPKI(t)
	c, err := Parse("c.yaml", []byte("store: {redis: {url: \"rediss://h:6379\"}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if tc := c.Store.Redis.TLSConfig(); tc == nil || tc.RootCAs != nil {
		t.Fatalf("rediss:// alone: %+v", tc)
	}
	src := "store:\n  redis:\n    url: rediss://s0:26379/2\n    tls: {ca: " + pki.CAFile + ", server_name: redis.internal, min_version: \"1.3\"}\n" +
		"    sentinel: {master: mymaster, addrs: [\"s1:26379\", \"s2:26379\"]}\n"
	c, err = Parse("c.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	tc := c.Store.Redis.TLSConfig()
	if tc == nil || tc.RootCAs == nil || tc.ServerName != "redis.internal" || tc.MinVersion != 0x0304 {
		t.Fatalf("tls: %+v", tc)
	}
	if d := c.Store.Redis.Describe(); !strings.Contains(d, `sentinel master "mymaster" via 3 sentinel(s)`) || !strings.Contains(d, "TLS") {
		t.Fatalf("Describe = %q", d)
	}
}

// A Redis URL's query is read by nothing (rediss://h:6379?db=2 would use
// database 0), so it is refused at the url's line, without quoting it
// (it may hold a password), whether or not it decodes.
func TestRedisURLQueryIsRefused(t *testing.T) {
	for _, u := range []string{"rediss://host:6379?x=%", "redis://h:6379/0?db=2", "redis://h:6379?", "redis://h:6379#f", "redis://h:6379?password=hunter2"} {
		_, err := Parse("c.yaml", []byte("store:\n  redis:\n    url: \""+u+"\"\n"))
		ps := Problems(err)
		if len(ps) != 1 || ps[0].Pos.Line != 3 || !strings.Contains(ps[0].Msg, "a query or fragment is not read") {
			t.Errorf("%s: %v, want one problem at line 3", u, err)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: the query is quoted: %v", u, err)
		}
	}
}
