package config

import (
	"strings"
	"testing"
)

// TestForgeableExemptionWarnings: an except entry whose conditions are
// only what a client sends as it likes (a header, a listed value of a
// header or query parameter that is no credential, of ja4), with nothing
// bound to the client, is warned about at its line, naming the rule and
// the claim, and never quoting a configured header value; an entry with a
// client-bound condition (clients, countries, asns), a secret (keys of an
// API-key header or query parameter, a credential header's value, a
// rule's own key with such a part) or only what is requested (a path, a
// host, a method) is not.
func TestForgeableExemptionWarnings(t *testing.T) {
	src := `routes: [{path: /, upstream: "http://127.0.0.1:3000"}]
geoip: {country: geo.mmdb, asn: geo.mmdb}
except:
  - headers: [{name: x-internal}]
  - methods: [GET, HEAD]
    paths: [/healthz]
rules:
  - name: api
    key: [header:X-Tenant]
    except:
      - headers: [{name: User-Agent, value: "monitor-s3cr3t/1.0"}]
      - keys: [acme]
      - key: query:partner
        keys: [p1]
      - key: ja4
        keys: [t13d1516h2_8daaf6152771_e5627efa2ab1]
      - headers: [{name: X-Internal}]
        paths: [/internal]
      - key: header:X-API-Key
        keys: [k-internal]
      - key: query:api_key
        keys: [k-internal]
      - headers: [{name: Authorization, value: "Bearer t0ken"}]
      - headers: [{name: X-Internal}]
        clients: [10.0.0.0/8]
      - headers: [{name: X-Internal}]
        countries: [DE]
      - headers: [{name: X-Internal}]
        asns: [64496]
      - hosts: [static.example.com]
      - key: country
        keys: [DE]
    policies: [{rate: 1/s}]
  - name: per-key
    key: [header:X-API-Key, path]
    except:
      - keys: ["k-internal\x1f/a"]
    policies: [{rate: 1/s}]
`
	dir := t.TempDir()
	writeGeo(t, dir)
	c, err := Parse(dir+"/c.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]string{
		4:  `warning: except[0]: the top-level except (every rule) exempts every client that sends a header X-Internal: any client can`,
		11: `warning: rules[0].except[0]: rule "api" exempts every client that sends the header User-Agent with the value configured: any client can`,
		12: `warning: rules[0].except[1]: rule "api" exempts every client that sends a listed value of header:X-Tenant: any client can`,
		13: `warning: rules[0].except[2]: rule "api" exempts every client that sends a listed value of query:partner: any client can`,
		17: `warning: rules[0].except[4]: rule "api" exempts every client that sends a header X-Internal: any client can`,
	}
	// The ja4 key list (line 15) never exempts without tls, and says
	// only that (TestJA4Warnings); over TLS it is forgeable
	// (TestForgeableJA4KeyList).
	const ja4 = "warning: rules[0].except[3].key: listen has no tls"
	ws := c.Warnings()
	if len(ws) != len(want)+1 {
		t.Fatalf("%d warnings, want %d: %v", len(ws), len(want)+1, ws)
	}
	for _, w := range ws {
		if w.Pos.Line == 15 && strings.HasPrefix(w.Msg, ja4) {
			continue
		}
		if !strings.HasPrefix(w.Msg, want[w.Pos.Line]) || !strings.Contains(w.Msg, "exempt by a secret") {
			t.Errorf("line %d: %q, want %q", w.Pos.Line, w.Msg, want[w.Pos.Line])
		}
		if strings.Contains(w.Msg, "s3cr3t") {
			t.Errorf("a configured header value is quoted: %q", w.Msg)
		}
	}
}

// TestForgeableJA4KeyList: over TLS, a list of JA4 fingerprints exempts
// every client whose TLS stack has one, and is warned about.
func TestForgeableJA4KeyList(t *testing.T) {
	c, err := Parse("c.yaml", []byte(`routes: [{path: /, upstream: "http://127.0.0.1:3000"}]
rules:
  - name: r
    except:
      - key: ja4
        keys: [t13d1516h2_8daaf6152771_e5627efa2ab1]
    policies: [{rate: 1/s}]
`))
	if err != nil {
		t.Fatal(err)
	}
	c.Listen.TLS = &TLS{} // the check reads only whether there is one
	ws := c.exceptWarnings()
	if len(ws) != 1 || ws[0].Pos.Line != 5 || !strings.Contains(ws[0].Msg, `rules[0].except[0]: rule "r" exempts every client that sends a listed value of ja4 (a TLS stack's fingerprint, which any client copies)`) {
		t.Fatalf("warnings %v", ws)
	}
}

// credentialName tells a secret's header or query parameter by its name.
func TestCredentialName(t *testing.T) {
	for name, want := range map[string]bool{
		"X-API-Key": true, "Authorization": true, "Proxy-Authorization": true, "X-Auth-Token": true,
		"api_key": true, "access_token": true, "Cookie": true, "X-Hub-Signature-256": true, "X-Client-Secret": true,
		"User-Agent": false, "X-Tenant": false, "X-Internal": false, "partner": false, "X-Forwarded-For": false, "Referer": false,
	} {
		if got := credentialName(name); got != want {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}
}
