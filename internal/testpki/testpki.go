// Package testpki is the tests' one certificate maker: a certificate
// authority made by a test (crypto/x509, ECDSA P-256) that issues server
// and client certificates for 127.0.0.1 and localhost as PEM files. The
// gateway's TLS and HTTP/2 tests, cmd/tollgate's TLS end-to-end tests and
// internal/redistest's TLS-only Redis servers all use it.
package testpki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
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

// PKI is a certificate authority made by a test, whose certificates are
// PEM files in Dir.
type PKI struct {
	// Dir holds the PEM files.
	Dir string
	// CAFile is the authority's certificate.
	CAFile string

	ca  *x509.Certificate
	key *ecdsa.PrivateKey
	n   int
}

// New makes a certificate authority valid from an hour ago for a day.
func New(t testing.TB) *PKI {
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
		t.Fatalf("testpki: CA: %v", err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("testpki: CA: %v", err)
	}
	p := &PKI{Dir: t.TempDir(), ca: ca, key: key}
	p.CAFile = p.write(t, "ca.pem", "CERTIFICATE", der)
	return p
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("testpki: key: %v", err)
	}
	return key
}

func (p *PKI) write(t testing.TB, name, typ string, der []byte) string {
	t.Helper()
	path := filepath.Join(p.Dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatalf("testpki: %v", err)
	}
	return path
}

// Pool is a certificate pool trusting the authority alone, for a client
// of a server whose certificate p issued.
func (p *PKI) Pool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(p.ca)
	return pool
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
		t.Fatalf("testpki: issue: %v", err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatalf("testpki: issue: %v", err)
	}
	base := strconv.Itoa(p.n)
	return p.write(t, base+".pem", "CERTIFICATE", der), p.write(t, base+"-key.pem", "EC PRIVATE KEY", kder)
}

// IssueValid signs a certificate valid from an hour ago for a day.
func (p *PKI) IssueValid(t testing.TB, client bool) (certFile, keyFile string) {
	t.Helper()
	return p.Issue(t, client, time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour))
}

// Server issues a server certificate from a new authority: the files a
// TLS listener is given, and the pool a client trusts it with.
func Server(t testing.TB) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	p := New(t)
	certFile, keyFile = p.IssueValid(t, false)
	return certFile, keyFile, p.Pool()
}
