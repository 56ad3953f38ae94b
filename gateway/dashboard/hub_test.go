package dashboard

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// readEvent reads one event's name and data.
func readEvent(t *testing.T, r *bufio.Reader) (string, string) {
	t.Helper()
	var name string
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case strings.HasPrefix(line, "event: "):
			name = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			return name, line[len("data: "):]
		}
	}
}

// waitViewers waits until the hub has n open streams.
func waitViewers(t *testing.T, h *Hub, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); h.Viewers() != n; {
		if time.Now().After(deadline) {
			t.Fatalf("%d viewers, want %d", h.Viewers(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// A stream starts with hello, then carries what is published; the hub
// counts its viewers and Close ends every stream.
func TestHubStreamsAndCloses(t *testing.T) {
	h := NewHub(func() []byte { return []byte(`{"hi":1}`) })
	mux := http.NewServeMux()
	on := true
	Register(mux, h, func() bool { return on })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/dashboard/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	if name, data := readEvent(t, r); name != EventHello || data != `{"hi":1}` {
		t.Fatalf("first event %s %s", name, data)
	}
	waitViewers(t, h, 1)
	h.Publish(EventFrame, []byte(`{"n":1}`))
	if name, data := readEvent(t, r); name != EventFrame || data != `{"n":1}` {
		t.Fatalf("event %s %s", name, data)
	}
	h.Close()
	ended := make(chan struct{})
	go func() { io.ReadAll(r); close(ended) }()
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("stream still open after Close")
	}
	waitViewers(t, h, 0)
	on = false
	resp2, err := http.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
	if resp2.StatusCode != 404 {
		t.Fatalf("disabled page: %d", resp2.StatusCode)
	}
}

// A page that does not read misses frames instead of holding up Publish.
func TestHubSlowViewerDoesNotBlock(t *testing.T) {
	h := NewHub(func() []byte { return []byte(`{}`) })
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	waitViewers(t, h, 1)
	big := []byte(`"` + strings.Repeat("x", 64<<10) + `"`)
	done := make(chan struct{})
	go func() {
		for range 1000 {
			h.Publish(EventFrame, big)
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Publish blocked on a viewer that does not read")
	}
	h.Close()
}

// The page names only its own files: no external script, style or font.
func TestPageIsSelfContained(t *testing.T) {
	for _, name := range []string{"index.html", "app.js", "style.css"} {
		b, err := page.ReadFile("page/" + name)
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{"http://", "https://", "//cdn", "@import", "url("} {
			s := strings.ReplaceAll(string(b), "http://www.w3.org/2000/svg", "")
			if strings.Contains(s, bad) {
				t.Errorf("%s contains %q", name, bad)
			}
		}
	}
}
