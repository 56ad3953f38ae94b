package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestE2EExemptions runs tollgate serve with exemptions from a watched
// clients file, the test being the trusted proxy that names the client:
// the exempt range is never refused and gets no RateLimit fields,
// another client is limited, and the file changed on disk takes effect
// without a restart or a signal, counted in tollgate_exempt_total. (A
// spoofed X-Forwarded-For from an untrusted peer is gateway's
// TestExceptE2EHTTP1 and TestExceptE2EHTTP2.)
func TestE2EExemptions(t *testing.T) {
	t.Parallel()
	srv, _ := origin(t)
	dir := t.TempDir()
	clients := filepath.Join(dir, "clients.txt")
	if err := os.WriteFile(clients, []byte("10.0.0.0/8\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "tollgate.yaml")
	cfg := `listen: {addr: "127.0.0.1:0"}
admin: {addr: "127.0.0.1:0"}
reload: {watch: true, interval: 10ms, settle: 50ms}
routes: [{path: /, upstream: "` + srv.URL + `"}]
client_ip: {trusted_proxies: [127.0.0.1]}
rules:
  - name: per-ip
    policies: [{algorithm: fixed_window, limit: 2, window: 1h}]
    except:
      - clients_file: clients.txt
`
	if err := os.WriteFile(file, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startServeFile(t, file, nil)
	status := func(xff string) (int, bool) {
		resp, _ := get(t, p.url("/x"), "X-Forwarded-For", xff)
		return resp.StatusCode, resp.Header.Get("Ratelimit-Policy") != "" || resp.Header.Get("Ratelimit") != ""
	}
	for i := range 4 {
		if s, fields := status("10.1.2.3"); s != 200 || fields {
			t.Fatalf("exempt client, request %d: %d, RateLimit fields %v", i, s, fields)
		}
	}
	for i, want := range []int{200, 200, 429} {
		if s, fields := status("203.0.113.9"); s != want || !fields {
			t.Fatalf("client 203.0.113.9, request %d: %d (fields %v), want %d with fields", i, s, fields, want)
		}
	}
	// 203.0.113.9 joins the list: no restart, no SIGHUP.
	tmp := clients + ".new"
	os.WriteFile(tmp, []byte("10.0.0.0/8\n203.0.113.0/24\n"), 0o644)
	if err := os.Rename(tmp, clients); err != nil {
		t.Fatal(err)
	}
	eventually(t, "203.0.113.9 to be exempt", func() bool {
		s, fields := status("203.0.113.9")
		return s == 200 && !fields
	})
	if got := p.metric(`tollgate_exempt_total{rule="per-ip"}`); got == "" || got == "0" {
		t.Errorf("tollgate_exempt_total{rule=per-ip} = %q", got)
	}
}
