// Package config is the model of tollgate's one YAML file and its strict
// decoder.
//
// [Load] and [Parse] decode a file into a [Config]: an unknown key, a value
// of the wrong type, a duplicate key or an impossible value (a zero rate, a
// negative burst, an unknown algorithm, a malformed CIDR, a file that cannot
// be read) is an [*Error] carrying file:line:column, and every problem in the
// file is reported at once, joined with errors.Join and sorted by position.
// Defaults are filled after decoding ([Config.Defaults]), so a Config
// returned without error is complete and valid. What is valid but probably
// not meant is a warning ([Config.Warnings]): a file without routes sends
// every request to the built-in demo origin, and `tollgate check` and
// `tollgate serve` say so on stderr.
//
// # Consistency tiers
//
// A rule may choose where its counters live (see rules.Rule for details):
//
//	consistency: strict     # one atomic script on store.redis per decision
//	on_error: closed        # strict and gossip only: open, closed or local
//	                        # while Redis is down, or until a gossip
//	                        # gateway is warm (default: the top-level one)
//	consistency: eventual   # decided in process, synced with store.redis
//	sync_interval: 100ms    # eventual only (default 100ms, at least 10ms)
//	consistency: gossip     # decided in process, shared with the other
//	                        # gateways by store.gossip (no central store)
//	consistency: local      # in process only, nothing shared
//	nodes: 3                # local only: each of 3 gateways enforces 1/3
//
// The failure mode, what a rule answers while its store fails, is the
// top-level on_error: open (allow), closed (refuse) or local (decide in
// this process alone; the default). It is one setting with one vocabulary
// because it belongs to the rules, not to a store: it applies to every
// rule, can change on reload, and `tollgate check` prints each rule's.
// The old spellings (on_store_error: allow|refuse, store.redis.on_error,
// fail_open, fail_closed) are refused at their line, naming what to write.
//
// A rule without consistency uses the store of the store: section, exactly
// as before tiers existed. strict and eventual need store.redis, gossip
// needs store.gossip (beside memory or redis). A request
// matched by rules of several tiers is charged tier by tier, cheapest first
// (local, eventual, gossip, the store: section's, strict), stopping at the first
// refusal: see package rules for what all-or-nothing means across tiers.
// examples/consistency-tiers.yaml uses all three.
//
// The package knows nothing about HTTP stacks and opens no store. Each
// component owns its part of the file, as package rules owns the rules:
// the store.gossip section is gossipconf.Config (store/gossip/gossipconf),
// store.redis is redisconf.Config (store/redis/redisconf), the failure
// mode is a failmode.Mode, and an adaptive controller's settings are
// adaptiveconf's (adaptive/adaptiveconf). Each of those packages holds its
// settings' defaults and checks, reports problems as path errors
// (*fielderr.Error, like *rules.FieldError) that [Parse] places at
// file:line, and imports no driver: parsing a file pulls in neither the
// Redis client, nor memberlist, nor DDSketch (a test runs go list to keep
// it so). The decision, over a registry of backends: the settings are
// plain types beside their component, in a package of their own, so that
// each setting is written once and read by name, with no lookup. [Parse]
// runs three steps in order: the defaults, the loading of what the file
// names besides itself (the gossip key, Redis's password and TLS files),
// and a validation that changes nothing.
//
// Package storeopen opens the stores a Config names. The gateway (package
// gateway) builds its listeners, routes and rule engine from a Config.
// [Default] is the embedded configuration `tollgate serve` runs when given
// no file.
package config
