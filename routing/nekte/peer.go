package nekte

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
)

// Replicas and persist: false envelopes.
//
// A persist: false envelope stays in the memory of the replica that stored it (its
// owner). When other replicas may need it, the owner also writes a locator to the shared
// store under the envelope's key with the prefix prefixLocator or prefixTaskLocator: its
// advertised address and a random fetch secret, never the payload, with the envelope's
// lifetime (and grace). A replica that does not hold the envelope reads the locator and
// asks the owner (PeerClient, the internal listener's gatehouse.v1.PeerService), which
// answers only when the secret matches the one it keeps beside the envelope. An owner
// that is gone, or does not answer within contexts.peer_timeout, takes the envelope with
// it: it is missing, as after a restart.

// Key prefixes of locators.
const (
	prefixLocator     = "nekte:ctxpeer:"     // + owner + ":" + envelope id → locator
	prefixTaskLocator = "nekte:taskctxpeer:" // + owner + ":" + task id → locator
)

// secretBytes is the length of a fetch secret (256 bits).
const secretBytes = 32

// maxPeerField bounds a PeerRef's owner and id, as the state store bounds keys.
const maxPeerField = 1024

// PeerRef names a persist: false envelope held by a replica, as a peer asks for it.
type PeerRef struct {
	// Owner is the principal subject the envelope belongs to.
	Owner string
	// ID is the envelope id, or the task id when Task is set.
	ID string
	// Task marks ID as a task id: the reference is to that task's inline context.
	Task bool
	// Secret is the fetch secret of the envelope's locator (32 bytes).
	Secret []byte
}

// PeerClient calls other replicas' PeerService. Implementations are safe for concurrent
// use; the Service bounds every call with contexts.peer_timeout through ctx.
type PeerClient interface {
	// GetEnvelope asks the replica at addr (host:port) for an envelope and returns it as
	// the replica keeps it (JSON). ErrPeerNotFound when the replica does not hold it or
	// the secret does not match; any other failure is a *PeerError.
	GetEnvelope(ctx context.Context, addr string, ref PeerRef) ([]byte, error)
	// RevokeEnvelope asks the replica at addr to drop an envelope. Errors as GetEnvelope.
	RevokeEnvelope(ctx context.Context, addr string, ref PeerRef) error
}

// Peers is how a Service reaches the persist: false envelopes of other replicas sharing
// its state store, and lets them reach its own (UsePeers).
type Peers struct {
	// Advertise is the host:port other replicas reach this one's PeerService at. Empty:
	// this replica's persist: false envelopes stay local (it writes no locators), though
	// it still reaches those of other replicas.
	Advertise string
	// Client calls the other replicas. If it is an io.Closer, Service.Close closes it.
	Client PeerClient
}

// ErrPeerNotFound is a replica's answer for an envelope it does not hold, or whose secret
// does not match.
var ErrPeerNotFound = errors.New("nekte: the replica holds no such envelope")

// ErrPeerRef refuses a malformed PeerRef: no owner or id, one longer than 1024 bytes, or a
// secret that is not 32 bytes.
var ErrPeerRef = errors.New("nekte: malformed peer reference: owner and id must be 1 to 1024 bytes and the secret 32 bytes")

// PeerError is a failed call to another replica: unreachable, too slow, or refusing.
type PeerError struct {
	// Op is the call: "get" or "revoke".
	Op string
	// Addr is the replica's address.
	Addr string
	// Err is the cause.
	Err error
}

func (e *PeerError) Error() string {
	return fmt.Sprintf("nekte: %s envelope at replica %s: %v", e.Op, e.Addr, e.Err)
}

func (e *PeerError) Unwrap() error { return e.Err }

// ValidateAdvertise checks an address to advertise to other replicas: host:port with a
// host that is not empty and not an unspecified IP (0.0.0.0, ::), and a port in 1-65535.
func ValidateAdvertise(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not a host:port address", addr)
	}
	if host == "" {
		return fmt.Errorf("%q names no host", addr)
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.IsUnspecified() {
		return fmt.Errorf("%q is an unspecified address other replicas cannot dial; name this replica's reachable host or IP", addr)
	}
	if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 {
		return fmt.Errorf("%q: the port must be 1 to 65535", addr)
	}
	return nil
}

// peering is what UsePeers set: the client, and the address this replica advertises
// ("" when it writes no locators).
type peering struct {
	advertise string
	client    PeerClient
}

// locator is where a persist: false envelope is held: the owner's advertised address and
// the envelope's fetch secret.
type locator struct {
	Addr   string `json:"addr"`
	Secret []byte `json:"secret"`
}

// localEnvelope is a persist: false envelope as its owner keeps it: with the fetch secret
// of its locator (none when it wrote no locator).
type localEnvelope struct {
	storedEnvelope
	Secret []byte `json:"peer_secret,omitempty"`
}

// newSecret returns a random fetch secret.
func newSecret() []byte {
	b := make([]byte, secretBytes)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (it panics if the system cannot supply randomness)
	return b
}

// secretEqual compares secrets in constant time.
func secretEqual(a, b []byte) bool {
	return len(a) == secretBytes && subtle.ConstantTimeCompare(a, b) == 1
}

func locatorKey(owner, id string) string { return prefixLocator + ownerKey(owner) + ":" + id }

func taskLocatorKey(owner, taskID string) string {
	return prefixTaskLocator + ownerKey(owner) + ":" + taskID
}

// check reports a malformed reference.
func (r PeerRef) check() error {
	if r.Owner == "" || r.ID == "" || len(r.Owner) > maxPeerField || len(r.ID) > maxPeerField || len(r.Secret) != secretBytes {
		return ErrPeerRef
	}
	return nil
}

// UsePeers lets the Service reach the persist: false envelopes other replicas sharing its
// state store hold, and, when p.Advertise is set, lets them reach its own. Without it
// (one replica, the embedded store) such envelopes stay in the process that stored them.
// It is called once, before the Service serves calls (the server learns its address only
// after binding the internal listener, after building the Service).
func (s *Service) UsePeers(p Peers) error {
	if p.Client == nil {
		return errors.New("nekte: Peers.Client is required")
	}
	if p.Advertise != "" {
		if err := ValidateAdvertise(p.Advertise); err != nil {
			return fmt.Errorf("nekte: advertised address: %w", err)
		}
	}
	if !s.store.peers.CompareAndSwap(nil, &peering{advertise: p.Advertise, client: p.Client}) {
		return errors.New("nekte: UsePeers was already called")
	}
	return nil
}

// closePeers closes the peer client, if it is an io.Closer.
func (s *Service) closePeers() error {
	if p := s.store.peers.Load(); p != nil {
		if c, ok := p.client.(io.Closer); ok {
			return c.Close()
		}
	}
	return nil
}

// PeerEnvelope answers another replica's GetEnvelope: the envelope ref names as this
// replica keeps it (JSON), if it holds it and ref's secret matches its locator;
// ErrPeerNotFound otherwise, ErrPeerRef for a malformed ref.
func (s *Service) PeerEnvelope(ctx context.Context, ref PeerRef) ([]byte, error) {
	le, _, err := s.store.held(ctx, ref)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(le.storedEnvelope)
	if err != nil {
		return nil, err
	}
	return raw, nil
}

// PeerRevoke answers another replica's RevokeEnvelope: it drops the envelope ref names
// from this replica's memory. Errors as PeerEnvelope.
func (s *Service) PeerRevoke(ctx context.Context, ref PeerRef) error {
	_, key, err := s.store.held(ctx, ref)
	if err != nil {
		return err
	}
	if _, err := s.store.local.Delete(ctx, key); err != nil {
		return err
	}
	return nil
}

// held returns the local entry ref names and its key, if this replica holds it under the
// secret ref presents.
func (c *contextStore) held(ctx context.Context, ref PeerRef) (*localEnvelope, string, error) {
	if err := ref.check(); err != nil {
		return nil, "", err
	}
	key := contextKey(ref.Owner, ref.ID)
	if ref.Task {
		key = taskContextKey(ref.Owner, ref.ID)
	}
	raw, ok, err := c.local.Get(ctx, key)
	if err != nil {
		return nil, "", err
	}
	if !ok {
		return nil, "", ErrPeerNotFound
	}
	var le localEnvelope
	if err := json.Unmarshal(raw, &le); err != nil {
		return nil, "", err
	}
	if !secretEqual(le.Secret, ref.Secret) {
		return nil, "", ErrPeerNotFound
	}
	return &le, key, nil
}
