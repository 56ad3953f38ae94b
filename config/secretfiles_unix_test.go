//go:build unix

package config

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/redistest"
)

// The small files the store section names (store.redis's password_file
// and TLS files, store.gossip's secret_key_file) are read with a bound
// and must be regular files: a file over the bound, /dev/zero and a named
// pipe with no writer are each refused at once at the key's line (the
// tls section's for a TLS file, where its other problems are), naming
// the file and never quoting what it holds; the normal files load (the
// other tests here).
func TestSecretFilesAreBounded(t *testing.T) {
	dir := t.TempDir()
	pki := redistest.NewPKI(t)
	cert, key := pki.Issue(t, true, time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
	const secret = "s3cret-in-a-big-file-91f3"
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, []byte(strings.Repeat(secret+"\n", 8<<10)), 0o600); err != nil { // 208 KiB
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge.pem")
	if err := os.WriteFile(huge, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(huge, 5<<20); err != nil { // over the 4 MiB of a TLS file; sparse
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, src string
		line      int
		key, path string
		text      string
	}{
		{"password over 4 KiB", "store:\n  redis:\n    url: redis://h:6379\n    password_file: big\n", 4, "store.redis.password_file", big, "larger than 4096 bytes"},
		{"password /dev/zero", "store:\n  redis:\n    url: redis://h:6379\n    password_file: /dev/zero\n", 4, "store.redis.password_file", "/dev/zero", "not a regular file (a character device)"},
		{"password named pipe", "store:\n  redis:\n    url: redis://h:6379\n    password_file: fifo\n", 4, "store.redis.password_file", fifo, "not a regular file (a named pipe)"},
		{"password a directory", "store:\n  redis:\n    url: redis://h:6379\n    password_file: .\n", 4, "store.redis.password_file", dir, "not a regular file (a directory)"},
		{"CA over 4 MiB", "store:\n  redis:\n    url: rediss://h:6379\n    tls:\n      ca: huge.pem\n", 4, "store.redis.tls", huge, "larger than 4 MiB"},
		{"CA /dev/zero", "store:\n  redis:\n    url: rediss://h:6379\n    tls:\n      ca: /dev/zero\n", 4, "store.redis.tls", "/dev/zero", "CA file: /dev/zero: not a regular file"},
		{"CA named pipe", "store:\n  redis:\n    url: rediss://h:6379\n    tls:\n      ca: fifo\n", 4, "store.redis.tls", fifo, "not a regular file (a named pipe)"},
		{"client key /dev/zero", "store:\n  redis:\n    url: rediss://h:6379\n    tls:\n      ca: " + pki.CAFile + "\n      cert: " + cert + "\n      key: /dev/zero\n", 4, "store.redis.tls", "/dev/zero", "client key: /dev/zero: not a regular file"},
		{"client cert over 4 MiB", "store:\n  redis:\n    url: rediss://h:6379\n    tls:\n      cert: huge.pem\n      key: " + key + "\n", 4, "store.redis.tls", huge, "client certificate: " + huge},
		{"gossip key over 4 KiB", "store:\n  gossip:\n    secret_key_file: big\n", 3, "store.gossip.secret_key_file", big, "larger than 4096 bytes"},
		{"gossip key /dev/zero", "store:\n  gossip:\n    secret_key_file: /dev/zero\n", 3, "store.gossip.secret_key_file", "/dev/zero", "not a regular file (a character device)"},
		{"gossip key named pipe", "store:\n  gossip:\n    secret_key_file: fifo\n", 3, "store.gossip.secret_key_file", fifo, "not a regular file (a named pipe)"},
	} {
		_, err := Parse(filepath.Join(dir, "c.yaml"), []byte(tc.src))
		ps := Problems(err)
		if len(ps) != 1 {
			t.Errorf("%s: %d problems, want 1: %v", tc.name, len(ps), err)
			continue
		}
		if ps[0].Pos.Line != tc.line || !strings.Contains(ps[0].Msg, tc.key) || !strings.Contains(ps[0].Msg, tc.path) || !strings.Contains(ps[0].Msg, tc.text) {
			t.Errorf("%s: %v, want at line %d %s naming %s, %q", tc.name, ps[0], tc.line, tc.key, tc.path, tc.text)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("%s: the error quotes the file: %v", tc.name, err)
		}
	}
}
