package redis

import (
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"strings"

	"github.com/redis/rueidis"
	"github.com/tollgate-dev/tollgate/limit"
)

//go:embed lua/*.lua
var luaFiles embed.FS

func luaFile(name string) string {
	b, err := luaFiles.ReadFile("lua/" + name + ".lua")
	if err != nil {
		panic("redis: embedded script missing: " + name) // a build defect, not input
	}
	return string(b)
}

// width is the number of values of one decision in a script's reply:
// allowed, remaining, reset, retry (-1: never), delay, idle, next unit.
// A one-request script follows it with now (µs), or, when forced (Sync),
// with the state's three words and now.
const width = 7

// scripts holds the five one-request scripts, indexed by limit.Algorithm,
// their SHA-1 digests (for EVALSHA in a pipeline: ApplyEach on a
// cluster), the all-or-nothing script for ApplyAll, the each-on-its-own
// script for ApplyEach and the token-bucket batch script.
type scripts struct {
	one    [6]*rueidis.Lua
	oneSHA [6]string
	all    *rueidis.Lua
	each   *rueidis.Lua
	many   *rueidis.Lua // token buckets, several in one call (batch.go)
}

// scriptSource returns the source of the one-request script for alg.
func scriptSource(alg limit.Algorithm) string {
	if alg == limit.AlgTokenBucket {
		return luaFile("token_bucket_one")
	}
	var b strings.Builder
	b.WriteString(luaFile("prelude"))
	name := alg.String()
	b.WriteString(luaFile(name))
	if alg == limit.AlgSlidingLog {
		b.WriteString("local IS_LOG = true\n")
		b.WriteString(strings.ReplaceAll(luaFile("one"), "ALGORITHM", "(nil)"))
	} else {
		b.WriteString("local IS_LOG = false\nlocal sliding_log\n")
		b.WriteString(strings.ReplaceAll(luaFile("one"), "ALGORITHM", name))
	}
	return b.String()
}

// allSource returns the source of the ApplyAll script.
func allSource() string { return batchSource("all") }

// eachSource returns the source of the ApplyEach script.
func eachSource() string { return batchSource("each") }

// batchSource is the prelude, every algorithm, and the batch script name.
func batchSource(name string) string {
	var b strings.Builder
	b.WriteString(luaFile("prelude"))
	for _, n := range []string{"fixed_window", "sliding_log", "sliding_window", "token_bucket", "leaky_bucket"} {
		b.WriteString(luaFile(n))
	}
	b.WriteString(luaFile(name))
	return b.String()
}

func newScripts() *scripts {
	s := &scripts{all: rueidis.NewLuaScript(allSource()), each: rueidis.NewLuaScript(eachSource()),
		many: rueidis.NewLuaScript(luaFile("token_bucket_many"))}
	for _, a := range []limit.Algorithm{limit.AlgFixedWindow, limit.AlgSlidingLog, limit.AlgSlidingWindow, limit.AlgTokenBucket, limit.AlgLeakyBucket} {
		src := scriptSource(a)
		s.one[a] = rueidis.NewLuaScript(src)
		sum := sha1.Sum([]byte(src))
		s.oneSHA[a] = hex.EncodeToString(sum[:])
	}
	return s
}

// ScriptSource returns the Lua source of the one-request script for alg, as
// the store loads it: for inspection, and for measuring the server's
// EVALSHA ceiling with redis-benchmark. Its arguments are KEYS[1] = the
// Redis key, ARGV = now in µs (-1: server TIME), TTL floor in ms, cost,
// force (0/1), and four parameters: limit and window (µs) for the
// windows, emission interval (µs) and burst for the token bucket,
// interval, burst, mode (0 shape, 1 police) and delay for the leaky
// bucket. It returns "" for an unknown algorithm.
func ScriptSource(alg limit.Algorithm) string {
	switch alg {
	case limit.AlgFixedWindow, limit.AlgSlidingLog, limit.AlgSlidingWindow, limit.AlgTokenBucket, limit.AlgLeakyBucket:
		return scriptSource(alg)
	}
	return ""
}
