package stableread

import (
	"errors"
	"fmt"
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

// ReadRegular reads a regular file, through a symbolic link too, and
// refuses at once what is not one: /dev/zero (never read: refused before
// a byte is), a named pipe with no writer (opened without waiting for
// one), a directory; and a file over the bound.
func TestReadRegular(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "pw")
	if err := os.WriteFile(path, []byte("hunter2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, link} {
		if data, err := ReadRegular(p, 8); err != nil || string(data) != "hunter2\n" {
			t.Fatalf("%s: %q, %v", p, data, err)
		}
	}
	if _, err := ReadRegular(path, 7); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), path) {
		t.Fatalf("over the bound: %v", err)
	}
	if err := os.Truncate(path, 1<<40); err != nil { // 1 TiB, sparse
		t.Fatal(err)
	}
	if _, err := ReadRegular(path, 4096); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("1 TiB: %v", err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscallMkfifo(fifo); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	for _, tc := range []struct{ path, kind string }{
		{"/dev/zero", "a character device"}, {fifo, "a named pipe"}, {dir, "a directory"},
	} {
		done := make(chan error, 1)
		go func() { _, err := ReadRegular(tc.path, 4096); done <- err }()
		select {
		case err := <-done:
			if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), tc.path) || !strings.Contains(err.Error(), tc.kind) {
				t.Errorf("%s: %v, want ErrNotRegular naming it and %s", tc.path, err, tc.kind)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: ReadRegular still waiting after 10s", tc.path)
		}
	}
}

// ReadFile and Open never wait for a named pipe's writer: one with none
// reads as empty at once.
func TestReadFileNamedPipe(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscallMkfifo(fifo); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan string, 2)
	go func() {
		data, _, err := ReadFile(fifo, 1<<20)
		done <- fmt.Sprintf("ReadFile %q %v", data, err)
		r, err := Open(fifo, 1<<20)
		if err != nil {
			done <- fmt.Sprintf("Open: %v", err)
			return
		}
		b, err := io.ReadAll(r)
		r.Close()
		done <- fmt.Sprintf("Open %q %v", b, err)
	}()
	for _, want := range []string{`ReadFile "" <nil>`, `Open "" <nil>`} {
		select {
		case got := <-done:
			if got != want {
				t.Fatalf("no writer: %s, want %s", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no writer: still waiting after 10s")
		}
	}
}
