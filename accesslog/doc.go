// Package accesslog owns the access-log formats as tollgate writes and
// reads them: the gateway writes its lines with AppendCombined or
// AppendJSON, and tollgate replay reads them (and nginx's, Apache's,
// other JSON lines and CSV) with DetectFormat and a Parser into Records,
// so a log the gateway writes is one replay reads without a flag.
//
// The readers are streaming and allocation-free per line: the combined
// and common formats are parsed by hand, byte by byte, with a cache of
// the last timestamp's minute; JSON lines by fastjson, escapes decoded,
// fields found by name (Fields); CSV as RFC 4180 reads it, by position
// or by a header's names.
//
// The combined format is nginx's:
//
//	remote - - [02/Jan/2006:15:04:05 -0700] "METHOD target proto" status bytes "referer" "agent" rule=NAME decision=OUTCOME
//
// with tollgate's rule and decision appended (tools that read the combined
// format ignore what follows the agent). In a quoted field '"', '\\',
// control bytes and bytes from 0x7f are written as \xHH, as nginx writes
// them, so that no client value can end a field or the line.
//
// A Query says what a written line keeps of the request-target's query
// string (access_log.query): all of it (keep, the default, as nginx),
// none (drop), or every parameter with the values of the named ones
// (tokens, API keys) replaced by Redacted (redact). It allocates
// nothing.
package accesslog
