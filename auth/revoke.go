package auth

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/state"
)

// Kinds of revocation: of one token, by its jti claim, or of every credential of a subject
// (JWT sub, or an API key's name).
const (
	RevocationJTI     = "jti"
	RevocationSubject = "sub"
)

// Revocation is one entry of the revocation list, as the admin API shows it: exactly one of
// JTI and Subject names what is revoked. It is also the record kept beside the index.
type Revocation struct {
	// Kind is RevocationJTI or RevocationSubject.
	Kind    string `json:"kind"`
	JTI     string `json:"jti,omitempty"`
	Subject string `json:"sub,omitempty"`
	// ExpiresAt is when the revocation ends and the entry is dropped.
	ExpiresAt time.Time `json:"expires_at"`
	// RevokedAt and RevokedBy (the operator's subject) say who revoked, and when.
	RevokedAt time.Time `json:"revoked_at,omitzero"`
	RevokedBy string    `json:"revoked_by,omitempty"`
	Reason    string    `json:"reason,omitempty"`
	// Digest identifies an entry whose record is missing from the store (so JTI and Subject
	// are unknown); empty otherwise.
	Digest string `json:"digest,omitempty"`
}

// RevokeRequest asks to revoke one token (JTI) or one subject (Subject): exactly one is set.
// The revocation ends at ExpiresAt when set (for a jti: the token's exp), else TTL from now
// when set, else default_ttl from now; never later than max_ttl from now.
type RevokeRequest struct {
	JTI       string
	Subject   string
	ExpiresAt time.Time
	TTL       time.Duration
	// By is the subject of the operator revoking; Reason is free text for the audit.
	By     string
	Reason string
}

// RevocationParamError is a RevokeRequest (or a removal) that cannot be honoured; Param is
// the admin API's name of the field at fault.
type RevocationParamError struct {
	Param   string
	Problem string
}

func (e *RevocationParamError) Error() string {
	return fmt.Sprintf("revocation: %s: %s", e.Param, e.Problem)
}

// Errors of a Revocations.
var (
	// ErrRevocationsFull: max_entries revocations are live; remove some or wait for expiries.
	ErrRevocationsFull = errors.New("revocation list full")
	// ErrNotRevoked: Remove found no live revocation of that jti or subject.
	ErrNotRevoked = errors.New("not revoked")
)

// Names of the request fields (as the admin API names them) a RevocationParamError blames,
// beside RevocationJTI and RevocationSubject.
const (
	paramTTL       = "ttl"
	paramExpiresAt = "expires_at"
)

// Bounds of what a revocation records.
const (
	maxRevocationValueBytes  = 1024 // a jti or subject
	maxRevocationReasonBytes = 1024
	// revocationCASAttempts bounds the compare-and-swap retries of one index update.
	revocationCASAttempts = 64
	// revocationIndexGrace is how long the index (and its version) outlive its last entry,
	// so an emptied list is still read as the same version for a while.
	revocationIndexGrace = time.Hour
	// revocationOpenTimeout bounds the first read of the list.
	revocationOpenTimeout = 10 * time.Second
	// revDigestBytes is the length of an entry's digest: 128 bits of SHA-256.
	revDigestBytes = 16
	// DefaultRevocationKeyPrefix is the prefix of the state keys the list is kept under.
	DefaultRevocationKeyPrefix = "auth:revocations:"
)

// Kinds as one byte, in the snapshot's keys and the stored index.
const (
	revKindJTI byte = 'j'
	revKindSub byte = 's'
)

// revKey identifies an entry: its kind and the digest of its value. The index keeps digests
// only, so every entry has the same size whatever the jti or subject.
type revKey [1 + revDigestBytes]byte

func keyOf(kind byte, value string) revKey {
	// A value up to the buffer's size is hashed from the stack: Revoked allocates nothing.
	var buf [256]byte
	var b []byte
	if len(value) <= len(buf) {
		b = append(buf[:0], value...)
	} else {
		b = []byte(value)
	}
	sum := sha256.Sum256(b)
	var k revKey
	k[0] = kind
	copy(k[1:], sum[:revDigestBytes])
	return k
}

func (k revKey) kindName() string {
	if k[0] == revKindJTI {
		return RevocationJTI
	}
	return RevocationSubject
}

func (k revKey) hex() string { return hex.EncodeToString(k[:]) }

// RevocationOptions are what OpenRevocations needs besides the store and the settings.
type RevocationOptions struct {
	// Logger receives the audit line of every change and the store's failures; nil
	// discards them.
	Logger *slog.Logger
	// Now is the clock entries expire by; nil means time.Now.
	Now func() time.Time
	// KeyPrefix is the prefix of the list's state keys (default DefaultRevocationKeyPrefix).
	KeyPrefix string
}

// Revocations is the revocation list: tokens denied by jti and subjects denied by sub, each
// until a time. It lives in the state store — an index of entries (kind, digest, expiry)
// updated by compare-and-swap, a version key naming the index's current version, and one
// record per entry (what, who, why, when) for listing — so every replica sharing the store
// shares the list. Each replica holds an immutable snapshot of the index, which Revoked
// reads lock-free, and re-reads the version every refresh to follow changes made
// elsewhere; a change made here is in the snapshot at once.
//
// If the store cannot be read, the last snapshot stays in force and the failure is logged.
type Revocations struct {
	kv                          state.KV
	indexKey, versionKey, recPx string
	channel                     string // the bus channel changes are announced on
	log                         *slog.Logger
	now                         func() time.Time

	cfg  atomic.Pointer[RevocationConfig] // with defaults
	snap atomic.Pointer[revSnapshot]

	// mu orders the installs of snapshots: a sync and the local writes each read or write
	// the store and install what they saw under it, so no older snapshot replaces a newer.
	mu      sync.Mutex
	failing bool // under mu: the last sync failed (logged once per outage)

	// listeners are told of changes (revoke_listen.go); changed wakes the follower to tell
	// them of a change made here.
	listenMu  sync.Mutex
	listeners map[*func()]struct{}
	changed   chan struct{}

	ctx       context.Context // canceled by Close: ends the follower and a sync in flight
	cancel    context.CancelFunc
	done      chan struct{}
	closeOnce sync.Once
}

// OpenRevocations reads the list from kv and starts following it. A nil cfg means every
// default; cfg must be valid. It fails only when the list cannot be read: a gateway that
// cannot know what is revoked does not start. Close it to stop following.
func OpenRevocations(ctx context.Context, kv state.KV, cfg *RevocationConfig, opts RevocationOptions) (*Revocations, error) {
	if cfg != nil {
		if err := cfg.Validate(); err != nil {
			return nil, err
		}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.KeyPrefix == "" {
		opts.KeyPrefix = DefaultRevocationKeyPrefix
	}
	r := &Revocations{
		kv: kv, indexKey: opts.KeyPrefix + "index", versionKey: opts.KeyPrefix + "version", recPx: opts.KeyPrefix + "r/",
		channel: opts.KeyPrefix + "changed",
		log:     opts.Logger, now: opts.Now, done: make(chan struct{}), changed: make(chan struct{}, 1),
	}
	settings := cfg.settings()
	r.cfg.Store(&settings)
	r.snap.Store(&revSnapshot{next: math.MaxInt64})
	ctx, cancel := context.WithTimeout(ctx, revocationOpenTimeout)
	defer cancel()
	if err := r.sync(ctx); err != nil {
		return nil, fmt.Errorf("reading the revocation list: %w", err)
	}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	go r.follow()
	return r, nil
}

// Configure applies new settings (nil: every default), as a reload does; cfg must be valid.
// A new refresh takes effect after the current wait.
func (r *Revocations) Configure(cfg *RevocationConfig) {
	settings := cfg.settings()
	r.cfg.Store(&settings)
}

// Config returns the settings in force, with defaults applied.
func (r *Revocations) Config() RevocationConfig { return *r.cfg.Load() }

// Close stops following the store; the last snapshot stays readable. It is safe to call
// more than once.
func (r *Revocations) Close() error {
	r.closeOnce.Do(func() {
		r.cancel()
		<-r.done
	})
	return nil
}

// Revoked reports whether p's token (its jti claim) or p's subject is revoked. It is the
// hot path: one atomic load, and with a non-empty list a digest and a map lookup per name.
// A nil Revocations revokes nothing.
func (r *Revocations) Revoked(p gateway.Principal) bool {
	if r == nil {
		return false
	}
	s := r.snap.Load()
	if len(s.entries) == 0 {
		return false
	}
	now := r.now().UnixMilli()
	if jti, _ := p.Claims[claimJti].(string); jti != "" && s.live(keyOf(revKindJTI, jti), now) {
		return true
	}
	return p.Subject != "" && s.live(keyOf(revKindSub, p.Subject), now)
}

// follow syncs every refresh until Close, and at once when another replica announces a
// change on the store's bus (revoke_bus.go).
func (r *Revocations) follow() {
	defer close(r.done)
	t := time.NewTimer(r.cfg.Load().Refresh)
	defer t.Stop()
	var notes changeNotes
	defer notes.close()
	notes.open(r)
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-t.C:
			notes.open(r) // again, if the bus could not be subscribed to or its subscription ended
		case _, ok := <-notes.c():
			if !ok {
				notes.close()
				continue
			}
			t.Stop() // Reset below; since Go 1.23 a stopped timer delivers nothing stale
		case <-r.changed: // a change made here: in the snapshot already
			r.notify()
			continue
		}
		refresh := r.cfg.Load().Refresh
		ctx, cancel := context.WithTimeout(r.ctx, refresh)
		before := r.snap.Load().stamp
		err := r.sync(ctx)
		cancel()
		if r.ctx.Err() != nil {
			return
		}
		if r.snap.Load().stamp != before {
			r.notify()
		}
		r.mu.Lock()
		switch {
		case err != nil && !r.failing:
			r.log.Warn("reading the revocation list failed; the last one read stays in force", "err", err)
		case err == nil && r.failing:
			r.log.Info("reading the revocation list works again")
		}
		r.failing = err != nil
		r.mu.Unlock()
		t.Reset(refresh)
	}
}

// sync installs the store's index when its version differs from the snapshot's, and
// otherwise drops the snapshot's expired entries.
func (r *Revocations) sync(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	cur := r.snap.Load()
	version, _, err := r.kv.Get(ctx, r.versionKey)
	if err != nil {
		return err
	}
	now := r.now().UnixMilli()
	if string(version) == cur.stamp {
		if now >= cur.next {
			r.snap.Store(cur.pruned(now))
		}
		return nil
	}
	idx, _, err := r.readIndex(ctx)
	if err != nil {
		return err
	}
	r.snap.Store(newSnapshot(idx, now))
	return nil
}

// Revoke adds (or replaces) the revocation req asks for and returns it. The change is in
// force on this replica when Revoke returns, on the others within their refresh.
func (r *Revocations) Revoke(ctx context.Context, req RevokeRequest) (Revocation, error) {
	kind, value, err := revocationTarget(req.JTI, req.Subject)
	if err != nil {
		return Revocation{}, err
	}
	if len(req.Reason) > maxRevocationReasonBytes {
		return Revocation{}, &RevocationParamError{"reason", fmt.Sprintf("longer than %d bytes", maxRevocationReasonBytes)}
	}
	cfg := r.cfg.Load()
	now := r.now()
	expires, err := revocationExpiry(cfg, now, req.ExpiresAt, req.TTL)
	if err != nil {
		return Revocation{}, err
	}
	key := keyOf(kind, value)
	rec := Revocation{Kind: key.kindName(), ExpiresAt: expires.UTC(), RevokedAt: now.UTC().Truncate(time.Millisecond),
		RevokedBy: req.By, Reason: req.Reason}
	if kind == revKindJTI {
		rec.JTI = value
	} else {
		rec.Subject = value
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	// The record first: the index is what is enforced, the record only names an entry, so
	// an entry is never in force without one (unless the record was deleted by hand).
	if err := r.putRecord(ctx, key, rec, expires.Sub(now)); err != nil {
		return Revocation{}, err
	}
	existed := false
	err = r.update(ctx, func(idx *storedIndex, _ int64) error {
		i := idx.find(key)
		existed = i >= 0
		switch {
		case existed:
			idx.Entries[i].Expires = expires.UnixMilli()
		case len(idx.Entries) >= cfg.MaxEntries:
			return fmt.Errorf("%w: %d revocations are live (auth.revocation.max_entries); remove some or wait for them to expire",
				ErrRevocationsFull, len(idx.Entries))
		default:
			idx.Entries = append(idx.Entries, storedEntry{Kind: string(kind), Digest: digestText(key), Expires: expires.UnixMilli()})
		}
		return nil
	})
	if err != nil {
		if !existed {
			_, _ = r.kv.Delete(ctx, r.recordKey(key)) // the entry was not added: neither is its record
		}
		return Revocation{}, err
	}
	r.log.Info("revoked", "kind", rec.Kind, rec.Kind, value, "expires_at", rec.ExpiresAt, "by", rec.RevokedBy,
		"reason", rec.Reason, "replaced", existed)
	return rec, nil
}

// Remove ends the revocation of a jti or a subject (exactly one non-empty) before its time
// and returns it; ErrNotRevoked when there was none. by is the operator, for the audit line.
func (r *Revocations) Remove(ctx context.Context, jti, subject, by string) (Revocation, error) {
	kind, value, err := revocationTarget(jti, subject)
	if err != nil {
		return Revocation{}, err
	}
	key := keyOf(kind, value)
	r.mu.Lock()
	defer r.mu.Unlock()
	var removed storedEntry
	err = r.update(ctx, func(idx *storedIndex, _ int64) error {
		i := idx.find(key)
		if i < 0 {
			return ErrNotRevoked
		}
		removed = idx.Entries[i]
		idx.Entries = slices.Delete(idx.Entries, i, i+1)
		return nil
	})
	if err != nil {
		return Revocation{}, err
	}
	rec, ok, err := r.readRecord(ctx, key)
	if err != nil || !ok {
		rec = Revocation{Kind: key.kindName()}
		if kind == revKindJTI {
			rec.JTI = value
		} else {
			rec.Subject = value
		}
	}
	rec.ExpiresAt = time.UnixMilli(removed.Expires).UTC()
	if _, err := r.kv.Delete(ctx, r.recordKey(key)); err != nil {
		r.log.Warn("deleting a removed revocation's record", "err", err) // it expires anyway
	}
	r.log.Info("revocation removed", "kind", rec.Kind, rec.Kind, value, "by", by, "revoked_by", rec.RevokedBy)
	return rec, nil
}

// List returns the live revocations, read from the store (not the snapshot), newest first.
func (r *Revocations) List(ctx context.Context) ([]Revocation, error) {
	idx, _, err := r.readIndex(ctx)
	if err != nil {
		return nil, err
	}
	now := r.now().UnixMilli()
	idx.prune(now)
	out := make([]Revocation, 0, len(idx.Entries))
	for _, e := range idx.Entries {
		key, _ := e.key() // decodeIndex checked every entry
		rec, ok, err := r.readRecord(ctx, key)
		if err != nil {
			return nil, err
		}
		if !ok {
			rec = Revocation{Kind: key.kindName(), Digest: key.hex()}
		}
		rec.ExpiresAt = time.UnixMilli(e.Expires).UTC()
		out = append(out, rec)
	}
	slices.SortStableFunc(out, func(a, b Revocation) int {
		return cmp.Or(b.RevokedAt.Compare(a.RevokedAt), a.ExpiresAt.Compare(b.ExpiresAt))
	})
	return out, nil
}

// update replaces the stored index with edit's result, by compare-and-swap, retrying on a
// concurrent change, and installs it as the snapshot. Expired entries are dropped first.
// Each write gets a fresh random version, stored under the version key before the index:
// a replica that reads the new version before the new index reads the index again at its
// next sync, so none ever keeps an old index under a new version. (A writer that stops
// between the two leaves a version no index has: replicas then re-read the index every
// refresh until the next change — more reads, never a missed change.) The caller holds mu.
func (r *Revocations) update(ctx context.Context, edit func(idx *storedIndex, now int64) error) error {
	for range revocationCASAttempts {
		idx, old, err := r.readIndex(ctx)
		if err != nil {
			return err
		}
		now := r.now().UnixMilli()
		idx.prune(now)
		if err := edit(&idx, now); err != nil {
			return err
		}
		idx.Version, idx.Stamp = storedIndexVersion, rand.Text()
		val, err := json.Marshal(idx)
		if err != nil {
			return fmt.Errorf("encoding the revocation list: %w", err)
		}
		if l, ok := r.kv.(state.Limited); ok && len(val) > l.Limits().MaxValueBytes {
			return fmt.Errorf("%w: the list needs %d bytes, over the state store's value limit (%d)",
				ErrRevocationsFull, len(val), l.Limits().MaxValueBytes)
		}
		ttl := idx.ttl(now)
		if err := r.kv.Set(ctx, r.versionKey, []byte(idx.Stamp), ttl); err != nil {
			return fmt.Errorf("writing the revocation list's version: %w", err)
		}
		swapped, err := r.kv.CompareAndSwap(ctx, r.indexKey, old, val, ttl)
		switch {
		case errors.Is(err, state.ErrTooLarge):
			return fmt.Errorf("%w: the list does not fit the state store's value limit: %w", ErrRevocationsFull, err)
		case err != nil:
			return fmt.Errorf("writing the revocation list: %w", err)
		case swapped:
			r.snap.Store(newSnapshot(idx, now))
			r.wake()
			r.announce(ctx, idx.Stamp)
			return nil
		}
	}
	return errors.New("revocation list: the list changed too often to update")
}

// readIndex reads and decodes the stored index; absent, it is empty and raw is nil.
func (r *Revocations) readIndex(ctx context.Context) (idx storedIndex, raw []byte, err error) {
	raw, ok, err := r.kv.Get(ctx, r.indexKey)
	if err != nil || !ok {
		return storedIndex{}, nil, err
	}
	idx, err = decodeIndex(raw)
	if err != nil {
		return storedIndex{}, nil, err
	}
	return idx, raw, nil
}

func (r *Revocations) recordKey(k revKey) string { return r.recPx + k.hex() }

func (r *Revocations) putRecord(ctx context.Context, k revKey, rec Revocation, ttl time.Duration) error {
	val, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encoding a revocation: %w", err)
	}
	if err := r.kv.Set(ctx, r.recordKey(k), val, max(ttl, time.Millisecond)); err != nil {
		return fmt.Errorf("writing a revocation: %w", err)
	}
	return nil
}

// readRecord reads the record of k; one that does not match k counts as missing.
func (r *Revocations) readRecord(ctx context.Context, k revKey) (Revocation, bool, error) {
	raw, ok, err := r.kv.Get(ctx, r.recordKey(k))
	if err != nil || !ok {
		return Revocation{}, false, err
	}
	rec, ok := decodeRecord(raw, k)
	return rec, ok, nil
}

// decodeRecord decodes a stored record; false when it is not the record of k.
func decodeRecord(raw []byte, k revKey) (Revocation, bool) {
	var rec Revocation
	if json.Unmarshal(raw, &rec) != nil {
		return Revocation{}, false
	}
	switch {
	case rec.Kind == RevocationJTI && rec.JTI != "" && keyOf(revKindJTI, rec.JTI) == k:
	case rec.Kind == RevocationSubject && rec.Subject != "" && keyOf(revKindSub, rec.Subject) == k:
	default:
		return Revocation{}, false
	}
	rec.Digest = ""
	return rec, true
}

// revocationTarget checks that exactly one of jti and subject is given.
func revocationTarget(jti, subject string) (kind byte, value string, err error) {
	switch {
	case (jti == "") == (subject == ""):
		return 0, "", &RevocationParamError{RevocationJTI, "exactly one of jti and sub is required"}
	case len(jti) > maxRevocationValueBytes:
		return 0, "", &RevocationParamError{RevocationJTI, fmt.Sprintf("longer than %d bytes", maxRevocationValueBytes)}
	case len(subject) > maxRevocationValueBytes:
		return 0, "", &RevocationParamError{RevocationSubject, fmt.Sprintf("longer than %d bytes", maxRevocationValueBytes)}
	case jti != "":
		return revKindJTI, jti, nil
	default:
		return revKindSub, subject, nil
	}
}

// revocationExpiry is when a revocation asked for at now ends, in whole milliseconds.
func revocationExpiry(cfg *RevocationConfig, now time.Time, at time.Time, ttl time.Duration) (time.Time, error) {
	limit := now.Add(cfg.MaxTTL)
	switch {
	case !at.IsZero() && ttl != 0:
		return time.Time{}, &RevocationParamError{paramTTL, "give expires_at or ttl, not both"}
	case !at.IsZero() && !at.After(now):
		return time.Time{}, &RevocationParamError{paramExpiresAt, "is not in the future (a token past its exp is refused anyway)"}
	case !at.IsZero() && at.After(limit):
		return time.Time{}, &RevocationParamError{paramExpiresAt,
			fmt.Sprintf("is more than max_ttl (%s) ahead; revoke by sub, or raise auth.revocation.max_ttl", cfg.MaxTTL)}
	case !at.IsZero():
	case ttl < 0:
		return time.Time{}, &RevocationParamError{paramTTL, "must be positive"}
	case ttl > cfg.MaxTTL:
		return time.Time{}, &RevocationParamError{paramTTL, fmt.Sprintf("is longer than max_ttl (%s)", cfg.MaxTTL)}
	case ttl > 0:
		at = now.Add(ttl)
	default:
		at = now.Add(cfg.DefaultTTL)
	}
	// Round up, so the revocation never ends before the time asked for.
	if t := at.Truncate(time.Millisecond); t.Before(at) {
		at = t.Add(time.Millisecond)
	}
	return at, nil
}

// revSnapshot is one immutable view of the index: digests and their expiries.
type revSnapshot struct {
	stamp   string
	entries map[revKey]int64 // expiry, Unix milliseconds
	next    int64            // the earliest expiry (math.MaxInt64: none)
}

func newSnapshot(idx storedIndex, now int64) *revSnapshot {
	s := &revSnapshot{stamp: idx.Stamp, entries: make(map[revKey]int64, len(idx.Entries)), next: math.MaxInt64}
	for _, e := range idx.Entries {
		if e.Expires <= now {
			continue
		}
		k, _ := e.key() // decodeIndex or update produced it
		s.entries[k] = e.Expires
		s.next = min(s.next, e.Expires)
	}
	return s
}

// pruned returns s without the entries expired at now, under the same stamp.
func (s *revSnapshot) pruned(now int64) *revSnapshot {
	out := &revSnapshot{stamp: s.stamp, entries: make(map[revKey]int64, len(s.entries)), next: math.MaxInt64}
	for k, exp := range s.entries {
		if exp > now {
			out.entries[k] = exp
			out.next = min(out.next, exp)
		}
	}
	return out
}

func (s *revSnapshot) live(k revKey, now int64) bool {
	exp, ok := s.entries[k]
	return ok && now < exp
}

// storedIndex is the index as stored: every live entry, and the random stamp of this
// version (the version key holds the same stamp).
type storedIndex struct {
	Version int           `json:"v"`
	Stamp   string        `json:"stamp"`
	Entries []storedEntry `json:"e"`
}

// storedEntry is one entry: kind ("j" or "s"), the base64url digest of the jti or subject,
// and the expiry in Unix milliseconds. Its encoding is at most maxStoredEntryBytes long.
type storedEntry struct {
	Kind    string `json:"k"`
	Digest  string `json:"d"`
	Expires int64  `json:"x"`
}

const (
	storedIndexVersion = 1
	// maxStampBytes bounds the stamp of a stored index (rand.Text gives 26).
	maxStampBytes = 64
)

var digestEncoding = base64.RawURLEncoding

func digestText(k revKey) string { return digestEncoding.EncodeToString(k[1:]) }

// key returns the snapshot key of e; false when e is not well formed.
func (e storedEntry) key() (revKey, bool) {
	var k revKey
	if len(e.Kind) != 1 || (e.Kind[0] != revKindJTI && e.Kind[0] != revKindSub) {
		return k, false
	}
	if digestEncoding.DecodedLen(len(e.Digest)) != revDigestBytes {
		return k, false
	}
	n, err := digestEncoding.Decode(k[1:], []byte(e.Digest))
	if err != nil || n != revDigestBytes || digestEncoding.EncodeToString(k[1:]) != e.Digest {
		return k, false
	}
	k[0] = e.Kind[0]
	return k, true
}

func (idx *storedIndex) find(k revKey) int {
	d := digestText(k)
	return slices.IndexFunc(idx.Entries, func(e storedEntry) bool { return e.Kind[0] == k[0] && e.Digest == d })
}

func (idx *storedIndex) prune(now int64) {
	idx.Entries = slices.DeleteFunc(idx.Entries, func(e storedEntry) bool { return e.Expires <= now })
}

// ttl is how long the index written at now is kept: past its last entry by the grace.
func (idx *storedIndex) ttl(now int64) time.Duration {
	last := now
	for _, e := range idx.Entries {
		last = max(last, e.Expires)
	}
	return time.Duration(last-now)*time.Millisecond + revocationIndexGrace
}

// decodeIndex decodes a stored index, refusing anything this package would not have
// written: another version, a bad stamp, a malformed or duplicate entry.
func decodeIndex(data []byte) (storedIndex, error) {
	var idx storedIndex
	if err := json.Unmarshal(data, &idx); err != nil {
		return storedIndex{}, fmt.Errorf("decoding the revocation list: %w", err)
	}
	if idx.Version != storedIndexVersion || idx.Stamp == "" || len(idx.Stamp) > maxStampBytes {
		return storedIndex{}, errors.New("decoding the revocation list: unknown version or bad stamp")
	}
	seen := make(map[revKey]bool, len(idx.Entries))
	for i, e := range idx.Entries {
		k, ok := e.key()
		if !ok || e.Expires <= 0 || seen[k] {
			return storedIndex{}, fmt.Errorf("decoding the revocation list: entry %d is malformed or repeated", i)
		}
		seen[k] = true
	}
	return idx, nil
}
