package gateway

import (
	"bufio"
	"crypto/tls"
	"io"
	"net"
	"sync"

	"github.com/valyala/fasthttp"
)

// isUpgrade reports a request asking to switch protocols (WebSocket).
func isUpgrade(h *fasthttp.RequestHeader) bool {
	return h.ConnectionUpgrade() && len(h.Peek("Upgrade")) > 0
}

// websocket passes an upgrade request through: it dials the upstream,
// forwards the request with its Upgrade and Connection fields, then
// hijacks the client connection and copies bytes both ways until either
// side closes. The upstream's answer (101 or a refusal) reaches the client
// unchanged.
func (g *Gateway) websocket(ctx *fasthttp.RequestCtx, s *snapshot, rt *route) {
	var up net.Conn
	var err error
	d := &net.Dialer{Timeout: rt.dialTimeout}
	if rt.tls {
		host, _, _ := net.SplitHostPort(rt.addr)
		up, err = tls.DialWithDialer(d, "tcp", rt.addr, &tls.Config{ServerName: host, NextProtos: []string{"http/1.1"}})
	} else {
		up, err = d.Dial("tcp", rt.addr)
	}
	if err != nil {
		g.upstreamError(ctx, rt, err)
		return
	}
	req := &ctx.Request
	var scratch [128]byte
	setForwarded(ctx, s, scratch[:0])
	if rt.basePath != "" {
		uri := req.URI()
		uri.SetPathBytes(append([]byte(rt.basePath), uri.PathOriginal()...))
	}
	setUpstream(req, rt)
	bw := bufio.NewWriter(up)
	if err := req.Write(bw); err == nil {
		err = bw.Flush()
	}
	if err != nil {
		up.Close()
		g.upstreamError(ctx, rt, err)
		return
	}
	rt.upStatus[0].Inc() // 1xx: a switch is under way
	ctx.HijackSetNoResponse(true)
	ctx.Hijack(func(c net.Conn) {
		if !g.tunnels.add(c, up) {
			up.Close()
			return
		}
		defer g.tunnels.remove(c, up)
		tunnel(c, up)
	})
}

// tunnel copies both ways until one side ends, then closes both.
func tunnel(a, b net.Conn) {
	done := make(chan struct{})
	go func() {
		io.Copy(b, a)
		b.Close()
		close(done)
	}()
	io.Copy(a, b)
	a.Close()
	b.Close()
	<-done
}

// tunnels tracks the open WebSocket connections, so that Close can end
// them (fasthttp's Shutdown does not know hijacked connections).
type tunnels struct {
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
}

func (t *tunnels) add(cs ...net.Conn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	if t.conns == nil {
		t.conns = map[net.Conn]struct{}{}
	}
	for _, c := range cs {
		t.conns[c] = struct{}{}
	}
	return true
}

func (t *tunnels) remove(cs ...net.Conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range cs {
		delete(t.conns, c)
	}
}

func (t *tunnels) closeAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	for c := range t.conns {
		c.Close()
	}
}
