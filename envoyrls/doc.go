// Package envoyrls is Envoy's rate limit service
// (envoy.service.ratelimit.v3.RateLimitService, the API of
// envoyproxy/ratelimit) deciding with tollgate's stores and algorithms,
// configured by envoyproxy/ratelimit's YAML files, unchanged.
//
// A Service answers ShouldRateLimit over gRPC (Register also adds gRPC
// health checking and server reflection) and over HTTP (HTTPHandler:
// /json and /healthcheck). Limits are built from a directory of
// configuration files (LoadDir, Build) and swapped atomically
// (SetLimits); a Watcher reloads the directory when it changes. Metrics
// are envoyproxy/ratelimit's counters for Prometheus. The command
// `tollgate envoy-rls` runs it all.
//
// # Configuration
//
// The files are envoyproxy/ratelimit's, read as it reads them: every
// regular file under the directory (RUNTIME_ROOT/RUNTIME_SUBDIRECTORY/config
// there), those named .* and those in directories named .* included
// unless RUNTIME_IGNOREDOTFILES=true (Options.DotFiles; the library's
// default skips them: on a Kubernetes ConfigMap mount, whose ..timestamp
// directory holds every file a second time, set it, as for
// envoyproxy/ratelimit), one domain per file, two files with one domain
// an error unless Options.MergeDomains (MERGE_DOMAIN_CONFIG=true: their
// descriptors merged, a composite key in both an error); the keys domain,
// descriptors, key, value (a trailing '*' makes it a prefix, a '*'
// elsewhere is a plain character), rate_limit with unit (second, minute,
// hour, day, week, month = 30 days, year = 365 days, any case) and
// requests_per_unit, unlimited, name, replaces, shadow_mode, quota_mode,
// detailed_metric, value_to_metric and share_threshold; any other key
// (metadata included, as the pinned version refuses it) and any leaf that
// is not a string, an integer, a boolean or null (requests_per_unit: 1.5)
// is refused. Messages are envoyproxy/ratelimit's, prefixed with
// file:line:col. The version followed is the one bench/go.mod pins; the
// parity suite (cmd/tollgate/envoy_parity_test.go) replays its recorded
// answers.
//
// By default a limit is a fixed window of its unit aligned to the epoch
// (limit.FixedWindow), as envoyproxy/ratelimit counts, so a migration
// changes no decision. tollgate's extension key tollgate_algorithm, beside
// unit in a rate_limit, chooses another algorithm for the same
// requests_per_unit and unit: sliding_window, sliding_log, token_bucket
// (burst = requests_per_unit) or leaky_bucket (policing). A file using it
// is tollgate's: envoyproxy/ratelimit refuses unknown keys.
//
// # Semantics matched
//
//   - Matching (Limits.Match) is GetLimit's: per level the child
//     "key_value", else the first wildcard child (in file order) whose
//     prefix begins "key_value", else the child "key"; the limit at the
//     level of the last entry; none when the descriptor is longer than
//     the tree or a level misses.
//   - Counters are per descriptor value: two values matching the same
//     "key" (or wildcard) count apart, unless share_threshold shares the
//     wildcard's counter. A limit of envoyproxy/ratelimit's algorithm is
//     counted as it counts (Charging): an integer per key and window,
//     incremented by the hits whether or not they are over the limit, on
//     Redis with INCRBY and EXPIRE (the unit plus up to
//     EXPIRATION_JITTER_MAX_SECONDS) pipelined in one round trip for all
//     of a request's descriptors, no script; the key is
//     envoyproxy/ratelimit's: CACHE_KEY_PREFIX, the domain, "_", each
//     entry's key and value each followed by "_", and the start of the
//     unit's window in Unix seconds. So the counts survive an edit of the
//     limit, and a tollgate replacing envoyproxy/ratelimit on its Redis
//     carries its counts on (and back). Each descriptor is charged on its
//     own, as envoyproxy/ratelimit does by default; with
//     STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT the counts are read first
//     (GET) and, when one descriptor would go over, only those going
//     over are incremented, as there (two round trips, not atomic
//     either). is_negative_hits is not read (the hits are charged), as
//     the pinned envoyproxy/ratelimit does not read it.
//   - LOCAL_CACHE_SIZE_IN_BYTES (Charging.LocalCacheBytes) is off by
//     default: every decision reads Redis, so deleting a key unblocks its
//     client at once. When set, a key found over its limit is answered
//     OVER_LIMIT from memory, uncounted, until its window ends.
//   - A Redis that fails or takes longer than REDIS_TIMEOUT (10s) fails
//     the call, as there: gRPC Unknown, /json 400, and Envoy's
//     failure_mode_deny decides. TOLLGATE_REDIS_ON_ERROR (open, closed or
//     local; Charging.OnError) answers instead. Every such answer is
//     counted in tollgate_rls_store_fallbacks_total{answer} and logged at
//     most once a second.
//   - hits_addend: a descriptor's own (zero only looks), else the
//     request's, where zero means one.
//   - A descriptor matching nothing, an unknown domain, an empty
//     descriptor: OK without current_limit. unlimited: OK with
//     limit_remaining 4294967295, never replaced. A rate_limit whose name
//     another matched descriptor replaces is skipped (a bare OK).
//     requests_per_unit 0 refuses all.
//   - overall_code is OVER_LIMIT when a descriptor is over its limit and
//     in neither shadow_mode (its status OK, counted shadow_mode) nor
//     quota_mode or Config.QuotaMode (QUOTA_MODE: its status OK with
//     current_limit, limit_remaining 0 and no duration_until_reset);
//     Config.ShadowMode (SHADOW_MODE) then answers OK, the statuses
//     unchanged.
//   - An OVER_LIMIT status has limit_remaining 0. duration_until_reset is
//     envoyproxy/ratelimit's CalculateReset: whole seconds from now to
//     the end of the unit's window aligned to the epoch (1 to the unit's
//     length); for tollgate_algorithm's policies the decision's, rounded
//     up to a second.
//   - A descriptor's own limit (the route's limit override) is applied
//     as a fixed window of its unit, never in shadow mode, and only in a
//     configured domain: elsewhere the descriptor is unmatched.
//   - Response headers: none by default (LIMIT_RESPONSE_HEADERS_ENABLED
//     unset); HeadersLegacy (LIMIT_RESPONSE_HEADERS_ENABLED=true) is
//     envoyproxy/ratelimit's RateLimit-Limit, -Remaining and -Reset
//     (renamed by LIMIT_*_HEADER) of the last descriptor over its limit,
//     else the first with the least remaining, Reset as
//     duration_until_reset.
//   - Counters total_hits, over_limit, near_limit (NEAR_LIMIT_RATIO, 0.8),
//     within_limit and shadow_mode are counted in hits and split between
//     near and over limit with envoyproxy/ratelimit's arithmetic.
//   - /json: 200 OK, 429 OVER_LIMIT, 400 a bad request; /healthcheck "OK".
//     Ports 8081 (gRPC), 8080 (HTTP), 6070 (debug: /metrics here, and
//     Go's profiles under /debug/pprof/ as there).
//
// # Differences, deliberate
//
//   - A limit with tollgate_algorithm is decided by the Store (a script on
//     Redis), never charging a refusal, under a hashed key of the domain,
//     the entries, the algorithm and the window (not the limit's figures:
//     an edit keeps its state); with STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT
//     those limits are charged all or none (limit.Store.ApplyAll). Their
//     failures follow the Store's failure mode (TOLLGATE_REDIS_ON_ERROR,
//     else local), not the call's error. Without Redis (or on the eventual
//     tier) envoyproxy/ratelimit's counters are kept in the Store, each a
//     fixed window of its unit so large that every hit is counted.
//   - The local cache's entries end with their window (upstream's live a
//     whole unit from when they are set, past the window their key names)
//     and its bytes are bounded by its own count (a key and 64 bytes an
//     entry), not freecache's.
//   - The counter keys hold the descriptor values raw, as
//     envoyproxy/ratelimit's do (the price of sharing its counts), and
//     live a unit plus the jitter; a value longer than MaxBytes (8 KiB: a
//     request header a client chose) is counted under "sha256:" and its
//     digest instead, so that no key, local cache entry or metric label
//     is as long as what a client sent. The answers are upstream's; only
//     such a value's count is not shared with envoyproxy/ratelimit's.
//   - A Redis that cannot be reached at start is not fatal: the service
//     starts and fails its calls until it connects (envoyproxy/ratelimit
//     exits). No per-second Redis (REDIS_PERSECOND_*), no memcached.
//   - Bad requests are InvalidArgument before anything is counted: an empty
//     domain or descriptor list (envoyproxy/ratelimit: Unknown), more than
//     Config.MaxDescriptors descriptors (256) or MaxEntries entries (64), a
//     domain or key over MaxBytes (8 KiB), a domain, key or value not UTF-8,
//     a hits_addend over MaxHitsAddend (2^32-1), a limit override without a
//     unit in a configured domain (envoyproxy/ratelimit panics there). All
//     of these come from Envoy's configuration, not from a client (a value a
//     client sends is counted whatever its length, as above; one not UTF-8
//     fails upstream's decoding too). Malformed protobuf on the wire is
//     gRPC's Internal. Envoy treats every error alike (failure_mode_deny
//     decides), so the status code is no answer a client sees; over /json
//     both answer 400, with the reason in tollgate's body where upstream
//     sends "Bad Request". The parity suite compares a failed call as failed
//     and a /json error by its status.
//   - tollgate's draft-10 headers (RateLimit-Policy and RateLimit, one
//     item per limited descriptor, named by the rate_limit's name or its
//     configured path, never by a request value) are opt-in:
//     HeadersDraft10, TOLLGATE_RESPONSE_HEADERS=draft10. Both styles
//     are written by the rule engine's one field writer (rules'
//     AppendTrio, AppendRateLimitMember), in the upstream's spellings.
//   - Metric labels are the configured descriptor paths; with
//     detailed_metric or value_to_metric the request's path, for at most
//     MaxDetailed distinct ones. The dynamic metadata of
//     RESPONSE_DYNAMIC_METADATA and the metadata key are not sent.
//   - Metrics are Prometheus counters on the debug listener's /metrics
//     (6070), not statsd, nor PROMETHEUS_ADDR's 9090.
//   - No counting on the answer (tollgate's rules[].count: only failed
//     logins, say): Envoy asks before it proxies the request and never
//     reports the upstream's answer, so there is nothing to charge. A key
//     count or tollgate_count, in a descriptor or a rate_limit, is refused
//     by name at load (file:line:col), as forward-auth refuses a rule with
//     count; count where the request is served (tollgate serve). Nor are
//     there penalties: envoyproxy/ratelimit's files have no way to ask for
//     one.
//   - A known key in the wrong place (shadow_mode inside rate_limit, unit
//     in a descriptor) is refused; envoyproxy/ratelimit ignores it, so the
//     setting silently does nothing there.
//   - `tollgate check -envoy-rls DIR` reads the directory as the service
//     does with RUNTIME_IGNOREDOTFILES=true (subdirectories included,
//     files and directories named .* skipped); upstream's
//     config_check_cmd reads its top level only, dot files included. Both
//     refuse the same files (TestEnvoyRLSCheckAgreesWithUpstream), but for
//     the known keys in the wrong place above, which only tollgate
//     refuses (at start, or at a reload: the running configuration kept).
//   - xDS configuration is not supported. A change is seen by polling every
//     100 ms and loaded once it has stayed the same 100 ms (WatchConfig),
//     0.1 to 0.3 s after it is made, not on each inotify event; a bad
//     version is reported once and the running configuration kept, and so is
//     a file that changed while it was read (internal/stableread). Replace
//     files by rename (as Kubernetes updates a mounted ConfigMap): a writer
//     in place that pauses for longer than the settling time is loaded half
//     written.
//
// The environment variables of envoyproxy/ratelimit that `tollgate
// envoy-rls` reads are listed in its help; every other one of its
// settings.go, when set, is named at start: an error when ignoring it
// would serve something else than asked (GRPC_UDS, gRPC server TLS,
// CONFIG_TYPE other than FILE, BACKEND_TYPE memcache), a warning
// otherwise (statsd, tracing, pool sizes, RESPONSE_DYNAMIC_METADATA...).
package envoyrls
