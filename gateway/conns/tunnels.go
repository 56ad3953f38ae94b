package conns

import (
	"net"
	"sync"
)

// Tunnels tracks the open WebSocket connections, so that Close can end
// them (fasthttp's Shutdown does not know hijacked connections).
type Tunnels struct {
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	// open counts, per upstream host:port, the tunnels open or being
	// opened (reserve and release).
	open map[string]int
}

// Reserve takes one of max tunnel places to addr (max 0: no limit),
// reporting false when all are taken. release gives it back.
func (t *Tunnels) Reserve(addr string, max int) bool {
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

func (t *Tunnels) Release(addr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.open[addr]--; t.open[addr] <= 0 {
		delete(t.open, addr)
	}
}

func (t *Tunnels) Add(cs ...net.Conn) bool {
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

func (t *Tunnels) Remove(cs ...net.Conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range cs {
		delete(t.conns, c)
	}
}

func (t *Tunnels) CloseAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	for c := range t.conns {
		c.Close()
	}
}
