package redistest

import (
	"context"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Cluster is a Redis Cluster of three masters and no replicas, each its own
// redis-server process on loopback.
type Cluster struct {
	// Nodes are the three masters, in creation order.
	Nodes []*Server
}

// Addrs returns the masters' addresses.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.Addr
	}
	return out
}

// StartCluster starts three redis-server --cluster-enabled yes processes on
// free ports (each with its bus port, port+10000, free too), joins them
// with redis-cli --cluster create, waits for cluster_state:ok on every
// node, and stops them at t.Cleanup.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	return startCluster(t, nil)
}

// StartClusterTLS is StartCluster with every node speaking only TLS, to
// its clients and on the cluster bus, as o says.
func StartClusterTLS(t testing.TB, o TLSOptions) *Cluster {
	t.Helper()
	return startCluster(t, &o)
}

func startCluster(t testing.TB, o *TLSOptions) *Cluster {
	t.Helper()
	c := &Cluster{}
	for range 3 {
		port := freeClusterPort(t)
		dir := t.TempDir()
		s := newServer(t, dir)
		s.Port, s.Addr = port, "127.0.0.1:"+strconv.Itoa(port)
		s.args[1] = strconv.Itoa(port)
		s.args = append(s.args,
			"--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "1000",
		)
		if o != nil {
			s.useTLS(t, *o)
			s.args = append(s.args, "--tls-cluster", "yes", "--tls-replication", "yes")
		}
		if err := s.start(); err != nil {
			t.Fatalf("redistest: cluster node: %v", err)
		}
		t.Cleanup(s.Kill)
		c.Nodes = append(c.Nodes, s)
	}
	args := append(append([]string{}, c.Nodes[0].cli...), "--cluster", "create")
	args = append(args, c.Addrs()...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "redis-cli", args...).CombinedOutput(); err != nil {
		t.Fatalf("redistest: redis-cli --cluster create: %v: %s", err, out)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, n := range c.Nodes {
		for !strings.Contains(n.CLI(t, "cluster", "info"), "cluster_state:ok") {
			if time.Now().After(deadline) {
				t.Fatalf("redistest: cluster not ok on %s", n.Addr)
			}
			time.Sleep(20 * time.Millisecond) // polling a real process, not waiting for virtual time
		}
	}
	return c
}

// freeClusterPort returns a free port p whose bus port p+10000 is free too.
func freeClusterPort(t testing.TB) int {
	t.Helper()
	for range 100 {
		p := FreePort(t)
		if p+10000 > 65535 {
			continue
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p+10000))
		if err != nil {
			continue
		}
		l.Close()
		return p
	}
	t.Fatalf("redistest: no free port pair for a cluster node")
	return 0
}

// NodeID returns the cluster node id of s.
func (s *Server) NodeID(t testing.TB) string {
	t.Helper()
	return s.CLI(t, "cluster", "myid")
}

// MoveSlot migrates slot from src to dst with every key in it (CLUSTER
// SETSLOT IMPORTING/MIGRATING, MIGRATE, SETSLOT NODE on all nodes): the
// clients of src then get MOVED redirects for the slot.
func (c *Cluster) MoveSlot(t testing.TB, slot int, src, dst *Server) {
	t.Helper()
	sl := strconv.Itoa(slot)
	srcID, dstID := src.NodeID(t), dst.NodeID(t)
	dst.CLI(t, "cluster", "setslot", sl, "importing", srcID)
	src.CLI(t, "cluster", "setslot", sl, "migrating", dstID)
	for {
		keys := src.CLI(t, "cluster", "getkeysinslot", sl, "100")
		if keys == "" {
			break
		}
		args := []string{"migrate", "127.0.0.1", strconv.Itoa(dst.Port), "", "0", "5000", "keys"}
		args = append(args, strings.Fields(keys)...)
		src.CLI(t, args...)
	}
	for _, n := range c.Nodes {
		n.CLI(t, "cluster", "setslot", sl, "node", dstID)
	}
}

// Owner returns the node serving slot.
func (c *Cluster) Owner(t testing.TB, slot int) *Server {
	t.Helper()
	out := c.Nodes[0].CLI(t, "cluster", "slots")
	// redis-cli prints each range as: start, end, ip, port, id, ... one per line.
	lines := strings.Fields(out)
	for i := 0; i+3 < len(lines); i++ {
		lo, err1 := strconv.Atoi(lines[i])
		hi, err2 := strconv.Atoi(lines[i+1])
		if err1 != nil || err2 != nil || lines[i+2] != "127.0.0.1" {
			continue
		}
		if slot >= lo && slot <= hi {
			port, _ := strconv.Atoi(lines[i+3])
			for _, n := range c.Nodes {
				if n.Port == port {
					return n
				}
			}
		}
	}
	t.Fatalf("redistest: no owner for slot %d in %q", slot, out)
	return nil
}
