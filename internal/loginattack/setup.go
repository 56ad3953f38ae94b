package loginattack

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/tollgate-dev/tollgate/ja4"
)

// Fingerprint is the JA4 fingerprint of the ClientHello that Client sends
// with tc, read by a TLS server of its own on 127.0.0.1 (an address, as
// the players' target is: no SNI).
func Fingerprint(tc *tls.Config) (string, error) {
	var (
		mu  sync.Mutex
		got string
	)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.EnableHTTP2 = true
	srv.TLS = &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		mu.Lock()
		if got == "" {
			got = ja4.String(h)
		}
		mu.Unlock()
		return nil, nil
	}}
	srv.StartTLS()
	defer srv.Close()
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	c := tc.Clone()
	c.RootCAs = pool
	cl := Client(netip.Addr{}, c, 5*time.Second)
	defer cl.CloseIdleConnections()
	resp, err := cl.Get(srv.URL)
	if err != nil {
		return "", err
	}
	resp.Body.Close()
	mu.Lock()
	defer mu.Unlock()
	if got == "" {
		return "", errFingerprint
	}
	return got, nil
}

// Substitute says what Configure changes in an example.
type Substitute struct {
	// Listen is listen.addr, "127.0.0.1:18443".
	Listen string
	// Cert and Key replace listen.tls's files.
	Cert, Key string
	// Upstream replaces every route's upstream.
	Upstream string
	// Redis, when set, is the store: {redis: {url: Redis}}.
	Redis string
	// HTTP2, when set, is listen.http2: "off" puts the TLS listener on
	// the fasthttp HTTP/1.1 data path (the default with tls is "on", the
	// net/http path serving HTTP/2 and HTTP/1.1).
	HTTP2 string
}

// Configure returns the example file src with s's addresses, files and
// store, the admin listener off and file watching off; the rest (the
// rules, the refusal) as written.
func Configure(src []byte, s Substitute) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, err
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("not a mapping")
	}
	root := doc.Content[0]
	listen := mapping(root, "listen")
	set(listen, "addr", s.Listen)
	if s.Cert != "" {
		t := mapping(listen, "tls")
		set(t, "cert", s.Cert)
		set(t, "key", s.Key)
	}
	if s.HTTP2 != "" {
		set(listen, "http2", s.HTTP2)
	}
	set(mapping(root, "admin"), "addr", "off")
	set(mapping(root, "reload"), "watch", "false")
	if s.Upstream != "" {
		routes := value(root, "routes")
		if routes == nil || routes.Kind != yaml.SequenceNode {
			return nil, fmt.Errorf("no routes")
		}
		for _, r := range routes.Content {
			set(r, "upstream", s.Upstream)
		}
	}
	if s.Redis != "" {
		if _, err := url.Parse(s.Redis); err != nil {
			return nil, err
		}
		st := &yaml.Node{Kind: yaml.MappingNode}
		set(mapping(st, "redis"), "url", s.Redis)
		put(root, "store", st)
	}
	return yaml.Marshal(&doc)
}

func value(m *yaml.Node, k string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == k {
			return m.Content[i+1]
		}
	}
	return nil
}

func put(m *yaml.Node, k string, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == k {
			m.Content[i+1] = v
			return
		}
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: k}, v)
}

// mapping is m's mapping k, made when missing.
func mapping(m *yaml.Node, k string) *yaml.Node {
	if v := value(m, k); v != nil && v.Kind == yaml.MappingNode {
		return v
	}
	v := &yaml.Node{Kind: yaml.MappingNode}
	put(m, k, v)
	return v
}

func set(m *yaml.Node, k, v string) {
	put(m, k, &yaml.Node{Kind: yaml.ScalarNode, Value: v})
}
