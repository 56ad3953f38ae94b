package envoyrls

import (
	"crypto/sha256"
	"encoding/binary"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/tollgate-dev/tollgate/internal/stableread"
)

// ReadDir reads every configuration file under dir, as
// envoyproxy/ratelimit reads RUNTIME_ROOT/RUNTIME_SUBDIRECTORY/config: every
// regular file, in subdirectories too, whatever its extension, in lexical
// order of path. Files and directories whose name starts with '.' are
// skipped (editors' swap and temporary files), as with
// RUNTIME_IGNOREDOTFILES=true (ReadDirWith and Options.DotFiles read
// them, as envoyproxy/ratelimit's default does). A file that changed while it was read
// (written in place) is stableread.ErrChanged: replace files by rename.
func ReadDir(dir string) ([]Source, error) { return ReadDirWith(dir, Options{}) }

// maxSourceBytes bounds one configuration file of the directory, read
// whole: a larger one (or a device) is an error, not a process that
// reads until memory runs out.
const maxSourceBytes = 16 << 20

// ReadDirWith is ReadDir with the options o: with o.DotFiles, the files
// and directories whose name starts with '.' are read too.
func ReadDirWith(dir string, o Options) ([]Source, error) {
	var out []Source
	err := walkDir(dir, o, func(path string, d fs.DirEntry) error {
		if !d.Type().IsRegular() {
			// A symbolic link is read when it leads to a regular file.
			if d.Type()&fs.ModeSymlink == 0 {
				return nil
			}
			if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() {
				return nil
			}
		}
		data, _, err := stableread.ReadFile(path, maxSourceBytes)
		if err != nil {
			return err
		}
		out = append(out, Source{Name: path, Data: data})
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// LoadDir reads and builds the configuration in dir.
func LoadDir(dir string) (*Limits, error) { return LoadDirWith(dir, Options{}) }

// LoadDirWith is LoadDir with the options o.
func LoadDirWith(dir string, o Options) (*Limits, error) {
	srcs, err := ReadDirWith(dir, o)
	if err != nil {
		return nil, err
	}
	return BuildWith(srcs, o)
}

// walkDir calls fn for every entry under dir (dir itself included) in
// lexical order, but for the files and directories whose name starts
// with '.' that o does not read: what ReadDirWith reads and statDir
// watches.
func walkDir(dir string, o Options, fn func(path string, d fs.DirEntry) error) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !o.DotFiles && path != dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		return fn(path, d)
	})
}

// statDir is a digest of the names, sizes, modes and modification times
// of the files ReadDirWith reads in dir (symbolic links followed),
// without reading them: what a watcher compares between two looks.
func statDir(dir string, o Options) (digest, error) {
	h := sha256.New()
	err := walkDir(dir, o, func(path string, d fs.DirEntry) error {
		fi, err := os.Stat(path)
		if err != nil {
			return err
		}
		var b [24]byte
		binary.LittleEndian.PutUint64(b[0:], uint64(fi.Size()))
		binary.LittleEndian.PutUint64(b[8:], uint64(fi.ModTime().UnixNano()))
		binary.LittleEndian.PutUint64(b[16:], uint64(fi.Mode()))
		h.Write([]byte(path))
		h.Write([]byte{0})
		h.Write(b[:])
		return nil
	})
	var d digest
	h.Sum(d[:0])
	return d, err
}

// digest identifies a version of a directory's files.
type digest [sha256.Size]byte

func digestOf(srcs []Source) digest {
	h := sha256.New()
	for _, s := range srcs {
		h.Write([]byte(s.Name))
		h.Write([]byte{0})
		var n [8]byte
		l := len(s.Data)
		for i := range n {
			n[i] = byte(l >> (8 * i))
		}
		h.Write(n[:])
		h.Write(s.Data)
	}
	var d digest
	h.Sum(d[:0])
	return d
}
