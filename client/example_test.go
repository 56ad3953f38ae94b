package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/tollgate-dev/tollgate/client"
)

// A client that retries a refused request after the wait the server asks
// for. Here the server refuses the first request with "Retry-After: 0".
func ExampleNewClient() {
	var hits atomic.Int64
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) == 1 {
			w.Header().Set("Retry-After", "0")
			http.Error(w, "slow down", http.StatusTooManyRequests)
			return
		}
		fmt.Fprintln(w, "hello")
	}))
	defer api.Close()

	c, err := client.NewClient(client.Config{
		MaxAttempts: 4,                // the first try and up to 3 retries
		MaxWait:     30 * time.Second, // give up on servers that ask for longer
	})
	if err != nil {
		panic(err)
	}
	resp, err := c.Get(api.URL)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Printf("%d %s", resp.StatusCode, body)
	fmt.Println("requests on the wire:", hits.Load())
	// Output:
	// 200 hello
	// requests on the wire: 2
}

// A request with a deadline is not left waiting for a retry it cannot
// make: the Transport returns at once with a WaitError carrying the wait
// the server asked for.
func ExampleWaitError() {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "120")
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer api.Close()

	c, _ := client.NewClient(client.Config{MaxWait: 5 * time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, api.URL, nil)
	_, err := c.Do(req)

	var werr *client.WaitError
	if errors.As(err, &werr) {
		fmt.Println("server asks to wait", werr.Wait, "after status", werr.StatusCode)
	}
	fmt.Println("deadline exceeded:", errors.Is(err, context.DeadlineExceeded))
	// Output:
	// server asks to wait 2m0s after status 503
	// deadline exceeded: true
}

// Machine-to-machine calls with OAuth2 client credentials: x/oauth2 caches
// the token (ReuseTokenSourceWithExpiry refreshes it a minute before it
// expires) and adds it to each attempt; the tollgate Transport paces and
// retries. The token endpoint is called once for all the API calls, and
// token requests are themselves retried on 429/503.
func Example_clientCredentials() {
	var tokenCalls atomic.Int64
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tokenCalls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"access_token":"s3cr3t","token_type":"Bearer","expires_in":3600}`)
	}))
	defer tokens.Close()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cr3t" {
			w.WriteHeader(http.StatusUnauthorized)
		}
	}))
	defer api.Close()

	// The token endpoint is reached through a retrying client too.
	tokenHTTP, _ := client.NewClient(client.Config{})
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, tokenHTTP)
	cc := clientcredentials.Config{
		ClientID:     "billing-service",
		ClientSecret: "not-a-real-secret",
		TokenURL:     tokens.URL,
		AuthStyle:    oauth2.AuthStyleInHeader,
	}
	src := oauth2.ReuseTokenSourceWithExpiry(nil, cc.TokenSource(ctx), time.Minute)

	// Retry outside, OAuth2 inside: every attempt carries a valid token.
	c, _ := client.NewClient(client.Config{
		Transport: &oauth2.Transport{Source: src, Base: http.DefaultTransport},
	})
	for range 20 {
		resp, err := c.Get(api.URL)
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			panic(resp.Status)
		}
	}
	fmt.Println("API calls: 20, token requests:", tokenCalls.Load())
	// Output: API calls: 20, token requests: 1
}

func ExampleParseRetryAfter() {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, v := range []string{
		"120",                            // delay-seconds
		"Mon, 30 Nov 2026 12:00:30 GMT",  // IMF-fixdate
		"Monday, 30-Nov-26 12:01:00 GMT", // RFC 850
		"Mon Nov 30 12:00:05 2026",       // asctime
		"-1",                             // malformed: ignored
	} {
		d, ok := client.ParseRetryAfter(v, now)
		fmt.Println(d, ok)
	}
	// Output:
	// 2m0s true
	// 30s true
	// 1m0s true
	// 5s true
	// 0s false
}

func ExampleParseAllowance() {
	h := http.Header{}
	h.Set("RateLimit-Policy", `"burst";q=100;w=60, "daily";q=1000;w=86400`)
	h.Set("RateLimit", `"burst";r=40;t=12, "daily";r=0;t=3600`)
	a, ok := client.ParseAllowance(h, time.Now())
	fmt.Println(a.Policy, a.Remaining, a.Reset, ok)
	// Output: daily 0 1h0m0s true
}
