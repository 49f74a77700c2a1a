package server

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/gatehouse-dev/gatehouse/auth"
	"github.com/gatehouse-dev/gatehouse/state"
)

// openKeyRing opens the gateway's signing key ring of cfg over the server's state store, so
// generated keys outlive a restart and replicas sharing the store sign with the same keys.
// A nil cfg (no auth.keyring section) means no ring: it returns nil, nil.
func (s *Server) openKeyRing(cfg *auth.KeyRingConfig) (*auth.KeyRing, error) {
	if cfg == nil {
		return nil, nil //nolint:nilnil // no section, no ring: callers check the ring for nil
	}
	bus, _ := s.kv.(state.Bus) // nil: replicas follow an emergency rotation at their sync
	ring, err := auth.OpenKeyRing(context.Background(), *cfg, auth.KeyRingOptions{
		Store:  auth.NewStateKeyStore(s.kv, auth.DefaultKeyStoreKey),
		Logger: s.log,
		Now:    s.opts.Now,
		Bus:    bus,
	})
	if err != nil {
		return nil, fmt.Errorf("auth: keyring: %w", err)
	}
	return ring, nil
}

// swapKeyRing makes ring (nil: none) the server's key ring and closes the one it replaces.
// A reload opens the ring anew (key files are read again; generated keys are read back
// from the state store), so the old one is closed only once the new one serves.
func (s *Server) swapKeyRing(ring *auth.KeyRing) {
	if old := s.keyring.Swap(ring); old != nil {
		_ = old.Close() // Close always returns nil
	}
}

// keyRingKeys returns the public keys of the server's key ring, none without one.
func (s *Server) keyRingKeys() []json.RawMessage {
	ring := s.keyring.Load()
	if ring == nil {
		return nil
	}
	return ring.PublicKeys()
}

// KeyRing returns the gateway's signing key ring, nil when auth.keyring is not configured.
// It may change on reload; do not keep it.
func (s *Server) KeyRing() *auth.KeyRing { return s.keyring.Load() }
