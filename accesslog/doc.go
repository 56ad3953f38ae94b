// Package accesslog owns the access-log formats as tollgate writes and
// reads them: the gateway writes its lines with AppendCombined or
// AppendJSON, and tollgate replay decodes the combined format's quoted
// fields with Unquote, so a log the gateway writes is one replay reads.
//
// The combined format is nginx's:
//
//	remote - - [02/Jan/2006:15:04:05 -0700] "METHOD target proto" status bytes "referer" "agent" rule=NAME decision=OUTCOME
//
// with tollgate's rule and decision appended (tools that read the combined
// format ignore what follows the agent). In a quoted field '"', '\\',
// control bytes and bytes from 0x7f are written as \xHH, as nginx writes
// them, so that no client value can end a field or the line.
package accesslog
