package redistest

import (
	"crypto/tls"
	"strconv"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/testpki"
)

// PKI is the tests' certificate authority (internal/testpki), named
// here too so that the Redis tests' TLSOptions read as one package.
type PKI = testpki.PKI

// NewPKI makes a certificate authority valid from an hour ago for a day
// (testpki.New).
func NewPKI(t testing.TB) *PKI {
	t.Helper()
	return testpki.New(t)
}

// TLSOptions configure a TLS-only server (StartTLS).
type TLSOptions struct {
	// PKI signs the server's certificate and, when client certificates
	// are required, is the authority they must come from.
	PKI *PKI
	// CertFile and KeyFile, when set, are the server's certificate in
	// place of a valid one from PKI (an expired one, or another CA's).
	CertFile, KeyFile string
	// ClientCerts requires clients to present a certificate signed by
	// PKI (tls-auth-clients yes); otherwise none is asked for.
	ClientCerts bool
}

// StartTLS runs a redis-server that speaks only TLS (--port 0,
// --tls-port on a free port), and stops it at t.Cleanup. extra are more
// "--name value" arguments.
func StartTLS(t testing.TB, o TLSOptions, extra ...string) *Server {
	t.Helper()
	s := newServer(t, t.TempDir(), extra...)
	s.useTLS(t, o)
	if err := s.start(); err != nil {
		t.Fatalf("redistest: %v", err)
	}
	t.Cleanup(s.Kill)
	return s
}

// useTLS makes s, not started yet, listen with TLS only on its port, as
// o says.
func (s *Server) useTLS(t testing.TB, o TLSOptions) {
	t.Helper()
	s.args[0], s.args[1] = "--port", "0"
	cert, key := o.CertFile, o.KeyFile
	if cert == "" {
		cert, key = o.PKI.IssueValid(t, false)
	}
	auth := "no"
	if o.ClientCerts {
		auth = "yes"
	}
	s.args = append(s.args,
		"--tls-port", strconv.Itoa(s.Port),
		"--tls-cert-file", cert, "--tls-key-file", key,
		"--tls-ca-cert-file", o.PKI.CAFile,
		"--tls-auth-clients", auth)
	ccert, ckey := o.PKI.IssueValid(t, true)
	pair, err := tls.LoadX509KeyPair(ccert, ckey)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	// The readiness PING only asks whether the server is up: it trusts
	// any certificate, which may be the expired one a test wants.
	s.tls = &tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{pair}}
	s.cli = []string{"--tls", "--insecure", "--cert", ccert, "--key", ckey}
}
