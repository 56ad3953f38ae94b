package client

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// TestClientCredentialsTokenFetchedOnce: 200 API calls from 20 goroutines,
// some refused and retried, through one x/oauth2 client-credentials source
// wrapped in ReuseTokenSourceWithExpiry, reach the token endpoint once
// (twice on the wire: its first answer is a 429 the Transport retries).
func TestClientCredentialsTokenFetchedOnce(t *testing.T) {
	clock := newFakeClock()
	var tokenWire, tokensIssued atomic.Int64
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tokenWire.Add(1) == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		if id, secret, ok := r.BasicAuth(); !ok || id != "svc" || secret != "pw" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != "client_credentials" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		tokensIssued.Add(1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"access_token":"tok-1","token_type":"Bearer","expires_in":3600}`)
	}))
	defer tokens.Close()

	var apiWire, refused atomic.Int64
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := apiWire.Add(1)
		if r.Header.Get("Authorization") != "Bearer tok-1" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if n%5 == 0 {
			refused.Add(1)
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
		}
	}))
	defer api.Close()

	tokenHTTP := mustClient(t, clock.config())
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, tokenHTTP)
	cc := clientcredentials.Config{ClientID: "svc", ClientSecret: "pw", TokenURL: tokens.URL, AuthStyle: oauth2.AuthStyleInHeader}
	src := oauth2.ReuseTokenSourceWithExpiry(nil, cc.TokenSource(ctx), time.Minute)
	cfg := clock.config()
	cfg.MaxAttempts = 10
	cfg.Transport = &oauth2.Transport{Source: src, Base: http.DefaultTransport}
	c := mustClient(t, cfg)

	var wg sync.WaitGroup
	var ok atomic.Int64
	for range 20 {
		wg.Go(func() {
			for range 10 {
				resp, err := c.Get(api.URL)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					ok.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if ok.Load() != 200 {
		t.Errorf("%d of 200 API calls succeeded", ok.Load())
	}
	if refused.Load() == 0 {
		t.Error("no API call was refused: the retry path was not exercised")
	}
	if tokensIssued.Load() != 1 || tokenWire.Load() != 2 {
		t.Errorf("token endpoint: %d tokens issued over %d requests, want 1 over 2", tokensIssued.Load(), tokenWire.Load())
	}
	t.Logf("API: 200 calls, %d on the wire (%d refused); token endpoint: %d requests, %d token", apiWire.Load(), refused.Load(), tokenWire.Load(), tokensIssued.Load())
}
