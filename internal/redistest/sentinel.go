package redistest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// SentinelMaster is the master set name StartSentinel monitors.
const SentinelMaster = "tollgate-master"

// Sentinel is a primary and a replica watched by three redis-sentinel
// processes, each its own process on loopback.
type Sentinel struct {
	// Primary and Replica are the data servers as started: after a
	// failover the replica is the master (see Master).
	Primary, Replica *Server
	// Sentinels are the three redis-sentinel processes.
	Sentinels []*Server
}

// Addrs returns the Sentinels' addresses.
func (s *Sentinel) Addrs() []string {
	out := make([]string, len(s.Sentinels))
	for i, n := range s.Sentinels {
		out[i] = n.Addr
	}
	return out
}

// StartSentinel starts a primary, a replica of it, and three Sentinels
// (quorum 2) that declare a master down after downAfter without answers
// and give a failover failoverTimeout. It returns once every Sentinel
// knows the replica and the two other Sentinels, so that a failover can
// start at once; everything is stopped at t.Cleanup.
func StartSentinel(t testing.TB, downAfter, failoverTimeout time.Duration) *Sentinel {
	t.Helper()
	return startSentinel(t, downAfter, failoverTimeout, nil)
}

// StartSentinelTLS is StartSentinel with every process speaking only TLS
// as o says: the Sentinels to their clients and to the servers, the
// replica to its primary.
func StartSentinelTLS(t testing.TB, downAfter, failoverTimeout time.Duration, o TLSOptions) *Sentinel {
	t.Helper()
	return startSentinel(t, downAfter, failoverTimeout, &o)
}

func startSentinel(t testing.TB, downAfter, failoverTimeout time.Duration, o *TLSOptions) *Sentinel {
	t.Helper()
	if _, err := exec.LookPath("redis-sentinel"); err != nil {
		t.Fatalf("redistest: redis-sentinel not found (scripts/test.sh installs it): %v", err)
	}
	st := &Sentinel{}
	if o != nil {
		st.Primary = StartTLS(t, *o, "--tls-replication", "yes")
		st.Replica = StartTLS(t, *o, "--tls-replication", "yes", "--replicaof", "127.0.0.1", strconv.Itoa(st.Primary.Port))
	} else {
		st.Primary = Start(t)
		st.Replica = Start(t, "--replicaof", "127.0.0.1", strconv.Itoa(st.Primary.Port))
	}
	for range 3 {
		dir := t.TempDir()
		port := FreePort(t)
		listen := fmt.Sprintf("port %d\n", port)
		var tlsConf *Server
		if o != nil {
			// The Sentinel's TLS settings are a server's: take them
			// from a server configured alike, never started.
			tlsConf = newServer(t, dir)
			tlsConf.useTLS(t, *o)
			listen = fmt.Sprintf("port 0\ntls-port %d\ntls-replication yes\n", port)
			for i := 0; i+1 < len(tlsConf.args); i++ {
				switch a := tlsConf.args[i]; a {
				case "--tls-cert-file", "--tls-key-file", "--tls-ca-cert-file", "--tls-auth-clients":
					listen += strings.TrimPrefix(a, "--") + " " + tlsConf.args[i+1] + "\n"
				}
			}
		}
		conf := fmt.Sprintf(listen+"bind 127.0.0.1\ndir %s\nsentinel resolve-hostnames no\n"+
			"sentinel monitor %s 127.0.0.1 %d 2\n"+
			"sentinel down-after-milliseconds %s %d\n"+
			"sentinel failover-timeout %s %d\n"+
			"sentinel parallel-syncs %s 1\n",
			dir, SentinelMaster, st.Primary.Port,
			SentinelMaster, downAfter.Milliseconds(),
			SentinelMaster, failoverTimeout.Milliseconds(),
			SentinelMaster)
		path := filepath.Join(dir, "sentinel.conf")
		if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
			t.Fatalf("redistest: %v", err)
		}
		s := &Server{Addr: "127.0.0.1:" + strconv.Itoa(port), Port: port, Dir: dir, bin: "redis-sentinel",
			args: []string{path, "--loglevel", "warning"}}
		if tlsConf != nil {
			s.tls, s.cli = tlsConf.tls, tlsConf.cli
		}
		if err := s.start(); err != nil {
			t.Fatalf("redistest: sentinel: %v", err)
		}
		t.Cleanup(s.Kill)
		st.Sentinels = append(st.Sentinels, s)
	}
	deadline := time.Now().Add(15 * time.Second)
	for _, s := range st.Sentinels {
		for {
			info := s.CLI(t, "sentinel", "master", SentinelMaster)
			if field(info, "num-slaves") == "1" && field(info, "num-other-sentinels") == "2" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("redistest: sentinel %s did not discover the replica and its peers: %s", s.Addr, info)
			}
			time.Sleep(50 * time.Millisecond) // polling real processes
		}
	}
	return st
}

// field returns the value after the line name in redis-cli's listing of
// a flat reply (one item per line: name, value, name, value...).
func field(out, name string) string {
	lines := strings.Split(out, "\n")
	for i := 0; i+1 < len(lines); i += 2 {
		if strings.TrimSpace(lines[i]) == name {
			return strings.TrimSpace(lines[i+1])
		}
	}
	return ""
}

// WaitMaster waits up to 10s until every live Sentinel names addr as the
// master (a Sentinel that did not lead the failover learns of it from the
// others' hello messages, every two seconds), and fails the test if one
// does not.
func (s *Sentinel) WaitMaster(t testing.TB, addr string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for _, n := range s.Sentinels {
		for {
			out := n.CLI(t, "sentinel", "get-master-addr-by-name", SentinelMaster)
			if f := strings.Fields(out); len(f) == 2 && f[0]+":"+f[1] == addr {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("redistest: sentinel %s names %q as master, want %s", n.Addr, out, addr)
			}
			time.Sleep(50 * time.Millisecond) // polling real processes
		}
	}
}
