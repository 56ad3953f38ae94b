package exchange

import (
	"bytes"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"os"
	"syscall"

	"github.com/valyala/fasthttp"

	"github.com/tollgate-dev/tollgate/internal/escape"
)

const ClientShareDetail = "this client already has upstream.max_conns_per_client requests in flight to the upstream"

// AppendForwarded appends the Forwarded lines prior, joined, then this
// hop's element: for= the peer (an IPv6 address quoted in brackets, as
// RFC 7239 §6 writes it) and proto=.
func AppendForwarded(dst []byte, prior [][]byte, peer netip.Addr, proto []byte) []byte {
	for _, v := range prior {
		if len(v) > 0 {
			dst = append(dst, v...)
			dst = append(dst, ", "...)
		}
	}
	dst = append(dst, "for="...)
	if peer.Is6() {
		dst = append(dst, `"[`...)
		dst = peer.AppendTo(dst)
		dst = append(dst, `]"`...)
	} else {
		dst = peer.AppendTo(dst)
	}
	dst = append(dst, ";proto="...)
	return append(dst, proto...)
}

// HasDotSegment reports whether the raw path has a "." or ".." segment
// once percent-decoded (%2e is a dot, %2f a slash).
func HasDotSegment(raw []byte) bool {
	if bytes.IndexByte(raw, '.') < 0 && bytes.IndexByte(raw, '%') < 0 {
		return false
	}
	dots := 0 // dots in the segment so far; -1 once it has anything else
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c == '%' && i+2 < len(raw) {
			if h, l := escape.Unhex(raw[i+1]), escape.Unhex(raw[i+2]); h >= 0 && l >= 0 {
				c = byte(h<<4 | l)
				i += 2
			}
		}
		switch {
		case c == '/':
			if dots == 1 || dots == 2 {
				return true
			}
			dots = 0
		case c == '.' && dots >= 0:
			dots++
		default:
			dots = -1
		}
	}
	return dots == 1 || dots == 2
}

func IsTimeout(err error) bool {
	if errors.Is(err, fasthttp.ErrTimeout) || errors.Is(err, fasthttp.ErrDialTimeout) ||
		errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return false
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// ErrBodyTooLarge stops a request body past listen.max_request_body.
var ErrBodyTooLarge = errors.New("the request body exceeds listen.max_request_body")

// ClientBodyFault is the answer to a request whose body could not be
// read from the client, on either data path: 413 past the limit, 408
// when the client stalled past the read timeout, 400 for broken framing
// or a body cut short. None of them is the upstream's fault.
func ClientBodyFault(err error) (status int, title, detail string) {
	var ne net.Error
	var tooLarge *http.MaxBytesError
	switch {
	case errors.Is(err, ErrBodyTooLarge) || errors.As(err, &tooLarge):
		return http.StatusRequestEntityTooLarge, "Request body too large", "the request body exceeds listen.max_request_body"
	case errors.As(err, &ne) && ne.Timeout():
		return http.StatusRequestTimeout, "Request Timeout", "the request body did not arrive in time"
	default:
		return http.StatusBadRequest, "Bad Request", "the request body is malformed or incomplete"
	}
}

// The answer to a request head that did not arrive in time, on either
// data path (readError, answerSlowHead).
const (
	TitleSlowHead  = "Request Timeout"
	DetailSlowHead = "the request did not arrive within listen.read_timeout"
)

// maxRequestHead and maxResponseHead bound the heads the gateway reads
// from clients and upstreams, in bytes.
const (
	MaxRequestHead  = 8 << 10
	MaxResponseHead = 16 << 10
)
