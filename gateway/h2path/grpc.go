package h2path

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/tollgate-dev/tollgate/httplimit"
	"github.com/tollgate-dev/tollgate/rules"
)

// gRPC status codes the gateway answers with (grpc/codes).
const (
	grpcDeadlineExceeded  = 4
	grpcResourceExhausted = 8
	grpcUnavailable       = 14
)

// checkGRPC answers a request to a gRPC route that is not a gRPC request
// and reports false: 505 unless it came over HTTP/2 (gRPC needs it end to
// end), 415 unless its content type is application/grpc or
// application/grpc+FORMAT (gRPC's PROTOCOL-HTTP2 asks for 415). Nothing
// of it reaches the upstream.
func (g *Server) checkGRPC(w http.ResponseWriter, r *http.Request) bool {
	switch {
	case r.ProtoMajor != 2:
		g.M.H2.GRPCInvalid.Inc()
		problemH2(w, r, http.StatusHTTPVersionNotSupported, "HTTP Version Not Supported", "gRPC needs HTTP/2")
		return false
	case !IsGRPCContentType(r.Header["Content-Type"]):
		g.M.H2.GRPCInvalid.Inc()
		problemH2(w, r, http.StatusUnsupportedMediaType, "Unsupported Media Type", "a gRPC route takes application/grpc requests")
		return false
	}
	return true
}

// IsGRPCContentType reports whether vals is one content type,
// application/grpc or application/grpc+FORMAT or ;PARAMETERS after it.
func IsGRPCContentType(vals []string) bool {
	if len(vals) != 1 {
		return false
	}
	v := vals[0]
	const base = "application/grpc"
	if len(v) < len(base) || !strings.EqualFold(v[:len(base)], base) {
		return false
	}
	rest := v[len(base):]
	return rest == "" || rest[0] == '+' || rest[0] == ';'
}

// writeGRPCRefusal answers a refused gRPC request with a gRPC response,
// never an HTTP 429 a gRPC client cannot read: HTTP 200 with the status
// in the only HEADERS frame (a trailers-only response), grpc-status 8
// RESOURCE_EXHAUSTED (14 UNAVAILABLE when a store failure refused it), a
// grpc-message saying when to retry, and the rate-limit fields and
// retry-after as metadata (client/grpcretry waits as they say).
func writeGRPCRefusal(w http.ResponseWriter, res *rules.Result) {
	h := w.Header()
	httplimit.SetHeaders(h, res)
	code := grpcResourceExhausted
	msg := "rate limit exceeded"
	if res.Outcome == rules.Errored {
		code, msg = grpcUnavailable, "rate limit unavailable"
	}
	if ra := h["Retry-After"]; len(ra) == 1 {
		msg += "; retry after " + ra[0] + "s"
	}
	writeGRPCStatus(w, code, msg)
}

// writeGRPCStatus answers with a trailers-only gRPC response carrying
// code and msg (percent-encoded as gRPC's grpc-message is).
func writeGRPCStatus(w http.ResponseWriter, code int, msg string) {
	h := w.Header()
	h["Content-Type"] = []string{"application/grpc"}
	h["Grpc-Status"] = []string{strconv.Itoa(code)}
	h["Grpc-Message"] = []string{grpcPercentEncode(msg)}
	w.WriteHeader(http.StatusOK)
}

// grpcPercentEncode encodes msg as gRPC's grpc-message: bytes outside
// printable ASCII, and '%', as %XX.
func grpcPercentEncode(msg string) string {
	const hex = "0123456789ABCDEF"
	clean := true
	for i := 0; i < len(msg); i++ {
		if c := msg[i]; c < 0x20 || c > 0x7e || c == '%' {
			clean = false
			break
		}
	}
	if clean {
		return msg
	}
	var b strings.Builder
	for i := 0; i < len(msg); i++ {
		c := msg[i]
		if c < 0x20 || c > 0x7e || c == '%' {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}
