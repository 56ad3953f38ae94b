//go:build !unix

package fastlimit

import "net"

// peerClosed cannot peek at a socket on this platform: the peer is
// reported present, and a delayed request is served after its delay.
func peerClosed(net.Conn) bool { return false }
