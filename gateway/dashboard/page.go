package dashboard

import (
	"embed"
	"net/http"
)

//go:embed page
var page embed.FS

// contentPolicy lets the page load only its own script and style sheet
// and open only its own event stream.
const contentPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Register adds the dashboard's routes to mux: the page at "GET /{$}",
// its files under /dashboard/ and the event stream at
// /dashboard/events. enabled is asked on every request: when it reports
// false the routes answer 404, so that a reload can turn the dashboard
// off and on.
func Register(mux *http.ServeMux, hub *Hub, enabled func() bool) {
	file := func(name, ctype string) http.HandlerFunc {
		body, err := page.ReadFile("page/" + name)
		if err != nil {
			panic(err) // embedded at build time: cannot happen
		}
		return func(w http.ResponseWriter, r *http.Request) {
			if !enabled() {
				http.NotFound(w, r)
				return
			}
			h := w.Header()
			h.Set("Content-Type", ctype)
			h.Set("Content-Security-Policy", contentPolicy)
			h.Set("X-Content-Type-Options", "nosniff")
			h.Set("Cache-Control", "no-cache")
			w.Write(body)
		}
	}
	mux.HandleFunc("GET /{$}", file("index.html", "text/html; charset=utf-8"))
	mux.HandleFunc("GET /dashboard/app.js", file("app.js", "text/javascript; charset=utf-8"))
	mux.HandleFunc("GET /dashboard/style.css", file("style.css", "text/css; charset=utf-8"))
	mux.HandleFunc("GET /dashboard/events", func(w http.ResponseWriter, r *http.Request) {
		if !enabled() {
			http.NotFound(w, r)
			return
		}
		hub.ServeHTTP(w, r)
	})
}
