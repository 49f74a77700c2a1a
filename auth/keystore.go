package auth

import (
	"context"
	"crypto"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gatehouse-dev/gatehouse/state"
)

// KeyStore keeps a key ring's generated keys, encoded, where the ring finds them after a
// restart and where other replicas sharing the store find them too. The value holds
// private keys: a shared store must be as private as the gateway itself.
type KeyStore interface {
	// Load returns the stored ring, or nil when none is stored.
	Load(ctx context.Context) ([]byte, error)
	// Swap stores ring, to expire after ttl, if the stored value still equals old (nil: if
	// none is stored), and reports whether it did; when it returns false nothing changed.
	Swap(ctx context.Context, old, ring []byte, ttl time.Duration) (bool, error)
}

// NewStateKeyStore returns a KeyStore keeping the ring under key in kv: the process's
// embedded store, or a shared one so replicas sign with the same keys.
func NewStateKeyStore(kv state.KV, key string) KeyStore {
	return stateKeyStore{kv: kv, key: key}
}

// DefaultKeyStoreKey is the state key a gateway's key ring is kept under.
const DefaultKeyStoreKey = "auth:keyring"

type stateKeyStore struct {
	kv  state.KV
	key string
}

// Load implements KeyStore.
func (s stateKeyStore) Load(ctx context.Context) ([]byte, error) {
	v, ok, err := s.kv.Get(ctx, s.key)
	if err != nil || !ok {
		return nil, err
	}
	return v, nil
}

// Swap implements KeyStore.
func (s stateKeyStore) Swap(ctx context.Context, old, ring []byte, ttl time.Duration) (bool, error) {
	return s.kv.CompareAndSwap(ctx, s.key, old, ring, ttl)
}

// storedRing is the encoding of a generated ring in its store.
type storedRing struct {
	Version int         `json:"v"`
	Keys    []storedKey `json:"keys"`
}

type storedKey struct {
	KID       string    `json:"kid"`
	Activates time.Time `json:"activates"`
	Created   time.Time `json:"created,omitzero"`
	// PKCS8 is the private key, PKCS #8 DER (base64 in JSON).
	PKCS8 []byte `json:"pkcs8"`
}

const storedRingVersion = 1

// encodeRing encodes generated keys for the store.
func encodeRing(keys []*ringKey) ([]byte, error) {
	s := storedRing{Version: storedRingVersion}
	for _, k := range keys {
		der, err := x509.MarshalPKCS8PrivateKey(k.signer.key)
		if err != nil {
			return nil, fmt.Errorf("encoding key %s: %w", k.signer.KeyID(), err)
		}
		s.Keys = append(s.Keys, storedKey{KID: k.signer.KeyID(), Activates: k.activates, Created: k.created, PKCS8: der})
	}
	return json.Marshal(s)
}

// decodeRing decodes a stored ring.
func decodeRing(data []byte) ([]*ringKey, error) {
	var s storedRing
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("decoding the stored key ring: %w", err)
	}
	if s.Version != storedRingVersion || len(s.Keys) == 0 {
		return nil, errors.New("decoding the stored key ring: unknown version or no keys")
	}
	keys := make([]*ringKey, 0, len(s.Keys))
	for _, sk := range s.Keys {
		key, err := x509.ParsePKCS8PrivateKey(sk.PKCS8)
		if err != nil {
			return nil, fmt.Errorf("decoding stored key %s: %w", sk.KID, err)
		}
		signer, ok := key.(crypto.Signer)
		if !ok {
			return nil, fmt.Errorf("decoding stored key %s: not a signing key", sk.KID)
		}
		k, err := newRingKey(signer, sk.KID, sk.Activates)
		if err != nil {
			return nil, err
		}
		k.created = sk.Created
		keys = append(keys, k)
	}
	return keys, nil
}
