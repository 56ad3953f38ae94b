package envoyrls

import (
	"io"
	"net/http"
	"sync"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
)

// HealthService is the gRPC health-checking service name
// envoyproxy/ratelimit answers for besides "" (the whole server).
const HealthService = "ratelimit"

// MaxJSONBody bounds a /json request body.
const MaxJSONBody = 1 << 20

// Register registers on g the rate limit service, gRPC health checking
// (serving for "", "ratelimit" and the service's full name) and server
// reflection. SetServing changes the health answer.
func (s *Service) Register(g *grpc.Server) {
	rlsv3.RegisterRateLimitServiceServer(g, s)
	h := health.NewServer()
	healthpb.RegisterHealthServer(g, h)
	reflection.Register(g)
	s.health.Lock()
	s.health.grpc = append(s.health.grpc, h)
	s.health.Unlock()
	s.SetServing(!s.health.down)
}

// health is the serving state, answered by gRPC health and /healthcheck.
type healthState struct {
	sync.Mutex
	down bool
	grpc []*health.Server
}

// SetServing reports the service serving or not (as it shuts down).
func (s *Service) SetServing(ok bool) {
	s.health.Lock()
	defer s.health.Unlock()
	s.health.down = !ok
	st := healthpb.HealthCheckResponse_SERVING
	if !ok {
		st = healthpb.HealthCheckResponse_NOT_SERVING
	}
	for _, h := range s.health.grpc {
		for _, name := range []string{"", HealthService, rlsv3.RateLimitService_ServiceDesc.ServiceName} {
			h.SetServingStatus(name, st)
		}
	}
}

func (s *Service) serving() bool {
	s.health.Lock()
	defer s.health.Unlock()
	return !s.health.down
}

// HTTPHandler serves envoyproxy/ratelimit's HTTP endpoints: POST /json
// takes a RateLimitRequest in protobuf JSON and answers the
// RateLimitResponse, 200 when OK and 429 when OVER_LIMIT (400 for a bad
// request); /healthcheck answers "OK", or 500 when not serving.
func (s *Service) HTTPHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/json", s.serveJSON)
	mux.HandleFunc("/healthcheck", func(w http.ResponseWriter, r *http.Request) {
		if !s.serving() {
			http.Error(w, "NOT SERVING", http.StatusInternalServerError)
			return
		}
		io.WriteString(w, "OK")
	})
	return mux
}

func (s *Service) serveJSON(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxJSONBody))
	if err != nil {
		http.Error(w, "request body: "+err.Error(), http.StatusBadRequest)
		return
	}
	var req rlsv3.RateLimitRequest
	if err := protojson.Unmarshal(body, &req); err != nil {
		http.Error(w, "invalid RateLimitRequest JSON: "+err.Error(), http.StatusBadRequest)
		return
	}
	resp, err := s.ShouldRateLimit(r.Context(), &req)
	if err != nil {
		// 400 for a store failure too, as envoyproxy/ratelimit answers
		// every error of ShouldRateLimit.
		http.Error(w, status.Convert(err).Message(), http.StatusBadRequest)
		return
	}
	out, err := protojson.Marshal(resp)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if resp.GetOverallCode() == rlsv3.RateLimitResponse_OVER_LIMIT {
		w.WriteHeader(http.StatusTooManyRequests)
	}
	w.Write(out)
}
