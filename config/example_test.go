package config_test

import (
	"fmt"

	"github.com/tollgate-dev/tollgate/config"
)

// Every problem in a file is reported at once, each at its file:line:col.
func ExampleParse() {
	_, err := config.Parse("gateway.yaml", []byte(`listen:
  addr: ":8080"
  read_timout: 5s
rules:
  - name: api
    policies:
      - {algorithm: token_bucket, rate: 0/s}
`))
	for _, p := range config.Problems(err) {
		fmt.Println(p)
	}
	// Output:
	// gateway.yaml:3:3: listen: unknown key "read_timout" (did you mean "read_timeout"?)
	// gateway.yaml:7:35: rules[0].policies[0].rate: "0/s": invalid rate: count 0 must be positive
}

// A valid file gets every documented default.
func Example_defaults() {
	cfg, err := config.Parse("minimal.yaml", []byte(`routes: [{path: /, upstream: "http://127.0.0.1:3000"}]`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cfg.Listen.Addr, cfg.Admin.Addr, cfg.Store.Memory.MaxKeys, cfg.Upstream.ResponseTimeout)
	// Output:
	// :8080 127.0.0.1:9090 1000000 1m0s
}
