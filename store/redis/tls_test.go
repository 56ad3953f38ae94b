package redis

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/failmode"
	"github.com/tollgate-dev/tollgate/internal/redistest"
	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/store/redis/redisconf"
)

// generous is a policy Redis never refuses in these tests: a refusal is
// the failure mode's (failmode.Closed). Its keys live for seconds after a
// request (a token takes 3.6s to come back), long enough to be seen.
var generous = limit.TokenBucket{Rate: limit.Per(1000, time.Hour), Burst: 1000}

// openTLS opens a store on addr with f's TLS settings, failing closed.
func openTLS(t *testing.T, addr string, f redisconf.TLSFiles) *Store {
	t.Helper()
	tc, err := f.Load(time.Now())
	if err != nil {
		t.Fatalf("load TLS files: %v", err)
	}
	s, err := New(context.Background(), Config{
		Addrs: []string{addr}, TLS: tc, OnFailure: failmode.Closed,
		Timeout: 2 * time.Second, BreakerCooldown: 50 * time.Millisecond, // a timeout a loaded machine meets
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// decidedOnRedis applies one request and reports whether Redis decided it
// (the key is then on the server).
func decidedOnRedis(t *testing.T, s *Store, srv *redistest.Server, key string) bool {
	t.Helper()
	d, err := s.Apply(context.Background(), key, generous, 1)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	onServer := srv.CLI(t, "exists", "tollgate:{"+key+"}") == "1"
	if d.Allowed != onServer {
		t.Fatalf("allowed %v but key on server %v", d.Allowed, onServer)
	}
	return onServer
}

func TestTLSServerOnly(t *testing.T) {
	pki := redistest.NewPKI(t)
	srv := redistest.StartTLS(t, redistest.TLSOptions{PKI: pki})
	s := openTLS(t, srv.Addr, redisconf.TLSFiles{CAFile: pki.CAFile})
	if err := s.DialError(); err != nil {
		t.Fatalf("DialError: %v", err)
	}
	if !decidedOnRedis(t, s, srv, "tls-a") {
		t.Fatal("not decided on Redis over TLS")
	}
}

func TestTLSClientCertificates(t *testing.T) {
	pki := redistest.NewPKI(t)
	srv := redistest.StartTLS(t, redistest.TLSOptions{PKI: pki, ClientCerts: true})
	cert, key := pki.IssueValid(t, true)
	s := openTLS(t, srv.Addr, redisconf.TLSFiles{CAFile: pki.CAFile, CertFile: cert, KeyFile: key, MinVersion: "1.3"})
	if !decidedOnRedis(t, s, srv, "mtls-a") {
		t.Fatal("not decided on Redis with a client certificate")
	}

	// Without a certificate the server refuses the handshake: a
	// configuration error, and the failure mode meanwhile.
	bare := openTLS(t, srv.Addr, redisconf.TLSFiles{CAFile: pki.CAFile})
	err := bare.DialError()
	if !IsConfigError(err) {
		t.Fatalf("no client certificate: DialError %v, want a configuration error", err)
	}
	t.Logf("no client certificate: %v", err)
	if decidedOnRedis(t, bare, srv, "mtls-b") {
		t.Fatal("decided on Redis without a client certificate")
	}

	// A client certificate from another authority is refused too.
	other := redistest.NewPKI(t)
	ocert, okey := other.IssueValid(t, true)
	foreign := openTLS(t, srv.Addr, redisconf.TLSFiles{CAFile: pki.CAFile, CertFile: ocert, KeyFile: okey})
	if err := foreign.DialError(); !IsConfigError(err) {
		t.Fatalf("foreign client certificate: DialError %v, want a configuration error", err)
	}
}

func TestTLSWrongCAAndExpired(t *testing.T) {
	pki := redistest.NewPKI(t)
	srv := redistest.StartTLS(t, redistest.TLSOptions{PKI: pki})
	other := redistest.NewPKI(t)
	s := openTLS(t, srv.Addr, redisconf.TLSFiles{CAFile: other.CAFile})
	err := s.DialError()
	if !IsConfigError(err) || !strings.Contains(err.Error(), "certificate signed by unknown authority") {
		t.Fatalf("wrong CA: DialError %v", err)
	}
	if decidedOnRedis(t, s, srv, "wrong-ca") {
		t.Fatal("decided on Redis through an untrusted certificate")
	}
	if st := s.Stats(); st.FailClosed == 0 {
		t.Fatalf("wrong CA: no decision by the failure mode: %+v", st)
	}

	cert, key := pki.Issue(t, false, time.Now().Add(-48*time.Hour), time.Now().Add(-24*time.Hour))
	expired := redistest.StartTLS(t, redistest.TLSOptions{PKI: pki, CertFile: cert, KeyFile: key})
	e := openTLS(t, expired.Addr, redisconf.TLSFiles{CAFile: pki.CAFile})
	if err := e.DialError(); !IsConfigError(err) || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("expired server certificate: DialError %v", err)
	}

	// An expired client certificate is refused before any connection.
	ccert, ckey := pki.Issue(t, true, time.Now().Add(-48*time.Hour), time.Now().Add(-24*time.Hour))
	if _, err := (redisconf.TLSFiles{CAFile: pki.CAFile, CertFile: ccert, KeyFile: ckey}).Load(time.Now()); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("expired client certificate: Load error %v", err)
	}
}

// TestTLSCertificateChangesAtRunTime replaces the server's certificate
// with one of another authority while the store is connected: once the
// connection breaks, decisions follow the failure mode (never an error),
// and the store cannot reconnect until the certificate is trusted again.
func TestTLSCertificateChangesAtRunTime(t *testing.T) {
	pki := redistest.NewPKI(t)
	cert, key := pki.IssueValid(t, false)
	srv := redistest.StartTLS(t, redistest.TLSOptions{PKI: pki, CertFile: cert, KeyFile: key})
	s := openTLS(t, srv.Addr, redisconf.TLSFiles{CAFile: pki.CAFile})
	if !decidedOnRedis(t, s, srv, "rt-a") {
		t.Fatal("not decided on Redis")
	}
	good, _ := os.ReadFile(cert)
	goodKey, _ := os.ReadFile(key)
	other := redistest.NewPKI(t)
	ocert, okey := other.IssueValid(t, false)
	copyFile(t, ocert, cert)
	copyFile(t, okey, key)
	srv.Restart(t)
	deadline := time.Now().Add(5 * time.Second)
	refused := 0
	for refused < 20 {
		if time.Now().After(deadline) {
			t.Fatalf("decisions did not follow the failure mode after the certificate changed (refused %d)", refused)
		}
		d, err := s.Apply(context.Background(), "rt-b", generous, 1)
		if err != nil {
			t.Fatalf("Apply: %v", err)
		}
		if !d.Allowed {
			refused++
		}
		time.Sleep(5 * time.Millisecond)
	}
	if srv.CLI(t, "exists", "tollgate:{rt-b}") != "0" {
		t.Fatal("a decision reached a server whose certificate is not trusted")
	}
	// The trusted certificate back: decisions go back to Redis.
	os.WriteFile(cert, good, 0o600)
	os.WriteFile(key, goodKey, 0o600)
	srv.Restart(t)
	for !decidedOnRedis(t, s, srv, "rt-c") {
		if time.Now().After(deadline.Add(5 * time.Second)) {
			t.Fatal("not back on Redis with the trusted certificate")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// A Redis Cluster whose nodes speak only TLS: the client discovers the
// nodes and decides on the one owning each key, over TLS.
func TestTLSCluster(t *testing.T) {
	pki := redistest.NewPKI(t)
	c := redistest.StartClusterTLS(t, redistest.TLSOptions{PKI: pki})
	tc, err := (redisconf.TLSFiles{CAFile: pki.CAFile}).Load(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(context.Background(), Config{Addrs: c.Addrs()[:1], TLS: tc, OnFailure: failmode.Closed, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.DialError(); err != nil {
		t.Fatal(err)
	}
	if c := s.conn.Load(); c == nil || !c.cluster {
		t.Fatal("not in cluster mode")
	}
	for i := range 30 {
		key := "tls-cluster-" + string(rune('a'+i))
		d, err := s.Apply(context.Background(), key, generous, 1)
		if err != nil || !d.Allowed {
			t.Fatalf("%s: %v %+v: not decided on the cluster", key, err, d)
		}
	}
	total := 0
	for _, n := range c.Nodes {
		k := strings.TrimSpace(n.CLI(t, "dbsize"))
		if k != "0" {
			total++
		}
	}
	if total < 2 {
		t.Fatalf("keys on %d node(s), want them spread over the cluster", total)
	}
}
