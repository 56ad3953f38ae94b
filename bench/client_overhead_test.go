package bench

import (
	"net/http"
	"testing"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/tollgate-dev/tollgate/client"
)

// A retrying client's own cost per successful request (issue 7): each
// RoundTripper wraps a base that answers 200 at once (no network), so the
// figures are the wrapper's overhead. tollgate's Transport with no
// rate-limit fields in the response, and with draft-10 fields to parse;
// go-retryablehttp's RoundTripper with its defaults.

type cannedRT struct{ h http.Header }

func (c cannedRT) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Header: c.h, Body: http.NoBody, Request: r}, nil
}

var rtSink *http.Response

var draft10Fields = http.Header{
	"Ratelimit-Policy": {`"api";q=1000000000;w=1`},
	"Ratelimit":        {`"api";r=999999999;t=1`},
}

func benchRT(b *testing.B, rt http.RoundTripper) {
	req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1:8080/items/42", nil)
	b.ReportAllocs()
	for b.Loop() {
		resp, err := rt.RoundTrip(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatal(resp, err)
		}
		rtSink = resp
	}
}

func BenchmarkClientRTBare(b *testing.B) { benchRT(b, cannedRT{http.Header{}}) }

func BenchmarkClientRTTollgate(b *testing.B) {
	t, _ := client.New(client.Config{Transport: cannedRT{http.Header{}}})
	benchRT(b, t)
}

func BenchmarkClientRTTollgateDraft10(b *testing.B) {
	t, _ := client.New(client.Config{Transport: cannedRT{draft10Fields}})
	benchRT(b, t)
}

func BenchmarkClientRTRetryablehttp(b *testing.B) {
	c := retryablehttp.NewClient()
	c.Logger = nil
	c.HTTPClient = &http.Client{Transport: cannedRT{http.Header{}}}
	benchRT(b, &retryablehttp.RoundTripper{Client: c})
}
