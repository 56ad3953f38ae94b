package config

import "testing"

func TestHTTP2Defaults(t *testing.T) {
	c, err := Parse("c.yaml", []byte("routes:\n  - {path: /, upstream: \"http://h:1\"}\n  - {path: /g/, upstream: \"http://h:2\", grpc: true}\nlisten: {http2: on}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen.MaxConcurrentStreams != 128 || c.Listen.MaxHeaderListSize != 16<<10 {
		t.Errorf("HTTP/2 limits: %d streams, %d bytes", c.Listen.MaxConcurrentStreams, c.Listen.MaxHeaderListSize)
	}
	if c.Routes[0].Protocol != ProtocolHTTP1 || c.Routes[1].Protocol != ProtocolHTTP2 {
		t.Errorf("protocols: %q %q", c.Routes[0].Protocol, c.Routes[1].Protocol)
	}
	plain, err := Parse("c.yaml", []byte("routes: [{path: /, upstream: \"http://h:1\"}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if plain.Listen.HTTP2 != HTTP2Off {
		t.Errorf("a plain listener's default: %q, want off (fasthttp)", plain.Listen.HTTP2)
	}
}

func TestHTTP2Validation(t *testing.T) {
	src := `listen:
  http2: maybe
routes:
  - {path: /a, upstream: "http://h:1", protocol: http3}
`
	_, err := Parse("c.yaml", []byte(src))
	checkProblems(t, err, []want{{2, `listen.http2 "maybe": want on or off`}})

	src = `listen:
  max_header_list_size: 100
  max_concurrent_streams: -1
  http2: off
routes:
  - path: /a
    upstream: "http://h:1"
    protocol: http3
  - path: /b
    upstream: "http://h:1"
    grpc: true
  - path: /c
    upstream: "http://h:1"
    protocol: http2
  - path: /d
    upstream: "http://h:1"
    grpc: true
    protocol: http1
  - {path: /e, upstream: demo, grpc: true}
`
	_, err = Parse("c.yaml", []byte(src))
	checkProblems(t, err, []want{
		{2, "listen.max_header_list_size 100: want at least 1024"},
		{3, "listen.max_concurrent_streams -1: want 1 to 1048576"},
		{8, `routes[0].protocol "http3": want http1 or http2`},
		{11, "routes[1] is a gRPC route: it needs listen.http2 on"},
		{14, "routes[2].protocol http2 needs listen.http2 on"},
		{18, `routes[3].protocol "http1": a gRPC route's upstream speaks http2`},
		{19, "routes[4].upstream demo speaks HTTP/1.1 only"},
	})
}
