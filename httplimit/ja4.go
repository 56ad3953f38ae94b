package httplimit

import (
	"github.com/tollgate-dev/tollgate/ja4"
	"github.com/tollgate-dev/tollgate/rules"
)

var _ rules.TLSFingerprint = Request{}

// JA4 is the TLS fingerprint of the request's connection (the ja4 key
// part and matcher), or "": the http.Server must set ConnContext to
// ja4.ConnContext and serve a ja4.Listener with ja4.Config's TLS
// configuration. No header field can set it.
func (v Request) JA4() string { return ja4.FromContext(v.Req.Context()) }
