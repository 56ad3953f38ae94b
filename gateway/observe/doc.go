// Package observe is what the gateway tells about its traffic: the
// Prometheus collectors (Metrics, with the per-rule decision counters of
// an Observer, the HTTP/2 counters and the stores' collectors), the access
// log on both data paths (AccessLog), the sampled, capped refusal log
// (RefusalLog), the redacting, rate-limited warning log for fasthttp's,
// net/http's and the proxy's messages (WarnLog), and the rules' heavy
// hitters the dashboard shows (HitterSet), their keys shown as
// configured (ShowKey). Label values are bounded by the configuration,
// never client keys. It knows nothing of routes, snapshots or the
// gateway that uses it.
package observe
