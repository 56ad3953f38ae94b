package stableread

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestReadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte("rules: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	data, fi, err := ReadFile(path)
	if err != nil || string(data) != "rules: []\n" || fi.Size() != 10 {
		t.Fatalf("%q %v %v", data, fi, err)
	}
	if _, _, err := ReadFile(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}

// A writer that resumes while the file is read (here: right after the
// bytes were read, the worst moment: they are a consistent but stale,
// half-written version) makes the read ErrChanged, whether it appends or
// rewrites the file in place with the same size.
func TestReadFileRefusesAFileChangedWhileRead(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, path string)
	}{
		{"appended", func(t *testing.T, path string) {
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			f.WriteString("  - name: second\n")
		}},
		{"rewritten, same size", func(t *testing.T, path string) {
			// Another modification time, as a write a moment later has.
			if err := os.WriteFile(path, []byte("rules: [b]\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			later := time.Now().Add(time.Second)
			os.Chtimes(path, later, later)
		}},
	} {
		path := filepath.Join(t.TempDir(), "c.yaml")
		if err := os.WriteFile(path, []byte("rules: [a]\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		data, _, err := ReadFileThen(path, func() { tc.change(t, path) })
		if !errors.Is(err, ErrChanged) || data != nil {
			t.Errorf("%s: %q, %v; want ErrChanged", tc.name, data, err)
		}
	}
}
