// Package redisconf is the Redis store's configuration (store.redis): its
// settings, their defaults and their checks, the reading of its
// credentials and TLS files, and the TLS settings tollgate envoy-rls's
// environment shares (TLSFiles). It is apart from package store/redis so
// that a configuration file can be parsed without rueidis: package config
// embeds Config, and package storeopen turns it into store/redis's
// run-time Config (addresses, credentials, TLS). It imports no driver (a
// test keeps it so).
//
// The steps are explicit and in this order: Defaults fills the zero
// fields, Read reads the password and the TLS files into the Config's
// unexported part (the loading step; a reload reads them again), and
// Validate, which changes nothing, reports every problem as a
// *fielderr.Error at its key's path.
package redisconf

import (
	"crypto/sha256"
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/failmode"
	"github.com/tollgate-dev/tollgate/internal/fielderr"
	"github.com/tollgate-dev/tollgate/internal/stableread"
)

// MaxPasswordFileBytes bounds password_file: a password is a line, and
// a path to something else (/dev/zero, a named pipe, a log file) is
// refused at load, not read until memory runs out.
const MaxPasswordFileBytes = 4 << 10

// DefaultTimeout is Timeout's default, and store/redis's
// (redis.Config.Timeout): 50ms bounds a round trip to Redis.
const DefaultTimeout = 50 * time.Millisecond

// Config is the shared store on Redis (store.redis).
type Config struct {
	// URL is redis://[user@]host:port[/db], or rediss:// for TLS (see
	// tls). A password may be written in it (user:password@, masked
	// wherever the config is shown), but a file checked into git should
	// take it from password_file or password_env instead. A query or
	// fragment is refused: nothing reads one (the database is /db).
	URL string `yaml:"url"`
	// User is the ACL user to authenticate as (AUTH user password),
	// when the URL names none. Not a secret: shown by /config.
	User string `yaml:"username"`
	// PasswordFile is a file holding the password (trailing newlines
	// dropped), such as a mounted Kubernetes or Docker secret; a relative
	// path is resolved against the configuration file's directory. It is
	// read at load and at every reload, and watched like the
	// configuration file: a rotated password is picked up without a
	// restart (the store reconnects with it; a password Redis refuses
	// fails the reload, and the old connection keeps serving). It must
	// be a regular file (or a link to one) of at most 4 KiB: a device,
	// a named pipe or a larger file is refused, and a reload that finds
	// one keeps the running configuration.
	PasswordFile string `yaml:"password_file"`
	// PasswordEnv names an environment variable holding the password,
	// read at load and at every reload. At most one of password_file,
	// password_env and a password in the URL. There is no ${VAR}
	// expansion elsewhere in the file: these two keys are the way in.
	PasswordEnv string `yaml:"password_env"`
	// TLS configures TLS to Redis. TLS is on when the URL is rediss://
	// or this section is given (an empty one, tls: {}, trusts the
	// system's authorities); a redis:// URL with this section is refused
	// as a contradiction. It applies to every connection: the server,
	// each Cluster node, the Sentinels and the master they name. Its
	// files are read at load and at every reload, and watched like the
	// configuration file: a renewed certificate is picked up without a
	// restart. A certificate Redis does not trust, or one of Redis's
	// this side does not, stops `tollgate serve` at start with the
	// reason, and fails a reload (the old connection keeps serving); at
	// run time (a server's certificate changed under a running gateway)
	// decisions follow each rule's failure mode until it is mended.
	TLS *TLS `yaml:"tls"`
	// Cluster lists more host:port seeds of a Redis Cluster besides URL's
	// host (the client discovers the rest).
	Cluster []string `yaml:"cluster"`
	// Sentinel, when set, names a master watched by Redis Sentinel: the
	// URL's host:port is then the first Sentinel (the URL still gives the
	// scheme, rediss:// for TLS, the master's credentials and the
	// database; Sentinels are asked without AUTH). The store asks the
	// Sentinels for the master, connects to it, and follows a failover
	// without a restart; decisions during the switch answer by each
	// rule's failure mode (on_error). Not with cluster.
	Sentinel *Sentinel `yaml:"sentinel"`
	// Prefix is prepended to every key. Default "tollgate:".
	Prefix string `yaml:"prefix"`
	// Timeout bounds one Redis round trip. Default 50ms.
	Timeout time.Duration `yaml:"timeout"`
	// OnError is the old place of the failure mode.
	//
	// Deprecated: the failure mode is the top-level on_error (open,
	// closed or local), for every rule on whatever store; a strict or
	// gossip rule may set its own. A value here is refused at its line,
	// naming the on_error to write.
	OnError string `yaml:"on_error"`

	secrets secrets // what Read read
}

// TLS is how tollgate speaks TLS to Redis (store.redis.tls; see
// Config.TLS for when it is on).
type TLS struct {
	// CA is a PEM file of the authorities that sign Redis's certificate
	// (only these are trusted); empty means the system's. A relative path
	// is resolved against the configuration file's directory, as are
	// cert and key. Each of the three must be a regular file (or a link
	// to one) of at most 4 MiB.
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

// Sentinel names a master watched by Redis Sentinel
// (store.redis.sentinel; see Config.Sentinel).
type Sentinel struct {
	// Master is the master set's name (sentinel monitor NAME ...).
	// Required.
	Master string `yaml:"master"`
	// Addrs are more Sentinels, host:port, besides the URL's.
	Addrs []string `yaml:"addrs"`
}

// secrets is what Read resolved of a Redis section: the credentials
// and TLS settings, which are never shown (not even by config's Masked:
// they are unexported).
type secrets struct {
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
func (r *Config) Username() string {
	if r.secrets.resolved {
		return r.secrets.username
	}
	if u, err := url.Parse(r.URL); err == nil && u.User != nil && r.User == "" {
		return u.User.Username()
	}
	return r.User
}

// Password returns the password as Read read it: from password_file,
// password_env or the URL. A Config built in code, not read, has only
// its URL's.
func (r *Config) Password() string {
	if r.secrets.resolved {
		return r.secrets.password
	}
	if u, err := url.Parse(r.URL); err == nil && u.User != nil {
		p, _ := u.User.Password()
		return p
	}
	return ""
}

// TLSConfig returns the TLS settings Read built from the URL's scheme and
// the tls section, or nil for plain TCP.
func (r *Config) TLSConfig() *tls.Config {
	if r.secrets.tls == nil {
		return nil
	}
	return r.secrets.tls.Clone()
}

// CredentialsSum identifies the credentials and the TLS files' contents
// Read read: two reads with the same sum connect alike.
func (r *Config) CredentialsSum() [sha256.Size]byte { return r.secrets.sum }

// Describe is one line saying how the store reaches Redis (tollgate check),
// naming where the password comes from but never the password.
func (r *Config) Describe() string {
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

// Defaults fills r's zero fields with their documented defaults.
func (r *Config) Defaults() {
	if r.Timeout == 0 {
		r.Timeout = DefaultTimeout
	}
}

// Files returns the files r reads besides the configuration file
// (password_file, the TLS files), each through resolve (relative to the
// configuration file's directory): the gateway watches them.
func (r *Config) Files(resolve func(string) string) []string {
	var out []string
	if r.PasswordFile != "" {
		out = append(out, resolve(r.PasswordFile))
	}
	if t := r.TLS; t != nil {
		for _, f := range []string{t.CA, t.Cert, t.Key} {
			if f != "" {
				out = append(out, resolve(f))
			}
		}
	}
	return out
}

// Validate reports every problem with r, the section at path at
// ("store.redis"), each a *fielderr.Error naming its key, or nil. It
// changes nothing and reads no file (Read does); no message quotes a
// password.
func (r *Config) Validate(at string) error {
	var l fielderr.List
	r.checkURL(&l, at)
	for i, a := range r.Cluster {
		if _, port, err := net.SplitHostPort(a); err != nil || port == "" || !fielderr.ValidPort(port) {
			l.Add(at+".cluster", "%s.cluster[%d] %q: want host:port, the port from 1 to 65535", at, i, a)
		}
	}
	if strings.ContainsAny(r.Prefix, "{}") {
		l.Add(at+".prefix", "%s.prefix %q must not contain { or }", at, r.Prefix)
	}
	if r.OnError != "" {
		now := failmode.Words
		if m, ok := failmode.Old(r.OnError); ok {
			now = string(m)
		}
		l.Add(at+".on_error", "%s.on_error: the failure mode moved to the top level: write on_error: %s (for every rule; a strict rule may set its own)", at, now)
	}
	return l.Err()
}

// checkURL records what is wrong with r.URL, at its line, and with the
// connection settings it goes with.
func (r *Config) checkURL(l *fielderr.List, at string) {
	if r.URL == "" {
		l.Add(at, "%s.url is required", at)
		return
	}
	ua := at + ".url"
	if fielderr.HostPort(r.URL) {
		l.Add(ua, "%s %q: want a URL such as redis://%s", ua, r.URL, r.URL)
		return
	}
	u, err := url.Parse(r.URL)
	switch {
	case err != nil:
		l.Add(ua, "%s: %v (want redis://HOST:PORT, optionally with user:password@ and /DB)", ua, fielderr.RedactURLError(err))
		return
	case u.Scheme != "redis" && u.Scheme != "rediss":
		l.Add(ua, "%s: scheme must be redis (or rediss for TLS), got %q", ua, u.Scheme)
		return
	case u.Port() == "":
		l.Add(ua, "%s: give the port, e.g. redis://localhost:6379", ua)
	case !fielderr.ValidPort(u.Port()):
		l.Add(ua, "%s: port %q is not a number from 1 to 65535", ua, u.Port())
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		// Nothing reads a query (rediss://h:6379?db=2 would use database
		// 0), and it is not quoted: it may hold a password.
		l.Add(ua, "%s: a query or fragment is not read: give the database as /DB, TLS as rediss:// and %s.tls, and the rest as %s settings", ua, at, at)
	}
	if db := strings.TrimPrefix(u.Path, "/"); db != "" {
		if n, err := strconv.Atoi(db); err != nil || n < 0 {
			l.Add(ua, "%s: database %q is not a number", ua, db)
		}
	}
	r.checkConn(l, at, u)
}

// checkConn checks the connection settings of r (credentials, TLS,
// Sentinel) against its URL u.
func (r *Config) checkConn(l *fielderr.List, at string, u *url.URL) {
	urlUser, urlHasPass := "", false
	if u.User != nil {
		urlUser = u.User.Username()
		_, urlHasPass = u.User.Password()
	}
	if r.User != "" && urlUser != "" {
		l.Add(at+".username", "%s.username: the URL names a user too: give it once", at)
	}
	sources := 0
	for _, set := range []bool{urlHasPass, r.PasswordFile != "", r.PasswordEnv != ""} {
		if set {
			sources++
		}
	}
	if sources > 1 {
		path := at + ".password_env"
		if r.PasswordFile != "" {
			path = at + ".password_file"
		}
		l.Add(path, "%s: give the password one way: password_file, password_env or the URL", at)
	}
	if r.TLS != nil && u.Scheme == "redis" {
		l.Add(at+".tls", "%s.tls is set but the URL is redis:// (plain TCP): write rediss://", at)
	}
	if t := r.TLS; t != nil || u.Scheme == "rediss" {
		if t == nil {
			t = &TLS{}
		}
		if _, err := ParseTLSVersion(t.MinVersion); err != nil {
			l.Add(at+".tls.min_version", "%s.tls.min_version %q: want \"1.2\" or \"1.3\"", at, t.MinVersion)
		}
	}
	if s := r.Sentinel; s != nil {
		if s.Master == "" {
			l.Add(at+".sentinel", "%s.sentinel.master is required (the name in sentinel monitor NAME ...)", at)
		}
		if len(r.Cluster) > 0 {
			l.Add(at+".sentinel", "%s: choose one of cluster or sentinel, not both", at)
		}
		for i, a := range s.Addrs {
			if _, port, err := net.SplitHostPort(a); err != nil || port == "" || !fielderr.ValidPort(port) {
				l.Add(at+".sentinel.addrs", "%s.sentinel.addrs[%d] %q: want host:port, the port from 1 to 65535", at, i, a)
			}
		}
	}
}

// Read is the loading step, between Defaults and Validate: it reads the
// password (password_file, password_env or the URL's) and the TLS files
// (resolve gives their paths) into r's unexported part, for Username,
// Password, TLSConfig and CredentialsSum. What cannot be read is a
// *fielderr.Error under at ("store.redis"); a URL Validate refuses reads
// nothing. The errors name files, never their contents.
func (r *Config) Read(at string, resolve func(string) string) error {
	u, err := url.Parse(r.URL)
	if r.URL == "" || fielderr.HostPort(r.URL) || err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") {
		return nil
	}
	var l fielderr.List
	sec := secrets{resolved: true}
	h := sha256.New()
	fmt.Fprintf(h, "%q %q %q\n", r.User, r.PasswordFile, r.PasswordEnv)
	urlUser, urlPass := "", ""
	if u.User != nil {
		urlUser = u.User.Username()
		urlPass, _ = u.User.Password()
	}
	sec.username = urlUser
	if r.User != "" {
		sec.username = r.User
	}
	switch {
	case r.PasswordFile != "":
		b, err := stableread.ReadRegular(resolve(r.PasswordFile), MaxPasswordFileBytes)
		switch {
		case err != nil:
			// The error names the file, never its contents.
			l.Add(at+".password_file", "%s.password_file: %v", at, err)
		case strings.TrimRight(string(b), "\r\n") == "":
			l.Add(at+".password_file", "%s.password_file %s is empty", at, r.PasswordFile)
		default:
			sec.password = strings.TrimRight(string(b), "\r\n")
		}
	case r.PasswordEnv != "":
		v, ok := os.LookupEnv(r.PasswordEnv)
		if !ok || v == "" {
			l.Add(at+".password_env", "%s.password_env: the environment variable %s is not set", at, r.PasswordEnv)
		}
		sec.password = v
	default:
		sec.password = urlPass
	}
	fmt.Fprintf(h, "%q %q\n", sec.username, sec.password)
	if t := r.TLS; t != nil || u.Scheme == "rediss" {
		if t == nil {
			t = &TLS{}
		}
		files := TLSFiles{
			CAFile: resolve(t.CA), CertFile: resolve(t.Cert), KeyFile: resolve(t.Key),
			ServerName: t.ServerName, MinVersion: t.MinVersion,
		}
		fmt.Fprintf(h, "tls %q %q\n", t.ServerName, t.MinVersion)
		for _, f := range []string{files.CAFile, files.CertFile, files.KeyFile} {
			if f != "" {
				b, _ := stableread.ReadRegular(f, MaxTLSFileBytes) // Load reports what cannot be read
				h.Write(b)
			}
		}
		if _, err := ParseTLSVersion(t.MinVersion); err == nil {
			if tc, err := files.Load(time.Now()); err != nil {
				l.Add(at+".tls", "%s.tls: %v", at, err)
			} else {
				sec.tls = tc
			}
		}
	}
	h.Sum(sec.sum[:0])
	r.secrets = sec
	return l.Err()
}
