package config

import (
	"crypto/sha256"
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/store/redis"
)

// RedisTLS is how tollgate speaks TLS to Redis (store.redis.tls; see
// RedisStore.TLS for when it is on).
type RedisTLS struct {
	// CA is a PEM file of the authorities that sign Redis's certificate
	// (only these are trusted); empty means the system's. A relative path
	// is resolved against the configuration file's directory, as are
	// cert and key.
	CA string `yaml:"ca"`
	// Cert is the client certificate chain (PEM) for a Redis that
	// requires one (tls-auth-clients yes): mutual TLS. Both cert and key,
	// or neither. An expired certificate is refused at load.
	Cert string `yaml:"cert"`
	// Key is cert's private key (PEM).
	Key string `yaml:"key"`
	// ServerName is the name Redis's certificate must hold, when it is
	// not the URL's host (an address behind a load balancer, an IP).
	ServerName string `yaml:"server_name"`
	// MinVersion is the least TLS version: "1.2" (the default) or "1.3".
	MinVersion string `yaml:"min_version"`
}

// RedisSentinel names a master watched by Redis Sentinel
// (store.redis.sentinel; see RedisStore.Sentinel).
type RedisSentinel struct {
	// Master is the master set's name (sentinel monitor NAME ...).
	// Required.
	Master string `yaml:"master"`
	// Addrs are more Sentinels, host:port, besides the URL's.
	Addrs []string `yaml:"addrs"`
}

// redisSecrets is what Load resolved of a Redis section: the
// credentials and TLS settings, which are never shown (not even by
// Masked: they are unexported).
type redisSecrets struct {
	resolved bool
	username string
	password string
	tls      *tls.Config
	// sum identifies the credentials and the TLS files' contents, so that
	// a reload can tell whether they changed.
	sum [sha256.Size]byte
}

// Username returns the ACL user name: store.redis.username, or the URL's
// user. Empty means the default user.
func (r *RedisStore) Username() string {
	if r.secrets.resolved {
		return r.secrets.username
	}
	if u, err := url.Parse(r.URL); err == nil && u.User != nil && r.User == "" {
		return u.User.Username()
	}
	return r.User
}

// Password returns the password as Load read it: from password_file,
// password_env or the URL. A RedisStore built in code, not loaded, has
// only its URL's.
func (r *RedisStore) Password() string {
	if r.secrets.resolved {
		return r.secrets.password
	}
	if u, err := url.Parse(r.URL); err == nil && u.User != nil {
		p, _ := u.User.Password()
		return p
	}
	return ""
}

// TLSConfig returns the TLS settings Load built from the URL's scheme and
// the tls section, or nil for plain TCP.
func (r *RedisStore) TLSConfig() *tls.Config {
	if r.secrets.tls == nil {
		return nil
	}
	return r.secrets.tls.Clone()
}

// CredentialsSum identifies the credentials and the TLS files' contents
// Load read: two loads with the same sum connect alike.
func (r *RedisStore) CredentialsSum() [sha256.Size]byte { return r.secrets.sum }

// SecretFiles returns the files a Redis section reads besides the
// configuration file (password_file, the TLS files), resolved: the
// gateway watches them.
func (c *Config) SecretFiles() []string {
	r := c.Store.Redis
	if r == nil {
		return nil
	}
	var out []string
	if r.PasswordFile != "" {
		out = append(out, c.Resolve(r.PasswordFile))
	}
	if t := r.TLS; t != nil {
		for _, f := range []string{t.CA, t.Cert, t.Key} {
			if f != "" {
				out = append(out, c.Resolve(f))
			}
		}
	}
	return out
}

// Describe is one line saying how the store reaches Redis (tollgate check),
// naming where the password comes from but never the password.
func (r *RedisStore) Describe() string {
	var parts []string
	u, _ := url.Parse(r.URL)
	host := ""
	if u != nil {
		host = u.Host
	}
	switch {
	case r.Sentinel != nil:
		parts = append(parts, fmt.Sprintf("sentinel master %q via %d sentinel(s)", r.Sentinel.Master, 1+len(r.Sentinel.Addrs)))
	case len(r.Cluster) > 0:
		parts = append(parts, fmt.Sprintf("%s and %d more seed(s)", host, len(r.Cluster)))
	default:
		parts = append(parts, host)
	}
	if r.secrets.tls != nil {
		tlsDesc := "TLS"
		if r.TLS != nil && r.TLS.Cert != "" {
			tlsDesc += " with a client certificate"
		}
		parts = append(parts, tlsDesc)
	}
	if user := r.Username(); user != "" {
		parts = append(parts, "user "+user)
	}
	switch {
	case r.PasswordFile != "":
		parts = append(parts, "password from file "+r.PasswordFile)
	case r.PasswordEnv != "":
		parts = append(parts, "password from $"+r.PasswordEnv)
	case r.Password() != "":
		parts = append(parts, "password in the URL")
	}
	return strings.Join(parts, ", ")
}

// validateRedisConn checks and resolves the connection settings of r
// (scheme, credentials, TLS, Sentinel) at their lines, and keeps what it
// read in r's unexported fields.
func (c *Config) validateRedisConn(ps *problems, r *RedisStore, u *url.URL) {
	sec := redisSecrets{resolved: true}
	h := sha256.New()
	fmt.Fprintf(h, "%q %q %q\n", r.User, r.PasswordFile, r.PasswordEnv)

	urlUser, urlPass, urlHasPass := "", "", false
	if u != nil && u.User != nil {
		urlUser = u.User.Username()
		urlPass, urlHasPass = u.User.Password()
	}
	switch {
	case r.User != "" && urlUser != "":
		ps.add(c.at("store.redis.username"), "store.redis.username: the URL names a user too: give it once")
	case r.User != "":
		sec.username = r.User
	default:
		sec.username = urlUser
	}

	sources := 0
	for _, set := range []bool{urlHasPass, r.PasswordFile != "", r.PasswordEnv != ""} {
		if set {
			sources++
		}
	}
	if sources > 1 {
		at := c.at("store.redis.password_env")
		if r.PasswordFile != "" {
			at = c.at("store.redis.password_file")
		}
		ps.add(at, "store.redis: give the password one way: password_file, password_env or the URL")
	}
	switch {
	case r.PasswordFile != "":
		b, err := os.ReadFile(c.Resolve(r.PasswordFile))
		switch {
		case err != nil:
			// The error names the file, never its contents.
			ps.add(c.at("store.redis.password_file"), "store.redis.password_file: %v", err)
		case strings.TrimRight(string(b), "\r\n") == "":
			ps.add(c.at("store.redis.password_file"), "store.redis.password_file %s is empty", r.PasswordFile)
		default:
			sec.password = strings.TrimRight(string(b), "\r\n")
		}
	case r.PasswordEnv != "":
		v, ok := os.LookupEnv(r.PasswordEnv)
		if !ok || v == "" {
			ps.add(c.at("store.redis.password_env"), "store.redis.password_env: the environment variable %s is not set", r.PasswordEnv)
		}
		sec.password = v
	default:
		sec.password = urlPass
	}
	fmt.Fprintf(h, "%q %q\n", sec.username, sec.password)

	secure := u != nil && u.Scheme == "rediss"
	if r.TLS != nil && u != nil && u.Scheme == "redis" {
		ps.add(c.at("store.redis.tls"), "store.redis.tls is set but the URL is redis:// (plain TCP): write rediss://")
	}
	if secure || r.TLS != nil {
		t := r.TLS
		if t == nil {
			t = &RedisTLS{}
		}
		files := redis.TLSFiles{
			CAFile: c.Resolve(t.CA), CertFile: c.Resolve(t.Cert), KeyFile: c.Resolve(t.Key),
			ServerName: t.ServerName, MinVersion: t.MinVersion,
		}
		fmt.Fprintf(h, "tls %q %q\n", t.ServerName, t.MinVersion)
		for _, f := range []string{files.CAFile, files.CertFile, files.KeyFile} {
			if f != "" {
				b, _ := os.ReadFile(f)
				h.Write(b)
			}
		}
		if _, err := redis.ParseTLSVersion(t.MinVersion); err != nil {
			ps.add(c.at("store.redis.tls.min_version"), "store.redis.tls.min_version %q: want \"1.2\" or \"1.3\"", t.MinVersion)
		} else if tc, err := files.Load(time.Now()); err != nil {
			ps.add(c.at("store.redis.tls"), "store.redis.tls: %v", err)
		} else {
			sec.tls = tc
		}
	}

	if s := r.Sentinel; s != nil {
		if s.Master == "" {
			ps.add(c.at("store.redis.sentinel"), "store.redis.sentinel.master is required (the name in sentinel monitor NAME ...)")
		}
		if len(r.Cluster) > 0 {
			ps.add(c.at("store.redis.sentinel"), "store.redis: choose one of cluster or sentinel, not both")
		}
		for i, a := range s.Addrs {
			if _, port, err := net.SplitHostPort(a); err != nil || port == "" || !validPort(port) {
				ps.add(c.at("store.redis.sentinel.addrs"), "store.redis.sentinel.addrs[%d] %q: want host:port, the port from 1 to 65535", i, a)
			}
		}
	}
	h.Sum(sec.sum[:0])
	r.secrets = sec
}
