// Package replay answers "what would this limit have done to my real
// traffic?": it reads access logs (nginx/Apache combined or common format,
// JSON lines, CSV; plain or gzip; a file or standard input), puts the
// requests back in time order within a bounded window, derives a key for
// each request (client IP with IPv6 aggregated to a prefix, user, path,
// method, any JSON or CSV field, or a composite of these), and runs every
// given policy side by side over the stream with exactly the algorithms of
// package limit: each request calls the policy's Decide (or DecideLog) with
// the log's own timestamp as now. Nothing here re-implements an algorithm.
//
// The result is a [Report]: per policy the requests, refusals, keys
// affected, top refused keys and the busiest key's verdict; the worst seam
// burst a fixed window let through; the disagreement of the sliding window
// counter with the exact sliding log on the same data; and, on request, the
// smallest limit or burst that would have refused none of the busiest keys
// (see [Suggest]). Reports render as text, JSON or one self-contained HTML
// file with charts.
//
// Parsing is hand-written and byte-level, and the per-line path does not
// allocate once a key has been seen. Algorithm state is dropped as soon as
// it becomes idle (the same losslessness rule the stores use), so the
// simulation's memory follows the live keys; each distinct key also keeps
// a small fixed-size summary (counts, first refusal, peak rates) for the
// report.
package replay
