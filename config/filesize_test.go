package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Files are read within bounds: a configuration file over MaxFileBytes,
// an except list or a members file over MaxListFileBytes is refused
// with the bound named (at the line naming a list file), without being
// read: the files here are sparse (os.Truncate), so a reader that read
// them whole would take seconds and hundreds of MiB.
func TestFilesLargerThanTheirBound(t *testing.T) {
	dir := t.TempDir()
	big := func(name string, size int64) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(p, size); err != nil {
			t.Fatal(err)
		}
		return p
	}
	os.WriteFile(filepath.Join(dir, "keys.txt"), []byte("k-1\n"), 0o644)
	big("monitors.txt", MaxListFileBytes+1)
	_, err := Parse(filepath.Join(dir, "c.yaml"), []byte(exceptSrc))
	ps := Problems(err)
	if len(ps) != 1 || ps[0].Pos.Line != 2 || !strings.Contains(ps[0].Msg, "larger than 256 MiB") {
		t.Errorf("a clients file over its bound: %v; want one problem at line 2 naming 256 MiB", ps)
	}
	os.WriteFile(filepath.Join(dir, "monitors.txt"), []byte("198.51.100.0/24\n"), 0o644)
	if _, err := Parse(filepath.Join(dir, "c.yaml"), []byte(exceptSrc)); err != nil {
		t.Fatalf("the same files within bounds: %v", err)
	}

	big("members.txt", MaxListFileBytes+1)
	_, err = Parse(filepath.Join(dir, "t.yaml"), []byte("rules: [{name: a, key: header:K, tiers: {default: f, members_file: members.txt, plans: {f: [{rate: 1/s}]}}}]\n"))
	if err == nil || !strings.Contains(err.Error(), "larger than 256 MiB") {
		t.Errorf("a members file over its bound: %v", err)
	}

	p := big("huge.yaml", MaxFileBytes+1)
	_, err = Load(p)
	if ps := Problems(err); len(ps) != 1 || ps[0].Msg != "file too large: larger than 16 MiB, the bound for this file" {
		t.Errorf("a configuration file over its bound: %v", err)
	}
}
