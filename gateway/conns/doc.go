// Package conns holds the gateway's connection plumbing, beneath both
// data paths and free of routes and rules: the traffic listener's
// connections (YieldListener, YieldConn), which bound each write by
// listen.send_timeout and yield the processor between requests; the
// same bound on a net/http response (StreamSend); the upstream
// connections the fasthttp clients dial (UpstreamConns), whose
// deadlines are lifted once an exchange ends; what one client holds of
// an upstream's pool (ClientHolds, upstream.max_conns_per_client); the
// concurrency slots an exchange holds until its connection's next
// request (HoldSlots); the WebSocket tunnels (Tunnels); and the
// monotonic clock the data paths read (MonoNow).
package conns
