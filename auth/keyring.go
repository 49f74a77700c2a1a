package auth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/MicahParks/jwkset"

	"github.com/gatehouse-dev/gatehouse/state"
)

// KeyRingOptions are what a KeyRing needs besides its configuration.
type KeyRingOptions struct {
	// Store keeps generated keys. Nil: an in-process store the ring owns, so keys do not
	// survive a restart (tokens they signed stop verifying, which short lifetimes make
	// harmless); give NewStateKeyStore over the gateway's state store to keep and share them.
	Store KeyStore
	// Logger receives failures of the background maintenance; nil discards them.
	Logger *slog.Logger
	// Now is the ring's clock; nil means time.Now.
	Now func() time.Time
	// Bus, when not nil, carries the news of an emergency rotation (RotateNow) to the other
	// replicas sharing Store at once, instead of at their next sync: give the state store
	// when it is a state.Bus.
	Bus state.Bus
}

// KeyRing is the gateway's own signing keys: the current key signs, the previous ones keep
// verifying until every token they signed has expired, and a key about to take over is
// published ahead. Generated keys rotate on schedule in a background goroutine that
// Close stops; key files change on reload only. It is safe for concurrent use.
//
// Timeline of a generated key K2 succeeding K1 (A = K2's activation):
//
//	A - publish_ahead   K2 generated and published; K1 signs
//	A                   K2 signs; K1 verifies only
//	A + overlap         K1 dropped (overlap ≥ max_token_ttl: every token K1 signed has expired)
type KeyRing struct {
	cfg     KeyRingConfig
	store   KeyStore
	ownKV   state.KV // the ring's own store, closed by Close; nil with Options.Store
	view    atomic.Pointer[ringView]
	mu      sync.Mutex // serializes maintain: the rotation loop and Rotate
	now     func() time.Time
	log     *slog.Logger
	bus     state.Bus
	stop    context.CancelFunc
	done    chan struct{}
	closing sync.Once
}

// keyRingChannel is the bus channel on which a ring announces an emergency rotation.
const keyRingChannel = "auth:keyring:rotated"

// ringKey is one key of the ring.
type ringKey struct {
	signer    *Signer
	activates time.Time       // when it starts signing; zero for key files
	created   time.Time       // when it was generated; zero for key files and older stored rings
	verify    []verifyKey     // the public key as a verification key, a slice of one
	jwk       json.RawMessage // the public key as a JWK
}

// ringView is the ring as last read: its keys by activation, oldest first, and the stored
// encoding they were decoded from (nil for key files).
type ringView struct {
	keys []*ringKey
	raw  []byte
}

// OpenKeyRing loads or generates the ring's keys and, for generated keys, starts rotating
// them.
func OpenKeyRing(ctx context.Context, cfg KeyRingConfig, opts KeyRingOptions) (*KeyRing, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := &KeyRing{cfg: cfg.withDefaults(), store: opts.Store, now: opts.Now, log: opts.Logger, bus: opts.Bus}
	if r.now == nil {
		r.now = time.Now
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if !r.cfg.generated() {
		keys, err := loadKeyFiles(r.cfg)
		if err != nil {
			return nil, err
		}
		r.view.Store(&ringView{keys: keys})
		return r, nil
	}
	if r.store == nil {
		r.ownKV = state.NewEmbedded(state.EmbeddedOptions{MaxEntries: 16, Now: r.now})
		r.store = NewStateKeyStore(r.ownKV, DefaultKeyStoreKey)
	}
	if err := r.maintain(ctx, rotateNone); err != nil {
		r.closeStore()
		return nil, err
	}
	bg, stop := context.WithCancel(context.WithoutCancel(ctx))
	r.stop, r.done = stop, make(chan struct{})
	var notes <-chan []byte
	var sub state.Subscription
	if r.bus != nil {
		var err error
		if sub, err = r.bus.Subscribe(bg, keyRingChannel); err != nil {
			r.log.WarnContext(ctx, "subscribing to key ring rotations failed; following them by sync only", "err", err)
		} else {
			notes = sub.C()
		}
	}
	go r.run(bg, sub, notes)
	return r, nil
}

// Issuer returns the iss of the tokens the ring signs.
func (r *KeyRing) Issuer() string { return r.cfg.Issuer }

// MaxTokenTTL returns the longest lifetime of a token the ring signs.
func (r *KeyRing) MaxTokenTTL() time.Duration { return r.cfg.MaxTokenTTL }

// Sign signs claims with the current key. The claims must carry exp (seconds since the
// epoch, as int, int64, float64 or json.Number) no later than MaxTokenTTL from now: the
// overlap window relies on it. Sign adds nothing to the claims; Mint builds a full set.
func (r *KeyRing) Sign(claims map[string]any) (string, error) {
	now := r.now()
	exp, ok := numericDate(claims[claimExp])
	if !ok {
		return "", errors.New("signing: claims need a numeric exp")
	}
	if exp.After(now.Add(r.cfg.MaxTokenTTL + time.Second)) { // a second for exp's rounding
		return "", fmt.Errorf("signing: exp is more than max_token_ttl (%s) away", r.cfg.MaxTokenTTL)
	}
	return r.current(now).signer.Sign(claims)
}

// JWKS returns the JWK Set of the ring's public keys that verify now: the current key, the
// previous ones within their overlap, and the next one when published ahead.
func (r *KeyRing) JWKS() []byte {
	out := []byte(`{"keys":[`)
	for i, k := range r.PublicKeys() {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, k...)
	}
	return append(out, "]}"...)
}

// PublicKeys returns the keys JWKS lists, one JWK each, for a server publishing them in one
// set beside other keys of its own. The JWKs must not be modified.
func (r *KeyRing) PublicKeys() []json.RawMessage {
	now, v := r.now(), r.view.Load()
	keys := make([]json.RawMessage, 0, len(v.keys))
	for i, k := range v.keys {
		if r.verifies(v, i, now) {
			keys = append(keys, k.jwk)
		}
	}
	return keys
}

// Verifier returns a Verifier of the tokens the ring signs, for tests and for backends in
// the same process: iss must be the ring's issuer, and aud one of audiences (with none,
// aud is not checked — a backend must always name itself).
func (r *KeyRing) Verifier(audiences ...string) *Verifier {
	c := IssuerConfig{Issuer: r.cfg.Issuer, Audiences: audiences}.withDefaults()
	return newVerifier(verifierSettings{cfg: c, algorithms: ringAlgorithms, now: r.now}, ringKeys{r})
}

// ErrKeyFiles is returned when a ring whose keys are files is asked to rotate: the operator
// rotates them by changing the files and reloading.
var ErrKeyFiles = errors.New("rotating: the ring's keys are files; rotate them by changing the files and reloading")

// Rotate generates a key that takes over signing after publish_ahead, now rather than on
// schedule. Key files do not rotate (ErrKeyFiles).
func (r *KeyRing) Rotate(ctx context.Context) error {
	if !r.cfg.generated() {
		return ErrKeyFiles
	}
	return r.maintain(ctx, rotateAhead)
}

// RotateNow is the emergency rotation (admin.keys.rotate, after a suspected compromise): a
// new key signs at once. Without revoke the keys it replaces keep verifying until every
// token they signed has expired (overlap); with revoke they are withdrawn at once, so
// tokens they signed fail verification. Other replicas sharing the store follow at their
// next sync, or at once when the ring has a bus. It returns the new key's kid and the
// kids withdrawn. Key files do not rotate (ErrKeyFiles).
func (r *KeyRing) RotateNow(ctx context.Context, revoke bool) (kid string, withdrawn []string, err error) {
	if !r.cfg.generated() {
		return "", nil, ErrKeyFiles
	}
	before := r.view.Load().keys
	rot := rotateNow
	if revoke {
		rot = rotateRevoke
	}
	if err := r.maintain(ctx, rot); err != nil {
		return "", nil, err
	}
	after := r.view.Load().keys
	for _, k := range before {
		if !slices.ContainsFunc(after, func(a *ringKey) bool { return a.signer.KeyID() == k.signer.KeyID() }) {
			withdrawn = append(withdrawn, k.signer.KeyID())
		}
	}
	if r.bus != nil {
		bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), busTimeout)
		defer cancel()
		if err := r.bus.Publish(bctx, keyRingChannel, []byte(after[len(after)-1].signer.KeyID())); err != nil {
			r.log.WarnContext(ctx, "announcing a key rotation failed; other replicas follow at their sync", "err", err)
		}
	}
	return after[len(after)-1].signer.KeyID(), withdrawn, nil
}

// Key states of KeyInfo.
const (
	KeySigning   = "signing"   // the key signs new tokens
	KeyPublished = "published" // the key verifies (published ahead, or within its overlap)
	KeyRetired   = "retired"   // the key no longer verifies; it leaves the ring at the next sync
)

// KeyInfo describes one key of the ring, without its private material.
type KeyInfo struct {
	KID       string    `json:"kid"`
	Algorithm string    `json:"algorithm"`
	State     string    `json:"state"`
	Created   time.Time `json:"created,omitzero"`
	Activates time.Time `json:"activates,omitzero"`
	// Retires is when the key stops verifying; zero while no successor signs.
	Retires time.Time `json:"retires,omitzero"`
}

// Keys describes the ring's keys, oldest first.
func (r *KeyRing) Keys() []KeyInfo {
	now, v := r.now(), r.view.Load()
	cur := r.current(now)
	out := make([]KeyInfo, 0, len(v.keys))
	for i, k := range v.keys {
		ki := KeyInfo{KID: k.signer.KeyID(), Algorithm: k.signer.Algorithm(), Created: k.created, Activates: k.activates, State: KeyRetired}
		switch {
		case k == cur:
			ki.State = KeySigning
		case r.verifies(v, i, now):
			ki.State = KeyPublished
		}
		if r.cfg.generated() && i+1 < len(v.keys) && !now.Before(v.keys[i+1].activates) {
			ki.Retires = v.keys[i+1].activates.Add(r.cfg.Overlap)
		}
		out = append(out, ki)
	}
	return out
}

// AdminScope is the scope a caller of admin.keys.* must hold.
func (r *KeyRing) AdminScope() string { return r.cfg.AdminScope }

// Close stops the rotation goroutine and releases the ring's own store. Tokens can no
// longer be signed reliably afterwards. It is safe to call more than once.
func (r *KeyRing) Close() error {
	r.closing.Do(func() {
		if r.stop != nil {
			r.stop()
			<-r.done
		}
		r.closeStore()
	})
	return nil
}

func (r *KeyRing) closeStore() {
	if r.ownKV != nil {
		_ = r.ownKV.Close()
	}
}

// run maintains the ring every sync_interval, and whenever notes (a bus subscription, sub)
// tells of an emergency rotation, until ctx is done.
func (r *KeyRing) run(ctx context.Context, sub state.Subscription, notes <-chan []byte) {
	defer close(r.done)
	if sub != nil {
		defer func() { _ = sub.Close() }()
	}
	tick := time.NewTicker(r.cfg.SyncInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-notes:
			if !ok {
				notes = nil // the subscription ended: follow by sync only
			}
		case <-tick.C:
		}
		if err := r.maintain(ctx, rotateNone); err != nil && ctx.Err() == nil {
			r.log.WarnContext(ctx, "key ring maintenance failed; the keys in use stay", "err", err)
		}
	}
}

// maxSwapAttempts bounds how often maintain starts over after another replica changed the
// stored ring under it.
const maxSwapAttempts = 4

// Rotations maintain can make besides the scheduled one.
type rotation int

const (
	rotateNone   rotation = iota // only the scheduled rotation, when due
	rotateAhead                  // a new key signs after publish_ahead (Rotate)
	rotateNow                    // a new key signs at once (RotateNow)
	rotateRevoke                 // a new key signs at once and replaces every other (RotateNow with revoke)
)

// maintain reads the stored ring, rotates it when due (or as rot asks) and drops keys past
// their overlap, stores the result if it changed, and installs it.
func (r *KeyRing) maintain(ctx context.Context, rot rotation) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for range maxSwapAttempts {
		raw, err := r.store.Load(ctx)
		if err != nil {
			return fmt.Errorf("loading the key ring: %w", err)
		}
		keys, err := r.decode(raw)
		if err != nil {
			return err
		}
		next, changed, err := r.plan(keys, r.now(), rot)
		if err != nil {
			return err
		}
		if !changed {
			r.view.Store(&ringView{keys: keys, raw: raw})
			return nil
		}
		enc, err := encodeRing(next)
		if err != nil {
			return err
		}
		ok, err := r.store.Swap(ctx, raw, enc, 2*r.cfg.RotateEvery+r.cfg.Overlap)
		if err != nil {
			return fmt.Errorf("storing the key ring: %w", err)
		}
		if ok {
			r.view.Store(&ringView{keys: next, raw: enc})
			return nil
		}
		if rot == rotateAhead {
			rot = rotateNone // another replica changed the ring: its keys are as fresh as a rotation
		}
	}
	return errors.New("storing the key ring: it kept changing under this replica")
}

// decode returns the keys of a stored ring, reusing the installed ones when unchanged.
func (r *KeyRing) decode(raw []byte) ([]*ringKey, error) {
	if raw == nil {
		return nil, nil
	}
	if v := r.view.Load(); v != nil && slices.Equal(v.raw, raw) {
		return v.keys, nil
	}
	return decodeRing(raw)
}

// plan returns the ring after dropping keys past their overlap and adding a key when a
// rotation is due (or asked for by rot), and whether anything changed. An asked rotation
// also drops a key published ahead but not yet signing: the new key replaces it; a revoking
// one drops every key.
func (r *KeyRing) plan(keys []*ringKey, now time.Time, rot rotation) ([]*ringKey, bool, error) {
	if len(keys) == 0 || rot == rotateRevoke {
		k, err := r.generate(now, now)
		return []*ringKey{k}, true, err
	}
	force := rot != rotateNone
	var next []*ringKey
	for i, k := range keys {
		pending := force && i > 0 && now.Before(k.activates)
		if r.verifies(&ringView{keys: keys}, i, now) && !pending {
			next = append(next, k)
		}
	}
	if rot == rotateNow {
		k, err := r.generate(now, now)
		return append(next, k), true, err
	}
	changed := len(next) != len(keys)
	newest := next[len(next)-1]
	if force || !now.Before(newest.activates.Add(r.cfg.RotateEvery-r.cfg.PublishAhead)) {
		at := now.Add(r.cfg.PublishAhead)
		if !force {
			at = later(at, newest.activates.Add(r.cfg.RotateEvery))
		}
		k, err := r.generate(now, at)
		if err != nil {
			return nil, false, err
		}
		next, changed = append(next, k), true
	}
	return next, changed, nil
}

// verifies reports whether the i-th key of v verifies at now: key files always do; a
// generated key does until its successor has been signing for overlap.
func (r *KeyRing) verifies(v *ringView, i int, now time.Time) bool {
	if !r.cfg.generated() || i+1 == len(v.keys) {
		return true
	}
	return now.Before(v.keys[i+1].activates.Add(r.cfg.Overlap))
}

// current returns the key that signs at now: the newest active one (the oldest if the
// clock went back before every activation).
func (r *KeyRing) current(now time.Time) *ringKey {
	keys := r.view.Load().keys
	for i := len(keys) - 1; i > 0; i-- {
		if !now.Before(keys[i].activates) {
			return keys[i]
		}
	}
	return keys[0]
}

// generate makes a new key of the configured algorithm at now, activating at at.
func (r *KeyRing) generate(now, at time.Time) (*ringKey, error) {
	var key crypto.Signer
	var err error
	if r.cfg.Algorithm == algES256 {
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	} else {
		_, key, err = ed25519.GenerateKey(rand.Reader)
	}
	if err != nil {
		return nil, fmt.Errorf("generating a key: %w", err)
	}
	k, err := newRingKey(key, "", at)
	if err != nil {
		return nil, err
	}
	k.created = now
	return k, nil
}

// newRingKey wraps a private key of one of the ring's algorithms.
func newRingKey(key crypto.Signer, kid string, activates time.Time) (*ringKey, error) {
	s, err := NewSigner(key, kid)
	if err != nil {
		return nil, err
	}
	alg := s.Algorithm()
	if !slices.Contains(ringAlgorithms, alg) {
		return nil, fmt.Errorf("a %s key: the key ring signs with EdDSA (Ed25519) or ES256 (P-256) only", alg)
	}
	pub, err := publicKeyOf(key.Public())
	if err != nil {
		return nil, err
	}
	jwk, err := jwkset.NewJWKFromKey(pub, jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{
		ALG: jwkset.ALG(alg), KID: s.KeyID(), USE: jwkset.UseSig,
	}})
	if err != nil {
		return nil, fmt.Errorf("encoding key %s as a JWK: %w", s.KeyID(), err)
	}
	raw, err := json.Marshal(jwk.Marshal())
	if err != nil {
		return nil, fmt.Errorf("encoding key %s as a JWK: %w", s.KeyID(), err)
	}
	return &ringKey{
		signer: s, activates: activates, jwk: raw,
		verify: []verifyKey{{kid: s.KeyID(), key: pub, algorithms: []string{alg}}},
	}, nil
}

// loadKeyFiles reads the ring's key files, in order: the last one signs.
func loadKeyFiles(c KeyRingConfig) ([]*ringKey, error) {
	files := c.KeyFiles
	if c.KeyDir != "" {
		var err error
		if files, err = filepath.Glob(filepath.Join(c.KeyDir, "*.pem")); err != nil {
			return nil, fmt.Errorf("key_dir: %w", err)
		}
		slices.Sort(files)
		if len(files) == 0 {
			return nil, fmt.Errorf("key_dir: no *.pem file in %s", c.KeyDir)
		}
	}
	var keys []*ringKey
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("key ring: %w", err)
		}
		key, err := ParsePrivateKeyPEM(data)
		if err != nil {
			return nil, fmt.Errorf("key ring: %s: %w", f, err)
		}
		k, err := newRingKey(key, "", time.Time{})
		if err != nil {
			return nil, fmt.Errorf("key ring: %s: %w", f, err)
		}
		if c.Algorithm != "" && k.signer.Algorithm() != c.Algorithm {
			return nil, fmt.Errorf("key ring: %s: a %s key, but algorithm is %s", f, k.signer.Algorithm(), c.Algorithm)
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// ringKeys is the keySource of a ring's Verifier: the keys that verify now.
type ringKeys struct{ r *KeyRing }

func (s ringKeys) lookup(_ context.Context, kid string) ([]verifyKey, error) {
	now, v := s.r.now(), s.r.view.Load()
	var all []verifyKey
	for i, k := range slices.Backward(v.keys) {
		if !s.r.verifies(v, i, now) {
			continue
		}
		if kid == k.signer.KeyID() {
			return k.verify, nil
		}
		if kid == "" {
			all = append(all, k.verify...)
		}
	}
	if len(all) == 0 {
		return nil, errUnknownKey
	}
	return all, nil
}

// numericDate reads a NumericDate given to Sign.
func numericDate(v any) (time.Time, bool) {
	var f float64
	switch n := v.(type) {
	case int:
		f = float64(n)
	case int64:
		f = float64(n)
	case float64:
		f = n
	case json.Number:
		var err error
		if f, err = n.Float64(); err != nil {
			return time.Time{}, false
		}
	default:
		return time.Time{}, false
	}
	return time.Unix(int64(f), 0), f > 0 && f <= latestNumericDate
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
