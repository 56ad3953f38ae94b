package config

import (
	"os/exec"
	"strings"
	"testing"
)

// TestParsingImportsNoStoreDriver: package config, which parses a file,
// depends on none of the drivers of what the file configures (the Redis
// client, memberlist, DDSketch): their settings live in driver-free
// packages (store/redis/redisconf, store/gossip/gossipconf,
// adaptive/adaptiveconf, failmode). It reads the real import graph with
// go list.
func TestParsingImportsNoStoreDriver(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, driver := range []string{
			"github.com/redis/rueidis",
			"github.com/hashicorp/memberlist",
			"github.com/DataDog/sketches-go",
			"github.com/tollgate-dev/tollgate/store/redis",
			"github.com/tollgate-dev/tollgate/store/gossip",
			"github.com/tollgate-dev/tollgate/store/eventual",
			"github.com/tollgate-dev/tollgate/adaptive",
		} {
			if dep == driver || strings.HasPrefix(dep, driver+"/") && !strings.HasSuffix(dep, "conf") {
				t.Errorf("config depends on %s", dep)
			}
		}
	}
}
