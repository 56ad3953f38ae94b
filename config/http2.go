package config

import "fmt"

// validateHTTP2 checks the listener's data path and the routes that need
// the net/http one.
func (c *Config) validateHTTP2(ps *problems) {
	l := c.Listen
	switch l.HTTP2 {
	case HTTP2On, HTTP2Off:
	default:
		ps.Add(c.at("listen.http2"), "listen.http2 %q: want on or off", l.HTTP2)
		return
	}
	if l.MaxConcurrentStreams < 1 || l.MaxConcurrentStreams > 1<<20 {
		ps.Add(c.at("listen.max_concurrent_streams"), "listen.max_concurrent_streams %d: want 1 to 1048576", l.MaxConcurrentStreams)
	}
	if l.MaxHeaderListSize < 1024 {
		ps.Add(c.at("listen.max_header_list_size"), "listen.max_header_list_size %d: want at least 1024", l.MaxHeaderListSize)
	}
	for i, r := range c.Routes {
		what := fmt.Sprintf("routes[%d]", i)
		switch r.Protocol {
		case ProtocolHTTP1, ProtocolHTTP2:
		default:
			ps.Add(c.at(what+".protocol"), "%s.protocol %q: want http1 or http2", what, r.Protocol)
			continue
		}
		switch {
		case r.GRPC && r.Protocol != ProtocolHTTP2:
			ps.Add(c.at(what+".protocol"), "%s.protocol %q: a gRPC route's upstream speaks http2", what, r.Protocol)
		case r.Upstream == "demo" && (r.GRPC || r.Protocol == ProtocolHTTP2):
			ps.Add(c.at(what+".upstream"), "%s.upstream demo speaks HTTP/1.1 only (not gRPC or protocol http2)", what)
		case l.HTTP2 == HTTP2Off:
			switch {
			case r.GRPC:
				ps.Add(c.at(what+".grpc"), "%s is a gRPC route: it needs listen.http2 on (the HTTP/1.1 data path cannot carry gRPC)", what)
			case r.Protocol == ProtocolHTTP2:
				ps.Add(c.at(what+".protocol"), "%s.protocol http2 needs listen.http2 on (the HTTP/1.1 data path speaks HTTP/1.1 upstream)", what)
			}
		}
	}
}
