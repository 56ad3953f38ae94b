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

// ReadFile reads the file at path whole, as os.ReadFile does, and
// returns its contents and its FileInfo as they were read. A regular
// file that changed during the read (size or modification time, before
// and after, or a size other than the bytes read) is ErrChanged, wrapped
// with the path.
func ReadFile(path string) ([]byte, fs.FileInfo, error) { return ReadFileThen(path, nil) }

// ReadFileThen is ReadFile calling then, when not nil, once the bytes are
// read and before the file is looked at again: tests change the file
// there, as a writer resuming at the worst moment would.
func ReadFileThen(path string, then func()) ([]byte, fs.FileInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	before, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	size := before.Size()
	buf := make([]byte, 0, max(size, 0)+512)
	data, err := readAll(f, buf)
	if err != nil {
		return nil, nil, err
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
