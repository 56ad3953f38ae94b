package storeopen

import (
	"fmt"

	"github.com/tollgate-dev/tollgate/config"
	"github.com/tollgate-dev/tollgate/store/redis"
)

// Rotate brings the Redis store's credentials and TLS settings to sc's,
// for a reload of a section t is the Same as: when they changed (the
// password file or variable, the user, a certificate or CA file), the
// store connects anew with them and swaps the connection in, keeping its
// counts, breaker and caches. When the new connection cannot be made
// (a certificate not trusted, a password refused, Redis down) the error
// says why, the password hidden, and the old connection keeps serving:
// the reload is to be refused. Nothing changed, or no Redis: nil.
func (t *Set) Rotate(sc config.Store) error {
	r := sc.Redis
	if t.redis == nil || r == nil {
		return nil
	}
	t.secMu.Lock()
	defer t.secMu.Unlock()
	if r.CredentialsSum() == t.section.Redis.CredentialsSum() {
		return nil
	}
	err := t.redis.Reconnect(redis.Credentials{Username: r.Username(), Password: r.Password(), TLS: r.TLSConfig()})
	if err != nil {
		return fmt.Errorf("store.redis: cannot connect with the new credentials or TLS settings: %w", err)
	}
	t.section = sc
	return nil
}
