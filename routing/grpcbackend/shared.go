package grpcbackend

import (
	"errors"
	"log/slog"
	"reflect"
	"sync/atomic"
	"time"
)

// share is what lets backends of successive configurations hold one connection.
type share struct {
	refs   *atomic.Int64 // holders of the connection, shared with every renewal
	closed atomic.Bool   // Close ran
}

func newConnRefs() *atomic.Int64 {
	n := new(atomic.Int64)
	n.Store(1)
	return n
}

// last drops this backend's hold on the connection; true when no other backend holds it.
func (s *share) last() bool { return s.refs.Add(-1) == 0 }

// errClosed is Renew's error for a backend already closed.
var errClosed = errors.New("backend closed")

// Carries reports whether b was built from cfg (after defaults): a reloaded configuration
// with the same entry renews b (Renew) instead of connecting anew.
func (b *Backend) Carries(cfg Config) bool { return reflect.DeepEqual(b.cfg, cfg.withDefaults()) }

// Renew returns a backend of b's configuration over b's connection — no new dial, no
// dropped stream — that loads its descriptors anew (a .proto file or the backend's
// reflection may have changed since), so a reload re-reads them without reconnecting. It
// is not ready until they load; b keeps serving meanwhile. The connection closes when the
// last backend holding it does.
func (b *Backend) Renew(log *slog.Logger, now func() time.Time) (*Backend, error) {
	for {
		n := b.share.refs.Load()
		if n <= 0 {
			return nil, errClosed
		}
		if b.share.refs.CompareAndSwap(n, n+1) {
			break
		}
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if now == nil {
		now = time.Now
	}
	return start(b.cfg, b.conn, b.share.refs, log, now), nil
}
