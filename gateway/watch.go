package gateway

import (
	"bytes"
	"crypto/sha256"
	"os"
	"time"
)

// watch polls the configuration file and reloads it when its contents
// change, until Close. SIGHUP is the caller's (see ReloadFile); this
// covers editors and configuration management that only write the file.
func (g *Gateway) watch() {
	defer close(g.done)
	cfg := g.snap.Load().cfg
	path := cfg.File
	if path == "" {
		<-g.stop
		return
	}
	sum := fileSum(path)
	interval := cfg.Reload.Interval
	t := time.NewTimer(interval)
	defer t.Stop()
	for {
		select {
		case <-g.stop:
			return
		case <-t.C:
		}
		cfg := g.snap.Load().cfg
		if *cfg.Reload.Watch {
			if s := fileSum(path); s != nil && !bytes.Equal(s, sum) {
				sum = s
				g.log.Info("config file changed; reloading", "file", path)
				g.ReloadFile(path)
			}
		}
		t.Reset(g.snap.Load().cfg.Reload.Interval)
	}
}

// fileSum is the SHA-256 of a file, or nil if it cannot be read (a file
// being replaced is retried on the next tick).
func fileSum(path string) []byte {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	s := sha256.Sum256(data)
	return s[:]
}
