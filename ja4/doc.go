// Package ja4 computes the JA4 TLS client fingerprint (FoxIO's
// specification, github.com/FoxIO-LLC/ja4, technical_details/JA4.md) from
// the ClientHello that crypto/tls hands a server in a
// [tls.ClientHelloInfo] (its GetConfigForClient or GetCertificate
// callback).
//
// # What it identifies
//
// A fingerprint such as t13d1516h2_8daaf6152771_e5627efa2ab1 names the TLS
// stack of a client — the library and its configuration: which versions,
// cipher suites, extensions and signature algorithms it offers — not the
// client's address or identity. Every copy of one browser build, one curl
// build or one bot framework has the same fingerprint, whatever address it
// comes from. Bots rotate addresses much more easily than TLS stacks, so a
// limit keyed on JA4 (alone or with other parts) can hold a botnet to the
// budget of one client. JA4 sorts the cipher and extension lists before
// hashing, so clients that shuffle their extensions per connection
// (Chromium does) keep one fingerprint, and it ignores GREASE values
// (RFC 8701) everywhere.
//
// The three parts: a = "t" (TLS over TCP), the TLS version, "d" with SNI
// or "i" without, the cipher and extension counts (two digits, at most 99)
// and the first and last characters of the first ALPN value ("00" with
// none); b = the first 12 hex digits of SHA-256 of the sorted cipher list;
// c = the same of the sorted extension list without SNI and ALPN, followed
// by "_" and the signature algorithms in the client's order. An empty list
// hashes as "000000000000".
//
// [Append] and [String] give JA4; [AppendRaw]/[Raw] JA4_r (the same lists
// in clear, for debugging), [AppendOriginal]/[Original] JA4_o and
// [AppendRawOriginal]/[RawOriginal] JA4_ro (the client's order, SNI and
// ALPN included). Append allocates nothing when dst has room.
//
// # Limits
//
//   - It is a key, not an authentication. A client that wants to pass for a
//     browser can send that browser's ClientHello byte for byte (uTLS and
//     curl-impersonate do); a fingerprint allowed or exempted by name is
//     therefore open to anyone who copies it. Use it to group and limit,
//     never to trust.
//   - Many unrelated users share one fingerprint (everyone on the same
//     Chrome version): a limit on JA4 alone is a limit on that whole
//     population. Combine it with other key parts, or give it a budget
//     sized for a population.
//   - Only TLS over TCP: crypto/tls serves no QUIC or DTLS, so the first
//     character is always 't' (JA4 writes 'q' for QUIC, 'd' for DTLS).
//   - The version comes from ClientHelloInfo.SupportedVersions: the
//     supported_versions extension when sent (its highest non-GREASE
//     value, JA4's rule); without it crypto/tls lists TLS 1.0 to 1.3 up to
//     the legacy version, whose highest entry is the legacy version (JA4's
//     rule again), except that a legacy version crypto/tls does not know
//     reads as "00" for SSL 3.0 and below (FoxIO: "s3") and as "13" above
//     TLS 1.3.
//   - A non-alphanumeric ALPN byte follows the specification's hex rule;
//     FoxIO's own tools print "99" or '9' there instead.
//   - After a HelloRetryRequest crypto/tls calls back again with the second
//     hello (ClientHelloInfo.HelloRetryRequest set); the fingerprint is
//     that of the first.
//
// # In the rules
//
// The gateway's TLS listeners (both data paths) compute the fingerprint
// once per connection, in GetConfigForClient ([CaptureHello]), into a
// [Slot] the connection holds (37 bytes, no allocation), whether or not a
// rule uses it: it costs under a microsecond against a handshake's
// hundreds (BenchmarkAppend: about 0.9 µs on the 2-core test machine),
// and a connection opened before a reload that adds a ja4 rule is then
// not exempt from it. A rule uses it as a key part, key: [ja4] (alone,
// or key: [ja4, asn] and so on), and as a matcher, match: {ja4: [...]}
// against listed fingerprints (hashes compared in lower case). A
// plain-HTTP request has no fingerprint: its ja4 key part is missing (the
// rule does not count it unless anonymous), and a ja4 matcher does not
// match it. No header field is read for it.
//
// Users of net/http get the same with [Listener], [Config] and
// [ConnContext]: httplimit.Request reads [FromContext]. fasthttp users
// serve a [Listener] under tls.NewListener(ln, ja4.Config(cfg));
// fastlimit.Request reads [FromConn].
package ja4
