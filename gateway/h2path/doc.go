// Package h2path is the gateway's data path on net/http (listen.http2
// on): a Listener serving HTTP/1.1, h2 by ALPN and h2c, and a Server
// whose handler runs each request or stream through the rule engine
// (package httplimit), proxies it with httputil.ReverseProxy over
// HTTP/1.1, h2 or h2c upstream transports kept across reloads, answers
// gRPC routes' refusals as gRPC statuses, and bounds each write to a
// client by listen.send_timeout.
package h2path
