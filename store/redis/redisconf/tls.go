package redisconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"time"

	"github.com/tollgate-dev/tollgate/internal/stableread"
)

// MaxTLSFileBytes bounds each TLS file (the CA bundle, the client
// certificate chain, its key): a system's whole bundle of authorities is
// under 1 MiB, and a path to /dev/zero, a named pipe or a huge file is
// refused at load, not read until memory runs out.
const MaxTLSFileBytes = 4 << 20

// TLSFiles names the files and settings of a TLS connection to Redis. The
// gateway's configuration (store.redis.tls) and tollgate envoy-rls's
// environment (REDIS_TLS_*) both load theirs with [TLSFiles.Load], so the
// two build the same *tls.Config from the same settings.
type TLSFiles struct {
	// CAFile is a PEM bundle of the certificate authorities that sign
	// the server's certificate. Empty means the system's roots.
	CAFile string
	// CertFile and KeyFile are the client's certificate chain and private
	// key (PEM), for a server that requires client certificates (mutual
	// TLS); both or neither.
	CertFile, KeyFile string
	// ServerName is the name the server's certificate must hold. Empty
	// means the host of the address dialled.
	ServerName string
	// MinVersion is the least TLS version: "1.2" (the default) or "1.3".
	MinVersion string
	// SkipHostnameVerification verifies the server's chain against the
	// CAs but not the name in it (envoyproxy/ratelimit's
	// REDIS_TLS_SKIP_HOSTNAME_VERIFICATION), for servers reached by an
	// address their certificate does not name.
	SkipHostnameVerification bool
}

// ParseTLSVersion reads "1.2" or "1.3" (empty is "1.2").
func ParseTLSVersion(s string) (uint16, error) {
	switch s {
	case "", "1.2":
		return tls.VersionTLS12, nil
	case "1.3":
		return tls.VersionTLS13, nil
	}
	return 0, fmt.Errorf("TLS version %q: want 1.2 or 1.3", s)
}

// Load reads the files and returns the client's *tls.Config. It refuses a
// file that cannot be read or holds no certificate, a client certificate
// without its key (or the other way round) or whose key does not match,
// and a client certificate outside its validity period at now (the server
// would refuse it, with a vaguer message). Errors name the files, never
// their contents.
func (f TLSFiles) Load(now time.Time) (*tls.Config, error) {
	v, err := ParseTLSVersion(f.MinVersion)
	if err != nil {
		return nil, err
	}
	c := &tls.Config{MinVersion: v, ServerName: f.ServerName}
	if f.CAFile != "" {
		pem, err := stableread.ReadRegular(f.CAFile, MaxTLSFileBytes)
		if err != nil {
			return nil, fmt.Errorf("CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CA file %s holds no PEM certificate", f.CAFile)
		}
		c.RootCAs = pool
	}
	switch {
	case f.CertFile != "" && f.KeyFile != "":
		certPEM, err := stableread.ReadRegular(f.CertFile, MaxTLSFileBytes)
		if err != nil {
			return nil, fmt.Errorf("client certificate: %w", err)
		}
		keyPEM, err := stableread.ReadRegular(f.KeyFile, MaxTLSFileBytes)
		if err != nil {
			return nil, fmt.Errorf("client key: %w", err)
		}
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("client certificate %s and key %s: %w", f.CertFile, f.KeyFile, err)
		}
		leaf := pair.Leaf
		if leaf == nil {
			if leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
				return nil, fmt.Errorf("client certificate %s: %w", f.CertFile, err)
			}
		}
		if now.After(leaf.NotAfter) {
			return nil, fmt.Errorf("client certificate %s expired at %s", f.CertFile, leaf.NotAfter.UTC().Format(time.RFC3339))
		}
		if now.Before(leaf.NotBefore) {
			return nil, fmt.Errorf("client certificate %s is not valid before %s", f.CertFile, leaf.NotBefore.UTC().Format(time.RFC3339))
		}
		c.Certificates = []tls.Certificate{pair}
	case f.CertFile != "" || f.KeyFile != "":
		return nil, errors.New("a client certificate needs both its cert and key files")
	}
	if f.SkipHostnameVerification {
		skipHostname(c)
	}
	return c, nil
}

// skipHostname makes c verify the server's chain against its roots but
// not the name the chain is for.
func skipHostname(c *tls.Config) {
	roots := c.RootCAs
	c.InsecureSkipVerify = true // the chain is verified below, without the name
	c.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("tls: the server sent no certificate")
		}
		opts := x509.VerifyOptions{Roots: roots, Intermediates: x509.NewCertPool()}
		for _, ic := range cs.PeerCertificates[1:] {
			opts.Intermediates.AddCert(ic)
		}
		_, err := cs.PeerCertificates[0].Verify(opts)
		return err
	}
}
