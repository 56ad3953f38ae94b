//go:build unix

package fastlimit

import (
	"net"
	"syscall"
)

// peerClosed peeks at c's socket without blocking: a read of end of
// stream, or a reset, means the peer is gone; data or nothing to read
// yet means it is there.
func peerClosed(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	gone := false
	err = raw.Read(func(fd uintptr) bool {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case err == nil:
			gone = n == 0
		case err == syscall.ECONNRESET || err == syscall.EPIPE:
			gone = true
		}
		return true // never wait for the socket to be readable
	})
	return gone || err != nil
}
