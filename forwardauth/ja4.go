package forwardauth

// JA4 is always "": the client's TLS handshake was with the proxy, which
// forwards no fingerprint, and the auth request's own connection is the
// proxy's. A ja4 key part is therefore missing and a ja4 matcher never
// matches here (rules.TLSFingerprint).
func (o *original) JA4() string { return "" }
