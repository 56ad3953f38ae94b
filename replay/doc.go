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
// A gateway configuration's rules can be simulated too ([Rules]): through
// package rules' engine on the in-memory store, with the log's time as the
// store's clock, exactly as the gateway would run them: a counting rule
// is charged with the status the log recorded for each request the
// replay admits, penalties run on the log's clock, and the report says
// what they charged and how many refusals were penalties (Rules).
//
// Input is streamed (gzip included, in constant memory), its lines read
// by package accesslog's parsers (the formats the gateway writes, and
// nginx's, Apache's, JSON lines and CSV), and the per-line path does not
// allocate once a key has been seen. Out-of-order lines are put back in
// order by a window bounded in time and in lines (a FIFO for the lines in
// order plus a heap for the stragglers), so that its memory stays bounded
// whatever the timestamps say ([Config.ReorderLines]). Sliding logs and seam trackers
// are freed as soon as they become idle. By default every distinct key
// keeps a record of a few hundred bytes to the end, so that every per-key
// figure is exact; with [Config.MaxKeys] memory follows the live keys
// instead: idle keys (whose state equals an absent key's, so that dropping
// them changes no decision) are retired and their figures folded into the
// report.
package replay
