package conns

import (
	"crypto/tls"
	"net"
)

// AsYieldConn is the listener's own connection under c, or nil for a
// connection it did not wrap.
func AsYieldConn(c net.Conn) *YieldConn {
	if t, ok := c.(*tls.Conn); ok {
		c = t.NetConn()
	}
	y, _ := c.(*YieldConn)
	return y
}
