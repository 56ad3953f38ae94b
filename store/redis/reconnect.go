package redis

import (
	"context"
	"crypto/tls"
	"log/slog"
	"time"

	"github.com/redis/rueidis"
)

// Credentials are the connection settings a Reconnect may change: what a
// secret file's or a certificate's rotation changes, not where Redis is.
type Credentials struct {
	// Username and Password are Config.Username and Config.Password.
	Username, Password string
	// TLS is Config.TLS; nil means plain TCP.
	TLS *tls.Config
}

// oldClientGrace is how long a replaced connection stays open for the
// decisions already sent on it.
const oldClientGrace = time.Second

// Reconnect connects with c in place of the store's credentials and TLS
// settings, for a reload that changed them. It makes a new connection and
// waits for it (its dial and handshake timeouts bound the wait, see New);
// once it is made, decisions go through it and the old connection is
// closed a second later. When it cannot be made, the store keeps its
// connection and its settings and the error says why (the password
// hidden; IsConfigError tells a refusal from a Redis that is down). The
// breaker, the over-limit cache and the fallback store are kept.
func (s *Store) Reconnect(c Credentials) error {
	s.probeMu.Lock()
	if s.closing {
		s.probeMu.Unlock()
		return ErrNotConnected
	}
	s.probeMu.Unlock()
	cfg := s.cfg // never written after New: only the credentials change
	cfg.Username, cfg.Password, cfg.TLS = c.Username, c.Password, c.TLS
	opt := clientOption(cfg)
	client, err := rueidis.NewClient(opt)
	if err != nil {
		return hideSecret(err, c.Password)
	}
	s.probeMu.Lock()
	if s.closing {
		s.probeMu.Unlock()
		client.Close()
		return ErrNotConnected
	}
	s.opt, s.secret = opt, c.Password
	old := s.conn.Swap(&conn{client: client, cluster: client.Mode() == rueidis.ClientModeCluster})
	s.dialErr.Store(nil)
	s.probeMu.Unlock()
	if old != nil {
		time.AfterFunc(oldClientGrace, old.client.Close)
	}
	s.log.Log(context.Background(), slog.LevelInfo, "redis: reconnected with new credentials or TLS settings",
		slog.Any("addrs", cfg.Addrs))
	return nil
}
