package stableread

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestReadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte("rules: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	data, fi, err := ReadFile(path, 1<<20)
	if err != nil || string(data) != "rules: []\n" || fi.Size() != 10 {
		t.Fatalf("%q %v %v", data, fi, err)
	}
	if _, _, err := ReadFile(filepath.Join(t.TempDir(), "missing"), 1<<20); !errors.Is(err, os.ErrNotExist) {
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
		data, _, err := ReadFileThen(path, 1<<20, func() { tc.change(t, path) })
		if !errors.Is(err, ErrChanged) || data != nil {
			t.Errorf("%s: %q, %v; want ErrChanged", tc.name, data, err)
		}
	}
}

// A file larger than the bound is ErrTooLarge: a regular one before it
// is read (a sparse file here, big without being written), a device
// (/dev/zero, which never ends) once it has given more than the bound;
// a file of exactly the bound is read. Open bounds a stream the same
// way.
func TestReadFileBound(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(path, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	if data, _, err := ReadFile(path, 10); err != nil || string(data) != "0123456789" {
		t.Fatalf("at the bound: %q, %v", data, err)
	}
	if _, _, err := ReadFile(path, 9); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "larger than 9 bytes") {
		t.Fatalf("over the bound: %v", err)
	}
	if err := os.Truncate(path, 1<<40); err != nil { // 1 TiB, sparse
		t.Fatal(err)
	}
	if _, _, err := ReadFile(path, 256<<20); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "256 MiB") {
		t.Fatalf("a sparse TiB: %v", err)
	}
	if _, err := Open(path, 256<<20); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Open, a sparse TiB: %v", err)
	}
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	if _, _, err := ReadFile("/dev/zero", 1<<20); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("/dev/zero: %v", err)
	}
	f, err := Open("/dev/zero", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n, err := io.Copy(io.Discard, f)
	if !errors.Is(err, ErrTooLarge) || n != 1<<20 {
		t.Fatalf("Open(/dev/zero): read %d, %v; want the bound, then ErrTooLarge", n, err)
	}
}
