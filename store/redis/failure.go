package redis

// When a call fails: whether to retry it, the breaker's short circuit,
// the failure mode's answer, and errors that name no key.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/redis/rueidis"
	"github.com/tollgate-dev/tollgate/failmode"
	"github.com/tollgate-dev/tollgate/internal/redact"
	"github.com/tollgate-dev/tollgate/limit"
)

// maxTries bounds the calls othersDeadline lets a decision make.
const maxTries = 4

// othersDeadline reports whether err, from a call under cctx, is a
// deadline that was not cctx's: the call waited for a connection attempt
// that another caller started under a shorter deadline (the eventual
// tier syncs with its interval as its deadline), and that attempt failed
// at it (or its connection was closed then: errAbandoned). The client
// shares one attempt among the callers that need the connection, and its
// failure with them; the command was never sent, so the call may be made
// again, up to maxTries in all (the eventual tier starts an attempt each
// interval, and a retry may join the next one). A deadline that has
// passed is taken as cctx's own (a connection's read deadline can fire
// just before cctx's timer): such a call may have been sent, and is not
// repeated.
func othersDeadline(cctx context.Context, err error) bool {
	if err == nil || cctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, errAbandoned) {
		return false
	}
	dl, ok := cctx.Deadline()
	return ok && time.Now().Before(dl)
}

// shortCircuit counts a decision the open breaker kept from Redis, and
// starts the background probe when one is due.
func (s *Store) shortCircuit() {
	s.stats.shortCircuit.Add(1)
	if !s.breaker.probeDue() {
		return
	}
	s.probeMu.Lock()
	if s.closing {
		s.probeMu.Unlock()
		s.breaker.probing.Store(false)
		return
	}
	s.bg.Add(1)
	s.probeMu.Unlock()
	client := s.conn.Load().client // the breaker opens only after calls on a connection
	go func() {
		defer s.bg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), s.probeTimeout())
		defer cancel()
		s.breaker.probed(client.Do(ctx, client.B().Ping().Build()).Error() == nil)
	}()
}

// probeTimeout bounds a probe: no caller waits for it, so it may take
// longer than a decision (a redial and handshake), but not long.
func (s *Store) probeTimeout() time.Duration { return max(s.cfg.Timeout, 250*time.Millisecond) }

// failedCall answers reqs, whose script call failed with err, and
// records the failure. A caller's context that ended is the caller's
// error. Anything else is a store failure answered by mode: Redis
// unreachable, slow or unavailable (counted by the breaker), or an error
// reply (a key holding another type, a script error: Redis is up, so the
// breaker is not charged). The keys of reqs are hashed in the log line
// of an error reply.
func (s *Store) failedCall(ctx context.Context, err error, mode failmode.Mode, reqs []limit.Request) (limit.Decision, error) {
	if ctx.Err() != nil {
		s.breaker.done(true)
		return limit.Decision{}, fmt.Errorf("redis: %w", err)
	}
	if !isReply(err) && !isLocal(err) {
		s.stats.failures.Add(1)
		if errors.Is(err, context.DeadlineExceeded) {
			s.stats.timeouts.Add(1)
		}
		s.breaker.done(false)
		return s.fail(ctx, mode, reqs)
	}
	s.breaker.done(true)
	s.stats.replyErrors.Add(1)
	if s.cfg.Logger != nil {
		s.log.Log(ctx, slog.LevelError, "redis: error reply; decision follows the failure mode",
			slog.String("mode", string(failmode.Of(mode))), slog.String("key", redact.Key(reqs[0].Key)),
			slog.String("error", hideKeys(err.Error(), reqs)))
	}
	return s.fail(ctx, mode, reqs)
}

// errShortReply is how a script reply with too few values is reported.
type errShortReply struct{ error }

// isLocal reports an error the store raised about a reply it could read
// (too few values, a key holding no state of the batch's algorithm): an
// error reply in effect.
func isLocal(err error) bool {
	var e errShortReply
	var n errNotState
	return errors.As(err, &e) || errors.As(err, &n)
}

// fail answers reqs by mode when Redis could not.
func (s *Store) fail(ctx context.Context, mode failmode.Mode, reqs []limit.Request) (limit.Decision, error) {
	switch mode {
	case failmode.Open:
		s.stats.failOpen.Add(1)
		q := reqs[0].Policy.Quota()
		return limit.Decision{Allowed: true, Limit: q.Limit, Remaining: q.Limit, Policy: reqs[0].Policy}, nil
	case failmode.Closed:
		s.stats.failClosed.Add(1)
		q := reqs[0].Policy.Quota()
		return limit.Decision{Limit: q.Limit, RetryAfter: s.cfg.BreakerCooldown, ResetAfter: s.cfg.BreakerCooldown, Policy: reqs[0].Policy}, nil
	}
	s.stats.failLocal.Add(1)
	if len(reqs) == 1 {
		d, err := s.local.Apply(ctx, reqs[0].Key, reqs[0].Policy, reqs[0].Cost)
		d.Policy = reqs[0].Policy
		return d, err
	}
	return s.local.ApplyAll(ctx, reqs)
}

// isReply reports an error the server answered with (a script error, a
// wrong type), as opposed to a failure to reach it. The replies of a
// server that cannot serve right now count as failures to reach it: a
// cluster redirection or an unavailable slot (MOVED, ASK, TRYAGAIN,
// CLUSTERDOWN), a server loading its data set (LOADING), busy running a
// long script (BUSY), a replica cut off from its master (MASTERDOWN), or
// a replica refusing writes (READONLY: the address now points at a
// replica, after a failover).
func isReply(err error) bool {
	re, ok := rueidis.IsRedisErr(err)
	if !ok {
		return false
	}
	_, moved := re.IsMoved()
	_, ask := re.IsAsk()
	return !moved && !ask && !re.IsTryAgain() && !re.IsClusterDown() && !re.IsLoading() &&
		!hasCode(re.Error(), "BUSY") && !hasCode(re.Error(), "MASTERDOWN") && !hasCode(re.Error(), "READONLY")
}

// hasCode reports whether the error reply msg has code as its first word
// (rueidis has no test for these codes; BUSYGROUP is not BUSY).
func hasCode(msg, code string) bool {
	rest, ok := strings.CutPrefix(msg, code)
	return ok && (rest == "" || rest[0] == ' ')
}

// keyError returns err about key with the key named only hashed (package
// internal/redact), in its own text and in err's: keys carry client IPs
// and API keys, and errors end up in logs.
func (s *Store) keyError(key string, err error) error {
	return &hiddenKeyError{
		msg: "key " + redact.Key(key) + ": " + redact.Keys(err.Error(), key),
		err: err,
	}
}

// hideKeys returns msg with the keys of reqs hashed. Only the client's
// keys are hashed: a Redis key (redisKey) holds its client key whole, so
// it reads "prefix{key#…}", with the very hash the line's key attribute
// has; hashing the Redis key too would name one key by two hashes.
func hideKeys(msg string, reqs []limit.Request) string {
	keys := make([]string, len(reqs))
	for i, r := range reqs {
		keys[i] = r.Key
	}
	return redact.Keys(msg, keys...)
}

type hiddenKeyError struct {
	msg string
	err error
}

func (e *hiddenKeyError) Error() string { return e.msg }
func (e *hiddenKeyError) Unwrap() error { return e.err }
