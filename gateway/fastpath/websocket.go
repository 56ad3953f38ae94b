package fastpath

import (
	"bufio"
	"crypto/tls"
	"io"
	"net"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/tollgate-dev/tollgate/gateway/exchange"
	"github.com/tollgate-dev/tollgate/gateway/observe"
)

// isUpgrade reports a request asking to switch to WebSocket. Other
// protocols (h2c) are proxied as ordinary requests, without their Upgrade.
func isUpgrade(h *fasthttp.RequestHeader) bool {
	if !h.ConnectionUpgrade() {
		return false
	}
	ws := false
	for _, v := range h.PeekAll("Upgrade") {
		ForEachToken(v, func(p []byte) { ws = ws || exchange.EqualFold(p, "websocket") })
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
func (g *Server) websocket(ctx *fasthttp.RequestCtx, s *exchange.Snapshot, rt *exchange.Route) {
	// Tunnels hold their upstream connection for as long as they last:
	// upstream.max_conns caps them per upstream host too (counted apart
	// from the pooled connections of ordinary requests).
	if !g.Tunnels.Reserve(rt.Addr, s.Cfg.Upstream.MaxConns) {
		rt.UpStatus[observe.IdxError].Inc()
		problem(ctx, fasthttp.StatusServiceUnavailable, "Service Unavailable", "the upstream connection limit is reached")
		return
	}
	tunnelled := false
	defer func() {
		if !tunnelled {
			g.Tunnels.Release(rt.Addr)
		}
	}()
	up, err := dialUpstream(rt)
	if err != nil {
		g.upstreamError(ctx, rt, err)
		return
	}
	// The response timeout bounds the exchange up to the upstream's answer.
	if t := s.Cfg.Upstream.ResponseTimeout; t > 0 {
		up.SetDeadline(time.Now().Add(t))
	}
	br, err := askToSwitch(ctx, s, rt, up)
	if err != nil {
		up.Close()
		g.upstreamError(ctx, rt, err)
		return
	}
	status := ctx.Response.StatusCode()
	rt.UpStatus[observe.StatusIndex(status)].Inc()
	if status != fasthttp.StatusSwitchingProtocols {
		up.Close()
		removeResponseHop(&ctx.Response.Header)
		return
	}
	up.SetDeadline(time.Time{})
	// From here the hijack handler owns up and the reservation.
	tunnelled = true
	g.handOver(ctx, rt, up, br)
}

// dialUpstream opens a connection of its own to rt's upstream, over TLS
// when the upstream is https (offering HTTP/1.1 only: the upgrade is an
// HTTP/1.1 exchange).
func dialUpstream(rt *exchange.Route) (net.Conn, error) {
	d := &net.Dialer{Timeout: rt.DialTimeout}
	if rt.TLS {
		host, _, _ := net.SplitHostPort(rt.Addr)
		return tls.DialWithDialer(d, "tcp", rt.Addr, &tls.Config{ServerName: host, NextProtos: []string{"http/1.1"}})
	}
	return d.Dial("tcp", rt.Addr)
}

// askToSwitch forwards the upgrade request to up, as the proxy path
// forwards a request, and reads the upstream's final answer into ctx's
// response: its head, and the body of a refusal to switch. It returns
// the reader of up, which may hold what followed a 101.
func askToSwitch(ctx *fasthttp.RequestCtx, s *exchange.Snapshot, rt *exchange.Route, up net.Conn) (*bufio.Reader, error) {
	req := &ctx.Request
	var scratch [128]byte
	SetForwarded(ctx, s, scratch[:0])
	SetUpstreamPath(req, rt, scratch[:0])
	SetUpstream(req, rt)
	// As on the proxy path: the path goes as built, not normalized again.
	req.URI().DisablePathNormalizing = true
	bw := bufio.NewWriter(up)
	err := req.Write(bw)
	if err == nil {
		err = bw.Flush()
	}
	br := bufio.NewReaderSize(up, exchange.MaxResponseHead) // as the proxy path's
	resp := &ctx.Response
	if err == nil {
		err = readFinalHead(&resp.Header, br)
	}
	if status := resp.StatusCode(); err == nil && status != fasthttp.StatusSwitchingProtocols &&
		!req.Header.IsHead() && !noBody(status) {
		err = resp.ReadBody(br, maxRefusalBody)
	}
	return br, err
}

// handOver has fasthttp write the 101 (the access log sees its status),
// then take the client connection and tunnel it to up (read through br).
// The hijack handler owns up and rt's tunnel reservation; fasthttp runs
// it only if it could write the 101: when the client is gone by then, a
// watchdog closes up and releases the place instead.
func (g *Server) handOver(ctx *fasthttp.RequestCtx, rt *exchange.Route, up net.Conn, br *bufio.Reader) {
	var claimed atomic.Bool
	ctx.Hijack(func(c net.Conn) {
		if !claimed.CompareAndSwap(false, true) {
			c.Close()
			return
		}
		defer g.Tunnels.Release(rt.Addr)
		if !g.Tunnels.Add(c, up) {
			up.Close()
			return
		}
		defer g.Tunnels.Remove(c, up)
		tunnel(c, up, br)
	})
	time.AfterFunc(hijackGrace, func() {
		if claimed.CompareAndSwap(false, true) {
			up.Close()
			g.Tunnels.Release(rt.Addr)
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
