package stableread

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrNotRegular is a small file (a password, a key, a certificate) that
// is not a regular file: a device such as /dev/zero, a named pipe, a
// socket or a directory.
var ErrNotRegular = errors.New("not a regular file")

// ReadRegular reads the small file at path whole, as ReadFile does, for
// a file that must be a regular one: a password, a secret key, a TLS
// certificate or authority bundle. A path that is not a regular file
// once symbolic links are followed (a Kubernetes Secret's files are
// links to regular files) is ErrNotRegular, refused without being read:
// /dev/zero, /dev/stdin, a named pipe. A named pipe is opened without
// waiting for a writer (os.Open would wait, forever with none), so
// pointing the file at one fails at once instead of hanging the load.
// A file larger than limit is ErrTooLarge and one that changed while it
// was read is ErrChanged. Its errors name path, never the contents.
func ReadRegular(path string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|openNoWait, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	before, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !before.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w (%s)", path, ErrNotRegular, kind(before.Mode()))
	}
	size := before.Size()
	if size > limit {
		return nil, tooLarge(path, limit)
	}
	data, err := readAll(io.LimitReader(f, limit+1), make([]byte, 0, size+512))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, tooLarge(path, limit) // it grew while it was read
	}
	after, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if after.Size() != size || !after.ModTime().Equal(before.ModTime()) || int64(len(data)) != size {
		return nil, fmt.Errorf("%s: %w", path, ErrChanged)
	}
	return data, nil
}

// kind names a file mode that is not a regular file's, for a message.
func kind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a device"
	}
	return "mode " + m.String()
}
