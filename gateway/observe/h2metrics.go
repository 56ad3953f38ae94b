package observe

import "github.com/prometheus/client_golang/prometheus"

// Protocols of the net/http data path's requests, as labels.
const (
	protoH1   = "h1"
	protoH2   = "h2"
	protoH2C  = "h2c"
	ProtoGRPC = "grpc"
)

// h2Metrics are the net/http data path's own collectors.
type h2Metrics struct {
	// requests by protocol: h1, h2, h2c, grpc.
	requests          *prometheus.CounterVec
	H1, H2, H2c, GRPC prometheus.Counter
	protocolErrors    *prometheus.CounterVec // kind
	GRPCInvalid       prometheus.Counter
}

func newH2Metrics(reg *prometheus.Registry) h2Metrics {
	m := h2Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_requests_by_protocol_total",
			Help: "Requests served by the net/http data path (a listener with http2 on), by protocol: h1, h2, h2c, grpc (gRPC over h2 or h2c). The fasthttp path's requests are not counted here.",
		}, []string{"protocol"}),
		protocolErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_http2_protocol_errors_total",
			Help: "HTTP/2 protocol errors that reset a stream or closed a connection, by net/http's HTTP/2 error kind, e.g. conn_ENHANCE_YOUR_CALM_too_many_early_resets or stream_PROTOCOL_ERROR_bad_req_headers.",
		}, []string{"kind"}),
		GRPCInvalid: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tollgate_grpc_invalid_requests_total",
			Help: "Requests to a gRPC route that were not gRPC (no application/grpc content type, or not HTTP/2), answered 415 or 505.",
		}),
	}
	m.H1 = m.requests.WithLabelValues(protoH1)
	m.H2 = m.requests.WithLabelValues(protoH2)
	m.H2c = m.requests.WithLabelValues(protoH2C)
	m.GRPC = m.requests.WithLabelValues(ProtoGRPC)
	reg.MustRegister(m.requests, m.protocolErrors, m.GRPCInvalid)
	return m
}

// CountH2Error is http.HTTP2Config.CountError: errType is one of a
// fixed set of kinds in that package's code, so the label set is
// bounded.
func (m *Metrics) CountH2Error(errType string) {
	m.H2.protocolErrors.WithLabelValues(errType).Inc()
}
