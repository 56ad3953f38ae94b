package gateway

import (
	"os"
	"path/filepath"
	"testing"
)

// A watched file truncated to nothing (an editor mid-save) is a failed
// reload: the old routes and rules keep serving.
func TestReloadEmptyFileKeepsServing(t *testing.T) {
	g, base := startTestGateway(t, "routes: [{path: /, upstream: demo}]\nrules: [{name: r, policies: [{rate: 1/h, burst: 1}]}]\n")
	path := filepath.Join(t.TempDir(), "live.yaml")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := g.ReloadFile(path); err == nil {
		t.Fatal("an empty file reloaded")
	}
	get(t, base+"/", "")
	if code, _, _ := get(t, base+"/", ""); code != 429 {
		t.Fatalf("after the failed reload: %d, want 429 from the old rule", code)
	}
	if v := testCounter(g, "failure"); v != 1 {
		t.Errorf("failure count %v, want 1", v)
	}
}
