package fastlimit

import "net"

// clientGone reports whether the peer of c has closed its side of the
// connection (or reset it): a peek at the socket, which reads end of
// stream, without taking a byte of what the client sent (a pipelined
// next request stays for fasthttp to read). Over TLS it peeks at the TCP
// connection under it. A connection it cannot peek at (not a socket, a
// test's) is reported present.
func clientGone(c net.Conn) bool {
	for {
		u, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			break
		}
		c = u.NetConn()
	}
	return peerClosed(c)
}
