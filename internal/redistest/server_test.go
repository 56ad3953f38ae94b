package redistest

import (
	"errors"
	"net"
	"os/exec"
	"syscall"
	"testing"
)

// TestKilledServerKeepsItsPort: while a server is killed its port
// refuses connections, as a crashed server's does, and no other socket
// can take it, so Restart finds it free. Left free, a listener another
// test opened on port 0 (or an outgoing connection's local port, from the
// same range) could take it, and the restart failed: address in use.
func TestKilledServerKeepsItsPort(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("no redis-server")
	}
	s := Start(t)
	s.Kill()
	if c, err := net.Dial("tcp", s.Addr); err == nil {
		c.Close()
		t.Fatal("a killed server's port accepted a connection")
	} else if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dialing a killed server: %v, want connection refused", err)
	}
	if l, err := net.Listen("tcp", s.Addr); err == nil {
		l.Close()
		t.Fatalf("another socket took the killed server's port %d", s.Port)
	}
	s.Restart(t)
	if out := s.CLI(t, "ping"); out != "PONG" {
		t.Fatalf("after Restart: %q", out)
	}
	s.Kill()
	s.release()
	l, err := net.Listen("tcp", s.Addr)
	if err != nil {
		t.Fatalf("released, the port is still held: %v", err)
	}
	l.Close()
}
