package config

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/accesslog"
	"github.com/tollgate-dev/tollgate/internal/fielderr"
	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/rules"
)

// The least values of the durations that a tiny value makes pathological
// (see each field's documentation): a timer that fires nonstop, or a
// timeout no request can meet.
const (
	minReloadInterval = 10 * time.Millisecond
	minSyncInterval   = 10 * time.Millisecond
	minTimeout        = time.Millisecond
)

// checkMin records a problem when d is positive and below least. Zero
// means the default (or no limit) and negatives are refused by the decoder.
func checkMin(ps *problems, p Pos, what string, d, least time.Duration) {
	if d > 0 && d < least {
		ps.Add(p, "%s %v is below the least value of %v", what, d, least)
	}
}

// validate records every impossible value in c, which has its defaults.
func (c *Config) validate(ps *problems) {
	checkAddr(ps, c.at("listen.addr"), "listen.addr", c.Listen.Addr)
	if t := c.Listen.TLS; t != nil {
		c.validateTLS(ps, t)
	}
	if c.Listen.MaxConns < 0 {
		ps.Add(c.at("listen.max_conns"), "listen.max_conns %d must not be negative", c.Listen.MaxConns)
	}
	if c.Listen.MaxRequestBody < 0 {
		ps.Add(c.at("listen.max_request_body"), "listen.max_request_body %d must not be negative", c.Listen.MaxRequestBody)
	}
	if c.Admin.Addr != "off" {
		checkAddr(ps, c.at("admin.addr"), "admin.addr", c.Admin.Addr)
		if samePort(c.Admin.Addr, c.Listen.Addr) {
			ps.Add(c.at("admin.addr"), "admin.addr %q must not share the traffic listener's port (%q)", c.Admin.Addr, c.Listen.Addr)
		}
	}
	checkMin(ps, c.at("listen.read_timeout"), "listen.read_timeout", c.Listen.ReadTimeout, minTimeout)
	checkMin(ps, c.at("listen.write_timeout"), "listen.write_timeout", c.Listen.WriteTimeout, minTimeout)
	checkMin(ps, c.at("listen.send_timeout"), "listen.send_timeout", c.Listen.SendTimeout, minTimeout)
	checkMin(ps, c.at("upstream.dial_timeout"), "upstream.dial_timeout", c.Upstream.DialTimeout, minTimeout)
	checkMin(ps, c.at("upstream.response_timeout"), "upstream.response_timeout", c.Upstream.ResponseTimeout, minTimeout)
	// The watcher polls every interval whether or not watch is on (a
	// reload may turn it on), so a tiny interval spins a core either way.
	checkMin(ps, c.at("reload.interval"), "reload.interval", c.Reload.Interval, minReloadInterval)
	checkMin(ps, c.at("reload.settle"), "reload.settle", c.Reload.Settle, minReloadInterval)
	if c.Upstream.MaxConns < 0 {
		ps.Add(c.at("upstream.max_conns"), "upstream.max_conns %d must not be negative", c.Upstream.MaxConns)
	}
	if c.Upstream.MaxConnsPerClient < 0 {
		ps.Add(c.at("upstream.max_conns_per_client"), "upstream.max_conns_per_client %d must not be negative", c.Upstream.MaxConnsPerClient)
	}
	c.validateRoutes(ps)
	c.validateHTTP2(ps)
	c.validateStore(ps)
	c.validateRules(ps)
	c.validateTiers(ps)
	c.validateAdaptive(ps)
	if g := c.GeoIP; g != nil {
		c.placeProblems(ps, g.Validate("geoip"))
	}
	c.validateAdaptiveConcurrency(ps)
	c.validateAccessLog(ps)
	c.validateDashboard(ps)
}

func checkAddr(ps *problems, p Pos, what, addr string) {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		ps.Add(p, "%s %q: want host:port such as :8080 or 127.0.0.1:9090", what, addr)
		return
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		ps.Add(p, "%s %q: port %q is not a number from 0 to 65535", what, addr, port)
	}
}

func samePort(a, b string) bool {
	ha, pa, err1 := net.SplitHostPort(a)
	hb, pb, err2 := net.SplitHostPort(b)
	if err1 != nil || err2 != nil || pa != pb || pa == "0" {
		return false
	}
	any := func(h string) bool { return h == "" || h == "0.0.0.0" || h == "::" }
	return ha == hb || any(ha) || any(hb)
}

func (c *Config) validateTLS(ps *problems, t *TLS) {
	ok := true
	for _, f := range []struct{ key, path string }{{"cert", t.Cert}, {"key", t.Key}} {
		if f.path == "" {
			ps.Add(c.at("listen.tls"), "listen.tls.%s is required", f.key)
			ok = false
			continue
		}
		if _, err := os.Stat(c.Resolve(f.path)); err != nil {
			ps.Add(c.at("listen.tls."+f.key), "listen.tls.%s: %v", f.key, err)
			ok = false
		}
	}
	if ok {
		if _, err := tls.LoadX509KeyPair(c.Resolve(t.Cert), c.Resolve(t.Key)); err != nil {
			ps.Add(c.at("listen.tls"), "listen.tls: %v", err)
		}
	}
}

func (c *Config) validateRoutes(ps *problems) {
	seen := map[string]bool{}
	for i, r := range c.Routes {
		what := fmt.Sprintf("routes[%d]", i)
		if !strings.HasPrefix(r.Path, "/") {
			ps.Add(c.at(what+".path"), "%s.path %q must start with /", what, r.Path)
		}
		if k := r.Host + " " + r.Path; seen[k] {
			ps.Add(c.at(what), "%s: another route already has host %q and path %q", what, r.Host, r.Path)
		} else {
			seen[k] = true
		}
		switch {
		case r.Upstream == "":
			ps.Add(c.at(what), "%s.upstream is required (an http:// URL, or demo)", what)
		case r.Upstream == "demo":
		default:
			u, err := url.Parse(r.Upstream)
			switch {
			case fielderr.HostPort(r.Upstream):
				ps.Add(c.at(what+".upstream"), "%s.upstream %q: want a URL such as http://%s (http://HOST:PORT, or https://)", what, r.Upstream, r.Upstream)
			case err != nil:
				ps.Add(c.at(what+".upstream"), "%s.upstream: %v (want http://HOST:PORT, or https://)", what, fielderr.RedactURLError(err))
			case u.User != nil:
				// Before any message that quotes the URL: it would
				// show the password.
				ps.Add(c.at(what+".upstream"), "%s.upstream: credentials in the URL are not supported (the gateway would not send them to the upstream)", what)
			case u.Scheme != "http" && u.Scheme != "https":
				ps.Add(c.at(what+".upstream"), "%s.upstream %q: scheme must be http or https (want http://HOST:PORT)", what, r.Upstream)
			case u.Host == "":
				ps.Add(c.at(what+".upstream"), "%s.upstream %q has no host (want http://HOST:PORT)", what, r.Upstream)
			case u.RawQuery != "" || u.Fragment != "":
				ps.Add(c.at(what+".upstream"), "%s.upstream %q must not have a query or fragment", what, r.Upstream)
			case !fielderr.ValidPort(u.Port()):
				ps.Add(c.at(what+".upstream"), "%s.upstream %q: port %q is not a number from 1 to 65535", what, r.Upstream, u.Port())
			}
		}
	}
}

func (c *Config) validateStore(ps *problems) {
	s := c.Store
	if s.Memory != nil && s.Redis != nil {
		ps.Add(c.at("store"), "store: choose one of memory or redis, not both")
	}
	if m := s.Memory; m != nil && m.MaxKeys < 0 {
		ps.Add(c.at("store.memory.max_keys"), "store.memory.max_keys %d must be positive", m.MaxKeys)
	}
	if g := s.Gossip; g != nil {
		c.placeProblems(ps, g.Validate("store.gossip"))
	}
	if r := s.Redis; r != nil {
		c.placeProblems(ps, r.Validate("store.redis"))
	}
}

// didYouMean returns " (did you mean X?)" for the word X of words within
// two edits of s, ignoring case, or "".
func didYouMean(s string, words ...string) string {
	if w := limit.Closest(s, words...); w != "" {
		return fmt.Sprintf(" (did you mean %q?)", w)
	}
	return ""
}

// validateRules reads the members files and runs the rule engine's own
// validation (on EngineConfig: c itself is not changed), and places each
// of their problems, a *rules.FieldError, at the line of its path.
func (c *Config) validateRules(ps *problems) {
	rc, err := c.EngineConfig()
	c.placeProblems(ps, err)
	c.placeProblems(ps, rc.Validate())
}

// placeProblems adds the problems err joins, each at its path: a
// *rules.FieldError (the rule engine's) or a *fielderr.Error (the
// sections their components validate: store.gossip, store.redis).
func (c *Config) placeProblems(ps *problems, err error) {
	if err == nil {
		return
	}
	var list []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		list = j.Unwrap()
	} else {
		list = []error{err}
	}
	for _, e := range list {
		p := c.at("")
		if fe := (*rules.FieldError)(nil); errors.As(e, &fe) {
			p = c.at(fe.Path)
		} else if fe := (*fielderr.Error)(nil); errors.As(e, &fe) {
			p = c.at(fe.Path)
		}
		ps.Add(p, "%s", e.Error())
	}
}

// at returns the position of the longest recorded prefix of path
// ("rules[2].policies[0].rate", then "rules[2].policies[0]", ...), or the
// file's. It is the one way validation places a problem: the decoder
// records every key's position by its path.
func (c *Config) at(path string) Pos {
	for path != "" {
		if p, ok := c.paths[path]; ok {
			return p
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			break
		}
		path = path[:i]
	}
	return Pos{File: c.File}
}

func (c *Config) validateAccessLog(ps *problems) {
	a := c.AccessLog
	if a.Path == "" {
		if a.Format != "" {
			ps.Add(c.at("access_log.format"), "access_log.format is set but access_log.path is not")
		}
		if a.Query != "" || len(a.Redact) > 0 {
			ps.Add(c.at("access_log"), "access_log.query and redact are set but access_log.path is not")
		}
		return
	}
	if a.Format != "json" && a.Format != "combined" {
		ps.Add(c.at("access_log.format"), "access_log.format %q: want json or combined%s", a.Format, didYouMean(a.Format, "json", "combined"))
	}
	if _, err := accesslog.NewQuery(a.Query, a.Redact); err != nil {
		switch a.Query {
		case "", "keep", "drop", "redact":
			ps.Add(c.at("access_log.redact"), "access_log.redact: %v", err)
		default:
			ps.Add(c.at("access_log.query"), "access_log.%v%s", err, didYouMean(a.Query, "keep", "drop", "redact"))
		}
	}
	c.checkLogDir(ps, "access_log.path", a.Path)
}

// checkLogDir records a problem when a log file's directory is missing;
// "-" is a standard stream.
func (c *Config) checkLogDir(ps *problems, what, path string) {
	if path == "-" {
		return
	}
	dir := filepath.Dir(c.Resolve(path))
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		ps.Add(c.at(what), "%s %q: directory %s does not exist", what, path, dir)
	}
}
