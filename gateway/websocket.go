package gateway

import (
	"bufio"
	"crypto/tls"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// isUpgrade reports a request asking to switch to WebSocket. Other
// protocols (h2c) are proxied as ordinary requests, without their Upgrade.
func isUpgrade(h *fasthttp.RequestHeader) bool {
	if !h.ConnectionUpgrade() {
		return false
	}
	ws := false
	for _, v := range h.PeekAll("Upgrade") {
		forEachToken(v, func(p []byte) { ws = ws || equalFold(p, "websocket") })
	}
	return ws
}

// maxRefusalBody bounds the body of an upstream's refusal to switch,
// which the gateway reads whole before answering.
const maxRefusalBody = 1 << 20

// websocket passes an upgrade request through: it dials the upstream,
// forwards the request with its Upgrade and Connection fields and reads
// the answer. A 101 goes to the client, then the client connection is
// hijacked and bytes copied both ways until either side closes. Any other
// answer goes to the client as a normal response, and the connection
// stays with the gateway (and its limits).
func (g *Gateway) websocket(ctx *fasthttp.RequestCtx, s *snapshot, rt *route) {
	// Tunnels hold their upstream connection for as long as they last:
	// upstream.max_conns caps them per upstream host too (counted apart
	// from the pooled connections of ordinary requests).
	if !g.tunnels.reserve(rt.addr, s.cfg.Upstream.MaxConns) {
		rt.upStatus[idxError].Inc()
		problem(ctx, fasthttp.StatusServiceUnavailable, "Service Unavailable", "the upstream connection limit is reached")
		return
	}
	tunnelled := false
	defer func() {
		if !tunnelled {
			g.tunnels.release(rt.addr)
		}
	}()
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
	// The response timeout bounds the exchange up to the upstream's answer.
	if t := s.cfg.Upstream.ResponseTimeout; t > 0 {
		up.SetDeadline(time.Now().Add(t))
	}
	req := &ctx.Request
	var scratch [128]byte
	setForwarded(ctx, s, scratch[:0])
	setUpstreamPath(req, rt, scratch[:0])
	setUpstream(req, rt)
	// As on the proxy path: the path goes as built, not normalized again.
	req.URI().DisablePathNormalizing = true
	bw := bufio.NewWriter(up)
	if err = req.Write(bw); err == nil {
		err = bw.Flush()
	}
	br := bufio.NewReaderSize(up, maxResponseHead) // as the proxy path's
	resp := &ctx.Response
	if err == nil {
		err = readFinalHead(&resp.Header, br)
	}
	status := resp.StatusCode()
	if err == nil && status != fasthttp.StatusSwitchingProtocols &&
		!req.Header.IsHead() && !noBody(status) {
		err = resp.ReadBody(br, maxRefusalBody)
	}
	if err != nil {
		up.Close()
		g.upstreamError(ctx, rt, err)
		return
	}
	rt.upStatus[statusIndex(status)].Inc()
	if status != fasthttp.StatusSwitchingProtocols {
		up.Close()
		removeResponseHop(&resp.Header)
		return
	}
	up.SetDeadline(time.Time{})
	// fasthttp writes the 101 (the access log sees its status), then
	// hands over the connection.
	// From here the hijack handler owns up and the reservation. fasthttp
	// runs it only if it could write the 101: when the client is gone by
	// then, a watchdog closes up and releases the place instead.
	tunnelled = true
	var claimed atomic.Bool
	ctx.Hijack(func(c net.Conn) {
		if !claimed.CompareAndSwap(false, true) {
			c.Close()
			return
		}
		defer g.tunnels.release(rt.addr)
		if !g.tunnels.add(c, up) {
			up.Close()
			return
		}
		defer g.tunnels.remove(c, up)
		tunnel(c, up, br)
	})
	time.AfterFunc(hijackGrace, func() {
		if claimed.CompareAndSwap(false, true) {
			up.Close()
			g.tunnels.release(rt.addr)
		}
	})
}

// hijackGrace is how long a tunnel's upstream connection waits for
// fasthttp to hand over the client's after writing the 101.
const hijackGrace = 10 * time.Second

// readFinalHead reads a response head into h, skipping informational
// ones other than 101.
func readFinalHead(h *fasthttp.ResponseHeader, br *bufio.Reader) error {
	for {
		if err := h.Read(br); err != nil {
			return err
		}
		if c := h.StatusCode(); c >= 200 || c == fasthttp.StatusSwitchingProtocols {
			return nil
		}
	}
}

// noBody reports a status whose response has no body.
func noBody(status int) bool {
	return status < 200 || status == fasthttp.StatusNoContent || status == fasthttp.StatusNotModified
}

// tunnel copies both ways until one side ends, then closes both. br
// reads b, with what followed its 101 buffered.
func tunnel(a, b net.Conn, br *bufio.Reader) {
	done := make(chan struct{})
	go func() {
		io.Copy(b, a)
		b.Close()
		close(done)
	}()
	io.Copy(a, br)
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
	// open counts, per upstream host:port, the tunnels open or being
	// opened (reserve and release).
	open map[string]int
}

// reserve takes one of max tunnel places to addr (max 0: no limit),
// reporting false when all are taken. release gives it back.
func (t *tunnels) reserve(addr string, max int) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if max > 0 && t.open[addr] >= max {
		return false
	}
	if t.open == nil {
		t.open = map[string]int{}
	}
	t.open[addr]++
	return true
}

func (t *tunnels) release(addr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.open[addr]--; t.open[addr] <= 0 {
		delete(t.open, addr)
	}
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
