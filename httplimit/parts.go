package httplimit

import (
	"net/http"

	"github.com/tollgate-dev/tollgate/rules"
)

// The functions below are the steps of Handler, for a data path that runs
// them in its own order (the gateway's HTTP/2 path routes, decides, and
// writes gRPC refusals itself), so that no adapter writes the view, the
// header fields or the refusal a second time.

// Request returns the rules.Request view of r that Handler decides on.
func Request(r *http.Request) rules.Request { return view{r} }

// SetHeaders sets res's response header fields (the rate-limit fields,
// and on a refusal Retry-After and Cache-Control) in h, replacing any of
// the same name.
func SetHeaders(h http.Header, res *rules.Result) {
	var buf [10]rules.Header
	setHeaders(h, res.AppendHeaders(buf[:0]))
}

// WriteRefusal answers w with res's refusal as Handler does: the header
// fields, the status and the body (none for HEAD). Call it when
// res.Refused() reports true.
func WriteRefusal(w http.ResponseWriter, r *http.Request, res *rules.Result) {
	SetHeaders(w.Header(), res)
	writeRefusal(w, r, res.Refusal())
}
