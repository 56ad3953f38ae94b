package testpki

import (
	"crypto/tls"
	"crypto/x509"
	"testing"
	"time"
)

// A server certificate verifies against the authority's pool for
// 127.0.0.1 and localhost; an expired one, or one checked against
// another authority, does not.
func TestIssuedCertificatesVerify(t *testing.T) {
	cert, key, pool := Server(t)
	verify := func(certFile, keyFile string, pool *x509.CertPool, name string, at time.Time) error {
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		leaf, err := x509.ParseCertificate(pair.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		_, err = leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: name, CurrentTime: at, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
		return err
	}
	for _, name := range []string{"127.0.0.1", "localhost"} {
		if err := verify(cert, key, pool, name, time.Now()); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if verify(cert, key, New(t).Pool(), "localhost", time.Now()) == nil {
		t.Error("verified against another authority")
	}
	p := New(t)
	old, oldKey := p.Issue(t, false, time.Now().Add(-48*time.Hour), time.Now().Add(-24*time.Hour))
	if verify(old, oldKey, p.Pool(), "localhost", time.Now()) == nil {
		t.Error("an expired certificate verified")
	}
}
