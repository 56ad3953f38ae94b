package redistest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// PKI is a certificate authority made by a test (crypto/x509, ECDSA
// P-256), whose certificates are PEM files in Dir.
type PKI struct {
	// Dir holds the PEM files.
	Dir string
	// CAFile is the authority's certificate.
	CAFile string

	ca  *x509.Certificate
	key *ecdsa.PrivateKey
	n   int
}

// NewPKI makes a certificate authority valid from an hour ago for a day.
func NewPKI(t testing.TB) *PKI {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "tollgate test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatalf("redistest: CA: %v", err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("redistest: CA: %v", err)
	}
	p := &PKI{Dir: t.TempDir(), ca: ca, key: key}
	p.CAFile = p.write(t, "ca.pem", "CERTIFICATE", der)
	return p
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("redistest: key: %v", err)
	}
	return key
}

func (p *PKI) write(t testing.TB, name, typ string, der []byte) string {
	t.Helper()
	path := filepath.Join(p.Dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatalf("redistest: %v", err)
	}
	return path
}

// Issue signs a certificate for 127.0.0.1 and localhost, for a server or
// (client true) a client, valid from notBefore to notAfter, and returns
// its certificate and key files.
func (p *PKI) Issue(t testing.TB, client bool, notBefore, notAfter time.Time) (certFile, keyFile string) {
	t.Helper()
	p.n++
	key := newKey(t)
	// A server's certificate is a client's too: cluster nodes and
	// replicas present it to each other.
	usage := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	if client {
		usage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(int64(p.n + 1)),
		Subject:      pkix.Name{CommonName: "localhost"},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  usage,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.key)
	if err != nil {
		t.Fatalf("redistest: issue: %v", err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatalf("redistest: issue: %v", err)
	}
	base := strconv.Itoa(p.n)
	return p.write(t, base+".pem", "CERTIFICATE", der), p.write(t, base+"-key.pem", "EC PRIVATE KEY", kder)
}

// IssueValid signs a certificate valid from an hour ago for a day.
func (p *PKI) IssueValid(t testing.TB, client bool) (certFile, keyFile string) {
	t.Helper()
	return p.Issue(t, client, time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour))
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
