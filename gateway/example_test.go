package gateway_test

import (
	"fmt"
	"io"
	"net/http"

	"github.com/tollgate-dev/tollgate/config"
	"github.com/tollgate-dev/tollgate/gateway"
)

// A gateway in front of the built-in demo origin, allowing 2 requests per
// hour per client IP.
func Example() {
	cfg, err := config.Parse("example.yaml", []byte(`
listen: {addr: "127.0.0.1:0"}
admin: {addr: "off"}
routes: [{path: /, upstream: demo}]
rules:
  - name: per-ip
    policies: [{algorithm: sliding_log, limit: 2, window: 1h}]
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	g, err := gateway.New(cfg, gateway.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer g.Close()
	if err := g.Start(); err != nil {
		fmt.Println(err)
		return
	}
	for range 3 {
		resp, err := http.Get("http://" + g.Addr().String() + "/")
		if err != nil {
			fmt.Println(err)
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		fmt.Println(resp.StatusCode, resp.Header.Get("RateLimit"))
	}
	// Output:
	// 200 "per-ip";r=1;t=3600
	// 200 "per-ip";r=0;t=3600
	// 429 "per-ip";r=0;t=3600
}
