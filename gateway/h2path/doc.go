// Package h2path is the gateway's data path on net/http (listen.http2
// on): a Listener serving HTTP/1.1, h2 by ALPN and h2c, and a Server
// whose handler runs each request or stream through the rule engine
// (package httplimit), proxies it with httputil.ReverseProxy over
// HTTP/1.1, h2 or h2c upstream transports kept across reloads, answers
// gRPC routes' refusals as gRPC statuses, and bounds each write to a
// client by listen.send_timeout.
//
// A client that goes away cancels its upstream exchange, except for a
// request that counts (a rule's count: rules.Result.Counts): that
// exchange goes on without the client, bounded by
// upstream.response_timeout, until the upstream's response headers come
// and are charged, as the fasthttp path waits for the real answer; only
// then does the client's going cancel the response body's copy.
package h2path
