//go:build unix

package geoip

import (
	"os"
	"syscall"
)

// inodeOf is the file's inode: a file renamed over the watched one is a
// new version even with the same size and modification time.
func inodeOf(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}
