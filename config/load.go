package config

import (
	_ "embed"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/config/internal/yamldecode"
	"github.com/tollgate-dev/tollgate/failmode"
	"github.com/tollgate-dev/tollgate/internal/stableread"
	"github.com/tollgate-dev/tollgate/rules"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// MaxFileBytes bounds the configuration file, read whole (Load, and the
// gateway's watcher): a path such as /dev/zero is an error, not a
// process that reads until memory runs out. MaxListFileBytes bounds the
// list files it names (tiers' members_file, except's clients_file and
// keys_file), read as streams, and the other files the watcher reads
// whole (the Redis secret and TLS files).
const (
	MaxFileBytes     = 16 << 20
	MaxListFileBytes = rules.MaxListFileBytes
)

// Load reads, decodes, defaults and validates the file at path. Every
// problem is reported at once: the error joins one [*Error] per problem,
// each with file:line:col (use [Problems] to list them). A file that is
// empty or holds no YAML document is an error, not a configuration of
// defaults, and so is one that changed while it was read
// (stableread.ErrChanged: a writer in place; replace it by rename), and
// so is one larger than MaxFileBytes (stableread.ErrTooLarge).
func Load(path string) (*Config, error) {
	data, _, err := stableread.ReadFile(path, MaxFileBytes)
	if err != nil {
		// stableread's own errors name the path, which Pos does.
		return nil, &Error{Pos: Pos{File: path}, Msg: strings.TrimPrefix(err.Error(), path+": ")}
	}
	return Parse(path, data)
}

// Parse decodes data as the contents of the file named name (used in
// messages and to resolve relative paths), fills defaults and validates.
func Parse(name string, data []byte) (*Config, error) {
	ps := &problems{}
	c := &Config{File: name}
	d := yamldecode.New(name, ps)
	d.Decode(data, c)
	c.paths = d.Paths()
	if d.Failed("") {
		// Nothing decoded (a syntax error, no document, aliases
		// expanding too far): there is nothing to validate.
		return nil, ps.Err()
	}
	// No routes: Defaults sends everything to the demo origin, which a
	// file's author rarely means.
	if len(c.Routes) == 0 && !d.Failed("routes") {
		at := Pos{File: name} // not written: no line to point at
		if p, ok := c.paths["routes"]; ok {
			at = p
		}
		c.warnings = append(c.warnings, &Error{Pos: at, Msg: noRoutes})
	}
	// What decoded is validated even when some values did not, so that
	// every problem is reported at once; the validation problems that
	// only repeat a decoding one ("required" for a value of the wrong
	// type) are dropped.
	c.Defaults()
	rs, vs := &problems{}, &problems{}
	c.read(rs)
	c.validate(vs)
	// Listed after validation's: on one line, what is malformed comes
	// before what could not be read.
	vs.Items = append(vs.Items, rs.Items...)
	for _, e := range vs.Items {
		if !d.Explains(e.Msg) {
			ps.Items = append(ps.Items, e)
		}
	}
	if err := ps.Err(); err != nil {
		return nil, err
	}
	c.warnings = append(c.warnings, c.geoWarnings()...)    // warn_geo.go
	c.warnings = append(c.warnings, c.exceptWarnings()...) // warn_except.go
	return c, nil
}

// noRoutes is the warning for a file without routes.
const noRoutes = "warning: no routes: every request goes to the built-in demo origin, not to your service " +
	"(add one, e.g. routes: [{path: /, upstream: \"http://HOST:PORT\"}], or say upstream: demo to mean it)"

// Warnings returns what Parse or Load found valid but probably not meant,
// each at its position and formatted like an error ("file: warning: ..."):
// today, a file without routes, whose every request goes to the built-in
// demo origin. `tollgate check` and `tollgate serve` print them. A Config
// built in code, or the embedded default (whose route to the demo origin
// is written out), has none.
func (c *Config) Warnings() []*Error { return c.warnings }

//go:embed default.yaml
var defaultYAML []byte

// DefaultYAML returns the text of the embedded default configuration.
func DefaultYAML() []byte { return defaultYAML }

// Default returns the embedded configuration `tollgate serve` runs with no
// file: traffic on :8080, admin on 127.0.0.1:9090, an in-memory store, the
// built-in demo origin and a per-IP token bucket.
func Default() *Config {
	c, err := Parse("(embedded default)", defaultYAML)
	if err != nil {
		// The embedded file is tested; this cannot happen in a build
		// whose tests pass.
		panic(fmt.Sprintf("config: embedded default is invalid: %v", err))
	}
	c.File = ""
	return c
}

// Defaults fills every zero field that has a documented default.
func (c *Config) Defaults() {
	if c.Listen.Addr == "" {
		c.Listen.Addr = ":8080"
	}
	if c.Listen.ReadTimeout == 0 {
		c.Listen.ReadTimeout = 30 * time.Second
	}
	if c.Listen.IdleTimeout == 0 {
		c.Listen.IdleTimeout = 90 * time.Second
	}
	if c.Listen.SendTimeout == 0 {
		c.Listen.SendTimeout = 60 * time.Second
	}
	if c.Admin.Addr == "" {
		c.Admin.Addr = "127.0.0.1:9090"
	}
	u := &c.Upstream
	if u.DialTimeout == 0 {
		u.DialTimeout = 5 * time.Second
	}
	if u.ResponseTimeout == 0 {
		u.ResponseTimeout = 60 * time.Second
	}
	if u.IdleConnTimeout == 0 {
		u.IdleConnTimeout = 90 * time.Second
	}
	if u.MaxConns == 0 {
		u.MaxConns = 1024
	}
	if u.MaxConnsPerClient == 0 {
		u.MaxConnsPerClient = max(u.MaxConns/8, 1)
	}
	if len(c.Routes) == 0 {
		c.Routes = []Route{{Path: "/", Upstream: "demo"}}
	}
	for i := range c.Routes {
		r := &c.Routes[i]
		if r.Path == "" {
			r.Path = "/"
		}
		if r.Protocol == "" {
			r.Protocol = ProtocolHTTP1
			if r.GRPC {
				r.Protocol = ProtocolHTTP2
			}
		}
	}
	if c.Listen.HTTP2 == "" {
		c.Listen.HTTP2 = HTTP2Off
		if c.Listen.TLS != nil {
			c.Listen.HTTP2 = HTTP2On
		}
	}
	if c.Listen.MaxConcurrentStreams == 0 {
		c.Listen.MaxConcurrentStreams = 128
	}
	if c.Listen.MaxHeaderListSize == 0 {
		c.Listen.MaxHeaderListSize = 16 << 10
	}
	if c.Store.Memory == nil && c.Store.Redis == nil {
		c.Store.Memory = &MemoryStore{}
	}
	if m := c.Store.Memory; m != nil && m.MaxKeys == 0 {
		m.MaxKeys = memory.DefaultMaxKeys
	}
	if r := c.Store.Redis; r != nil {
		r.Defaults()
	}
	if g := c.Store.Gossip; g != nil {
		g.Defaults()
	}
	c.OnError = failmode.Of(c.OnError)
	c.defaultsDashboard()
	if c.GeoIP != nil {
		c.GeoIP.Defaults()
	}
	if c.AccessLog.Path != "" && c.AccessLog.Format == "" {
		c.AccessLog.Format = "json"
	}
	if c.Reload.Watch == nil {
		t := true
		c.Reload.Watch = &t
	}
	if c.Reload.Interval == 0 {
		c.Reload.Interval = 2 * time.Second
	}
	if c.Reload.Settle == 0 {
		c.Reload.Settle = time.Second
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = 15 * time.Second
	}
}

// read is the loading step, between Defaults and validate (which changes
// nothing): it reads what the file names besides itself into c (the
// gossip secret key, Redis's password and TLS files), recording what
// cannot be read in ps.
func (c *Config) read(ps *problems) {
	if g := c.Store.Gossip; g != nil {
		c.placeProblems(ps, g.ReadKey("store.gossip", c.Resolve))
	}
	if r := c.Store.Redis; r != nil {
		c.placeProblems(ps, r.Read("store.redis", c.Resolve))
	}
	if g := c.GeoIP; g != nil && g.Validate("geoip") == nil {
		c.placeProblems(ps, g.Read("geoip", c.Resolve))
	}
}

// SecretFiles returns the files the store section reads besides the
// configuration file (store.redis's password_file and TLS files),
// resolved: the gateway watches them.
func (c *Config) SecretFiles() []string {
	if r := c.Store.Redis; r != nil {
		return r.Files(c.Resolve)
	}
	return nil
}

// Resolve returns path relative to the configuration file's directory, or
// path itself when absolute or when the config has no file.
func (c *Config) Resolve(path string) string {
	if path == "" || filepath.IsAbs(path) || c.File == "" || path == "-" {
		return path
	}
	return filepath.Join(filepath.Dir(c.File), path)
}
