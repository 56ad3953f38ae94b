// stdproxy is the net/http baseline: httputil.ReverseProxy with upstream
// keep-alive, or (-deny) a handler answering every request 429 with the
// same header fields and problem body tollgate writes. With -h2c it also
// serves h2c with prior knowledge (net/http's own HTTP/2), the bare
// standard stack that tollgate's HTTP/2 path is measured against;
// -upstream names the origin. With -ok it answers every request 200 with
// no body: the bare net/http auth service, forward-auth's floor
// (scripts/bench-forwardauth.sh).
package main

import (
	"flag"
	"log"
	"net/http"
	"net/http/httputil"
	"net/url"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18095", "listen address")
	deny := flag.Bool("deny", false, "answer 429 to everything")
	ok := flag.Bool("ok", false, "answer 200 with no body to everything (a bare auth service)")
	h2c := flag.Bool("h2c", false, "serve h2c (prior knowledge) besides HTTP/1.1")
	upstream := flag.String("upstream", "http://127.0.0.1:18081", "the origin")
	flag.Parse()
	var h http.Handler
	switch {
	case *ok:
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	case *deny:
		body := []byte(`{"type":"https://iana.org/assignments/http-problem-types#quota-exceeded","title":"Too Many Requests","status":429,"detail":"retry in 3600 seconds","violated-policies":["per-ip"]}`)
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hd := w.Header()
			hd["Ratelimit-Policy"] = []string{`"per-ip";q=1;w=3600`}
			hd["Ratelimit"] = []string{`"per-ip";r=0;t=3600`}
			hd["Retry-After"] = []string{"3600"}
			hd["Cache-Control"] = []string{"no-store"}
			hd["X-Content-Type-Options"] = []string{"nosniff"}
			hd["Content-Type"] = []string{"application/problem+json"}
			w.WriteHeader(429)
			w.Write(body)
		})
	default:
		u, _ := url.Parse(*upstream)
		p := httputil.NewSingleHostReverseProxy(u)
		p.Transport = &http.Transport{MaxIdleConns: 512, MaxIdleConnsPerHost: 512}
		h = p
	}
	srv := &http.Server{Addr: *addr, Handler: h}
	if *h2c {
		srv.Protocols = new(http.Protocols)
		srv.Protocols.SetHTTP1(true)
		srv.Protocols.SetUnencryptedHTTP2(true)
	}
	log.Fatal(srv.ListenAndServe())
}
