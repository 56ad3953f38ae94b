package fastlimit

import (
	"github.com/tollgate-dev/tollgate/ja4"
	"github.com/tollgate-dev/tollgate/rules"
)

var _ rules.TLSFingerprint = Request{}

// JA4 is the TLS fingerprint of the request's connection (the ja4 key
// part and matcher), or "": the fasthttp server must serve a TLS
// listener whose connections hold a ja4.Slot (ja4.Listener under
// tls.NewListener, with ja4.Config's GetConfigForClient). No header
// field can set it.
func (r Request) JA4() string { return ja4.FromConn(r.Ctx.Conn()) }
