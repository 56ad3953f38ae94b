package gateway

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A reloaded file whose Redis URL does not parse is a failed reload with
// the file's line, not a crash: the old routes and rules keep serving.
func TestReloadUnparseableRedisURLKeepsServing(t *testing.T) {
	g, base := startTestGateway(t, "routes: [{path: /, upstream: demo}]\nrules: [{name: r, policies: [{rate: 1/h, burst: 1}]}]\n")
	path := filepath.Join(t.TempDir(), "live.yaml")
	if err := os.WriteFile(path, []byte(`store: {redis: {url: "redis://127.0.0.1:6379/0%"}}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := g.ReloadFile(path)
	if err == nil || !strings.Contains(err.Error(), path+":1:17: store.redis.url") {
		t.Fatalf("reload error = %v, want one at %s:1:17", err, path)
	}
	get(t, base+"/", "")
	if code, _, _ := get(t, base+"/", ""); code != 429 {
		t.Fatalf("after the failed reload: %d, want 429 from the old rule", code)
	}
	if v := testCounter(g, "failure"); v != 1 {
		t.Errorf("failure count %v, want 1", v)
	}
}
