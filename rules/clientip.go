package rules

import (
	"errors"
	"fmt"
	"net/netip"
	"net/textproto"
	"strings"
)

// ipResolver finds the client address of a request.
type ipResolver struct {
	trusted Proxies
	header  string // canonical
	kind    headerKind
	v6bits  int
	v4bits  int
}

type headerKind uint8

const (
	kindXFF headerKind = iota
	kindForwarded
	kindRealIP
)

// DefaultIPv6Prefix is ClientIP.IPv6Prefix's default, and tollgate
// replay's: a /64 is one customer on most networks.
const DefaultIPv6Prefix = 64

func compileClientIP(c ClientIP, ps *problems) ipResolver {
	r := ipResolver{v6bits: DefaultIPv6Prefix, v4bits: 32}
	for i, s := range c.TrustedProxies {
		p, err := parseProxy(s)
		if err != nil {
			ps.add(fmt.Sprintf("client_ip.trusted_proxies[%d]", i), "%q is not a CIDR or address", s)
			continue
		}
		r.trusted = append(r.trusted, p)
	}
	switch h := textproto.CanonicalMIMEHeaderKey(strings.TrimSpace(c.Header)); h {
	case "", "X-Forwarded-For":
		r.header, r.kind = "X-Forwarded-For", kindXFF
	case "Forwarded":
		r.header, r.kind = h, kindForwarded
	case "X-Real-Ip":
		r.header, r.kind = h, kindRealIP
	default:
		ps.add("client_ip.header", "%q: want X-Forwarded-For, Forwarded or X-Real-IP", c.Header)
	}
	if c.IPv6Prefix != 0 {
		if c.IPv6Prefix < 1 || c.IPv6Prefix > 128 {
			ps.add("client_ip.ipv6_prefix", "%d: want 1 to 128", c.IPv6Prefix)
		}
		r.v6bits = c.IPv6Prefix
	}
	if c.IPv4Prefix != 0 {
		if c.IPv4Prefix < 1 || c.IPv4Prefix > 32 {
			ps.add("client_ip.ipv4_prefix", "%d: want 1 to 32", c.IPv4Prefix)
		}
		r.v4bits = c.IPv4Prefix
	}
	return r
}

func (r *ipResolver) isTrusted(a netip.Addr) bool { return r.trusted.Contains(a) }

// clientAddr returns the client's address (unmapped, without zone), or
// the zero Addr when unknown. Forwarding headers are read only when the
// peer is a trusted proxy.
func (r *ipResolver) clientAddr(req Request) netip.Addr {
	peer := req.RemoteAddr().Addr()
	if !peer.IsValid() {
		return netip.Addr{}
	}
	peer = peer.Unmap().WithZone("")
	if len(r.trusted) == 0 || !r.isTrusted(peer) {
		return peer
	}
	v, ok := req.Header(r.header)
	if !ok {
		return peer
	}
	if r.kind == kindRealIP {
		a, ok := parseHop(strings.TrimSpace(v))
		if !ok {
			return peer
		}
		return a
	}
	// Walk right to left: each hop was appended by the proxy to its
	// right; the first hop not trusted is the client. A malformed or
	// obfuscated hop ends the walk at the last trusted address seen.
	client := peer
	for v != "" {
		var elem string
		if i := strings.LastIndexByte(v, ','); i >= 0 {
			elem, v = v[i+1:], v[:i]
		} else {
			elem, v = v, ""
		}
		elem = strings.TrimSpace(elem)
		if elem == "" {
			continue // tolerate "a, , b" as RFC 9110's list syntax does
		}
		var a netip.Addr
		if r.kind == kindForwarded {
			a, ok = forwardedFor(elem)
		} else {
			a, ok = parseHop(elem)
		}
		if !ok {
			return client
		}
		client = a
		if !r.isTrusted(a) {
			return a
		}
	}
	return client
}

// parseHop parses an address as forwarding headers write it: "1.2.3.4",
// "1.2.3.4:567", "2001:db8::1", "[2001:db8::1]" or "[2001:db8::1]:567".
func parseHop(s string) (netip.Addr, bool) {
	if strings.HasPrefix(s, "[") {
		i := strings.IndexByte(s, ']')
		if i < 0 || i+1 < len(s) && s[i+1] != ':' {
			return netip.Addr{}, false
		}
		s = s[1:i]
	} else if i := strings.IndexByte(s, ':'); i >= 0 && strings.LastIndexByte(s, ':') == i {
		s = s[:i] // IPv4 with a port
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap().WithZone(""), true
}

// forwardedFor returns the for= address of one RFC 7239 forwarded-element
// ("for=192.0.2.60;proto=http;by=203.0.113.43", `for="[2001:db8::1]:80"`).
// "unknown" and obfuscated identifiers ("_hidden") are not addresses.
func forwardedFor(elem string) (netip.Addr, bool) {
	for elem != "" {
		var pair string
		if i := strings.IndexByte(elem, ';'); i >= 0 {
			pair, elem = elem[:i], elem[i+1:]
		} else {
			pair, elem = elem, ""
		}
		k, v, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "for") {
			continue
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
			v = v[1 : len(v)-1]
			if strings.IndexByte(v, '\\') >= 0 {
				return netip.Addr{}, false
			}
		}
		return parseHop(v)
	}
	return netip.Addr{}, false
}

// aggregate returns a's network at the configured prefix length.
func (r *ipResolver) aggregate(a netip.Addr) netip.Prefix {
	bits := r.v4bits
	if a.Is6() {
		bits = r.v6bits
	}
	p, _ := a.Prefix(bits)
	return p
}

// ClientNets finds a request's client as the engine does (the peer, or,
// from one of ClientIP.TrustedProxies, the address its forwarding header
// names) and gives the network the client is counted in (ipv4_prefix,
// ipv6_prefix): a gateway uses it to bound what one client holds.
type ClientNets struct{ r ipResolver }

// NewClientNets compiles c; its problems are the engine's.
func NewClientNets(c ClientIP) (*ClientNets, error) {
	var ps problems
	r := compileClientIP(c, &ps)
	if len(ps) > 0 {
		return nil, errors.Join(ps...)
	}
	return &ClientNets{r}, nil
}

// Of returns the network of req's client, or false when its address is
// unknown. It does not allocate.
func (n *ClientNets) Of(req Request) (netip.Prefix, bool) {
	a := n.r.clientAddr(req)
	if !a.IsValid() {
		return netip.Prefix{}, false
	}
	return n.r.aggregate(a), true
}
