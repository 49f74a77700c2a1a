package server

import (
	"context"
	"fmt"

	"github.com/gatehouse-dev/gatehouse/auth"
)

// openRevocations opens the process's revocation list over the server's state store, so
// replicas sharing the store share it. It is opened once: the list lives in the store, and a
// reload only applies new settings (Revocations.Configure). Every authenticator the server
// builds consults it. A nil cfg means every default: revocation is always on.
func (s *Server) openRevocations(cfg *auth.RevocationConfig) error {
	rev, err := auth.OpenRevocations(context.Background(), s.kv, cfg, auth.RevocationOptions{
		Logger: s.log.With("component", "revocations"),
		Now:    s.opts.Now,
	})
	if err != nil {
		return fmt.Errorf("auth: revocation: %w", err)
	}
	s.revocations = rev
	s.liveness = auth.NewLiveness(rev, s.opts.Now)
	return nil
}

// closeRevocations stops following the revocation list; it is safe to call more than once.
func (s *Server) closeRevocations() {
	s.liveness.Close()
	if s.revocations != nil {
		_ = s.revocations.Close() // Close always returns nil
	}
}

// Revocations returns the process's revocation list.
func (s *Server) Revocations() *auth.Revocations { return s.revocations }
