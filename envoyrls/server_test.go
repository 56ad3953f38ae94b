package envoyrls

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// /json answers as envoyproxy/ratelimit's: the response in protobuf
// JSON, 200 when OK, 429 when over, 400 for a bad request; /healthcheck
// answers OK until the service stops serving.
func TestHTTPJSONAndHealthcheck(t *testing.T) {
	svc := newBadInputService(t, prometheus.NewRegistry())
	srv := httptest.NewServer(svc.HTTPHandler())
	defer srv.Close()
	post := func(body string) (int, string) {
		t.Helper()
		resp, err := http.Post(srv.URL+"/json", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	req := `{"domain":"edge","descriptors":[{"entries":[{"key":"remote_address","value":"10.0.0.9"}]}],"hitsAddend":3}`
	if code, body := post(req); code != 200 || !strings.Contains(body, `"overallCode":"OK"`) {
		t.Errorf("within: %d %s", code, body)
	}
	if code, body := post(req); code != 429 || !strings.Contains(body, `"overallCode":"OVER_LIMIT"`) {
		t.Errorf("over: %d %s", code, body)
	}
	for _, bad := range []string{`{"domain":`, `{"domain":"edge"}`, `{"domain":"edge","descriptors":[{"entries":[{"key":"k","value":"\udcff"}]}]}`} {
		if code, body := post(bad); code != 400 {
			t.Errorf("%s: %d %s, want 400", bad, code, body)
		}
	}
	get := func() int {
		resp, err := http.Get(srv.URL + "/healthcheck")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if c := get(); c != 200 {
		t.Errorf("healthcheck %d, want 200", c)
	}
	svc.SetServing(false)
	if c := get(); c != 500 {
		t.Errorf("healthcheck not serving %d, want 500", c)
	}
}
