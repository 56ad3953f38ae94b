package rules

import "strings"

// GRPCMethod splits a gRPC request's path, "/package.Service/Method", into
// its service ("package.Service") and method ("Method") names. It reports
// false for a path of another shape: no leading slash, not exactly two
// non-empty segments. The key parts grpc_service (the service) and
// grpc_method (service and method, "package.Service/Method") read it; a
// request whose path is not a gRPC one has neither.
func GRPCMethod(path string) (service, method string, ok bool) {
	if len(path) < 4 || path[0] != '/' {
		return "", "", false
	}
	service, method, ok = strings.Cut(path[1:], "/")
	if !ok || service == "" || method == "" || strings.IndexByte(method, '/') >= 0 {
		return "", "", false
	}
	return service, method, true
}
