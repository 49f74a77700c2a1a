package a2aface

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	mrand "math/rand/v2"
	"slices"
	"time"

	"github.com/gatehouse-dev/gatehouse/codecs/a2a"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
	"github.com/gatehouse-dev/gatehouse/state"
)

// The face keeps one record per A2A task in the state store (embedded or Redis, so
// replicas share it), under taskPrefix + id, and one index per principal under
// ownerPrefix + owner: the ids of its tasks, oldest first, for ListTasks and the
// per-principal bound. Both expire a2a.task_ttl after they were written.
const (
	taskPrefix  = "a2a:task:"
	ownerPrefix = "a2a:own:"
	// casAttempts bounds the compare-and-swap retries on an index written concurrently;
	// each waits up to casBackoff first.
	casAttempts = 64
	casBackoff  = 2 * time.Millisecond
)

// owner is the principal a task is bound to: a hash of its issuer and subject, so that a
// subject of one issuer never reaches the tasks of the same subject of another.
type owner string

// ownerOf returns the owner key of p: the token's issuer (the iss claim) and subject; API
// keys and anonymous callers, which have no issuer, each in their own namespace.
func ownerOf(p gateway.Principal) owner {
	iss, _ := p.Claims["iss"].(string)
	switch {
	case iss != "":
		iss = "jwt\x00" + iss
	case p.Anonymous:
		iss = "anonymous"
	default:
		iss = "key"
	}
	sum := sha256.Sum256([]byte(iss + "\x00" + p.Subject))
	return owner(hex.EncodeToString(sum[:16]))
}

// record is an A2A task as the face keeps it: what binds it, what it runs, and the
// messages of its history. Its state, progress and artifacts are the NEKTE task's.
type record struct {
	ID        string        `json:"id"`
	ContextID string        `json:"ctx"`
	Owner     owner         `json:"owner"`
	Skill     string        `json:"skill"`
	CreatedAt int64         `json:"created"`
	History   []a2a.Message `json:"history"`
}

// newID returns an unguessable id: 128 random bits, base64url.
func newID(prefix string) string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return prefix + base64.RawURLEncoding.EncodeToString(b[:])
}

// store is the face's records in the state store.
type store struct {
	kv  state.KV
	ttl time.Duration
	max int
}

// errQuota is the refusal of a task past a2a.max_tasks_per_principal.
func errQuota(limit int) *gateway.Error {
	return gateway.Errorf(schemas.CodeQuota, "Too many tasks: at most %d per caller are kept", limit).
		With("limit", "a2a.max_tasks_per_principal").With("max", limit)
}

// create stores r and adds it to its owner's index, unless the owner holds the most tasks
// already (tasks whose records expired are dropped from the index first).
func (s store) create(ctx context.Context, r *record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	key := ownerPrefix + string(r.Owner)
	for range casAttempts {
		old, ids, err := s.index(ctx, r.Owner)
		if err != nil {
			return err
		}
		if len(ids) >= s.max {
			ids = s.live(ctx, ids)
		}
		if len(ids) >= s.max {
			return errQuota(s.max)
		}
		next, _ := json.Marshal(append(ids, r.ID)) // strings always marshal
		ok, err := s.kv.CompareAndSwap(ctx, key, old, next, s.ttl)
		if err != nil {
			return err
		}
		if ok {
			return s.kv.Set(ctx, taskPrefix+r.ID, b, s.ttl)
		}
		if err := backoff(ctx); err != nil {
			return err
		}
	}
	return gateway.NewError(schemas.CodeUnavailable).With("reason", "the task index is being written concurrently")
}

// backoff waits a random while before another compare-and-swap of an index that changed
// under it, so that the callers racing on it spread out.
func backoff(ctx context.Context) error {
	t := time.NewTimer(time.Duration(mrand.Int64N(int64(casBackoff)))) //nolint:gosec // jitter, not a secret
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// remove drops a task that never started from the store and its owner's index.
func (s store) remove(ctx context.Context, r *record) {
	_, _ = s.kv.Delete(ctx, taskPrefix+r.ID)
	key := ownerPrefix + string(r.Owner)
	for range casAttempts {
		old, ids, err := s.index(ctx, r.Owner)
		if err != nil {
			return
		}
		ids = slices.DeleteFunc(ids, func(id string) bool { return id == r.ID })
		next, _ := json.Marshal(ids)
		if ok, err := s.kv.CompareAndSwap(ctx, key, old, next, s.ttl); ok || err != nil {
			return
		}
	}
}

// index returns the raw index of o (nil when absent) and its ids.
func (s store) index(ctx context.Context, o owner) ([]byte, []string, error) {
	raw, ok, err := s.kv.Get(ctx, ownerPrefix+string(o))
	if err != nil || !ok {
		return nil, nil, err
	}
	var ids []string
	if err := json.Unmarshal(raw, &ids); err != nil {
		return raw, nil, nil //nolint:nilerr // a corrupt index is replaced by the next write
	}
	return raw, ids, nil
}

// live returns the ids whose records are still there.
func (s store) live(ctx context.Context, ids []string) []string {
	out := ids[:0:0]
	for _, id := range ids {
		if _, ok, err := s.kv.Get(ctx, taskPrefix+id); err != nil || ok {
			out = append(out, id)
		}
	}
	return out
}

// errNotFound is get's error for a task that is not there or not o's.
var errNotFound = errors.New("a2a task not found")

// get returns o's task id; errNotFound when it does not exist or belongs to another.
func (s store) get(ctx context.Context, o owner, id string) (*record, error) {
	raw, ok, err := s.kv.Get(ctx, taskPrefix+id)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errNotFound
	}
	r := new(record)
	if err := json.Unmarshal(raw, r); err != nil || r.Owner != o {
		return nil, errNotFound
	}
	return r, nil
}

// list returns o's tasks, newest first.
func (s store) list(ctx context.Context, o owner) ([]*record, error) {
	_, ids, err := s.index(ctx, o)
	if err != nil {
		return nil, err
	}
	out := make([]*record, 0, len(ids))
	for _, id := range slices.Backward(ids) {
		r, err := s.get(ctx, o, id)
		switch {
		case err == nil:
			out = append(out, r)
		case !errors.Is(err, errNotFound):
			return nil, err
		}
	}
	return out, nil
}
