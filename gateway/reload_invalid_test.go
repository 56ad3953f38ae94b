package gateway

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/config"
	"github.com/tollgate-dev/tollgate/internal/logtest"
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

// A reloaded file without routes serves, as at start, but its warning
// (every request goes to the built-in demo origin) is logged, not lost.
func TestReloadWithoutRoutesWarns(t *testing.T) {
	cfg, err := config.Parse("test.yaml", []byte("listen: {addr: \"127.0.0.1:0\"}\nadmin: {addr: off}\nreload: {watch: false}\nroutes: [{path: /, upstream: demo}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	var logs logtest.Buffer
	g, err := New(cfg, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	path := filepath.Join(t.TempDir(), "live.yaml")
	if err := os.WriteFile(path, []byte("listen: {addr: \"127.0.0.1:0\"}\nadmin: {addr: off}\nreload: {watch: false}\nrules: [{name: r, policies: [{rate: 1/h}]}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := g.ReloadFile(path); err != nil {
		t.Fatal(err)
	}
	if out := logs.String(); !strings.Contains(out, "level=WARN") || !strings.Contains(out, "no routes") {
		t.Errorf("reload logged no warning about the missing routes:\n%s", out)
	}
}
