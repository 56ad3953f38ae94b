// Package stableread reads a watched configuration file whole and tells
// a read that raced a writer. The gateway's watcher (package gateway)
// and envoy-rls's (package envoyrls) read their files with ReadFile, so
// that a file being written in place while it is read is never loaded:
// its size or modification time after the read differs from before, or
// the bytes read are not its size, and the reload is refused with
// ErrChanged (the running configuration keeps serving, and the next look
// reads it again).
//
// It cannot see a writer that is paused, not writing, while the file is
// read: that file is loaded as it stands, half written. The documented
// way to change a watched file is therefore to write the new version
// beside it and rename it over it (mv, or what Kubernetes does to a
// mounted ConfigMap): a reader then sees the old file or the new one.
package stableread

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ErrChanged is a file that changed while it was read.
var ErrChanged = errors.New("the file changed while it was read (a writer in place: write the new version beside it and rename it over it)")

// ErrTooLarge is a file larger than its reader's bound (ReadFile's
// limit, Open's): a path such as /dev/zero, or a file that grows while
// it is read, is an error, never a process that reads until memory runs
// out.
var ErrTooLarge = errors.New("file too large")

// tooLarge is ErrTooLarge for path and the bound limit.
func tooLarge(path string, limit int64) error {
	return fmt.Errorf("%s: %w: larger than %s, the bound for this file", path, ErrTooLarge, Size(limit))
}

// Size writes n bytes for a message: "16 MiB", "256 MiB", "1500 bytes".
func Size(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// ReadFile reads the file at path whole, as os.ReadFile does, and
// returns its contents and its FileInfo as they were read. A file
// larger than limit bytes is ErrTooLarge (refused before it is read when
// it is a regular file; a device or pipe is read through an
// io.LimitReader and refused once it has given more). A regular file
// that changed during the read (size or modification time, before and
// after, or a size other than the bytes read) is ErrChanged, wrapped
// with the path. A named pipe is opened without waiting for a writer
// (os.Open would wait, forever with none: a watcher or a load hung): one
// with no writer reads as empty, one with a writer as what it writes.
func ReadFile(path string, limit int64) ([]byte, fs.FileInfo, error) {
	return ReadFileThen(path, limit, nil)
}

// ReadFileThen is ReadFile calling then, when not nil, once the bytes are
// read and before the file is looked at again: tests change the file
// there, as a writer resuming at the worst moment would.
func ReadFileThen(path string, limit int64, then func()) ([]byte, fs.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|openNoWait, 0) // a named pipe: not waiting for a writer
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	before, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	size := before.Size()
	if size > limit {
		return nil, nil, tooLarge(path, limit)
	}
	buf := make([]byte, 0, max(size, 0)+512)
	data, err := readAll(io.LimitReader(f, limit+1), buf)
	if err != nil {
		return nil, nil, err
	}
	if int64(len(data)) > limit {
		return nil, nil, tooLarge(path, limit) // a device, or a file that grew
	}
	if then != nil {
		then()
	}
	if !before.Mode().IsRegular() {
		return data, before, nil // a pipe or device has no size to compare
	}
	after, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if after.Size() != size || !after.ModTime().Equal(before.ModTime()) || int64(len(data)) != size {
		return nil, nil, fmt.Errorf("%s: %w", path, ErrChanged)
	}
	return data, after, nil
}

// readAll reads r to its end into buf.
func readAll(r io.Reader, buf []byte) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// Open opens the file at path for a parser that reads it as a stream
// (a list file): a regular file larger than limit bytes is refused at
// once with ErrTooLarge, and reading a device, a pipe or a file that
// grows fails with ErrTooLarge once it has given more than limit bytes.
// A named pipe is opened without waiting for a writer, as by ReadFile.
func Open(path string, limit int64) (io.ReadCloser, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|openNoWait, 0) // a named pipe: not waiting for a writer
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if fi.Size() > limit {
		f.Close()
		return nil, tooLarge(path, limit)
	}
	return &capped{f: f, lr: io.LimitedReader{R: f, N: limit + 1}, path: path, limit: limit}, nil
}

// capped is Open's reader.
type capped struct {
	f     *os.File
	lr    io.LimitedReader
	path  string
	limit int64
}

func (c *capped) Read(p []byte) (int, error) {
	n, err := c.lr.Read(p)
	if c.lr.N <= 0 {
		// limit+1 bytes have come: the last is past the bound.
		return max(n-1, 0), tooLarge(c.path, c.limit)
	}
	return n, err
}

func (c *capped) Close() error { return c.f.Close() }
