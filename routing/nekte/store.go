package nekte

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"time"

	nk "github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
	"github.com/gatehouse-dev/gatehouse/state"
)

// Key prefixes of the records this package keeps in the state store.
const (
	prefixTask   = "nekte:task:"   // + owner + ":" + task id → record
	prefixActive = "nekte:active:" // + owner → JSON array of the owner's unfinished task ids
)

// casAttempts bounds the compare-and-swap retries of one change; past it the change fails
// with a retryable error rather than spin.
const casAttempts = 32

// taskRecords is the state of the task registry: one record per task, changed only by
// compare-and-swap (apply), and per owner the unfinished tasks that bound its quota.
// taskStore implements it on state's KV, so the embedded store and Redis serve it
// alike.
type taskRecords interface {
	create(ctx context.Context, r *record) error
	discard(ctx context.Context, owner, id string) error
	get(ctx context.Context, owner, id string) (*record, error)
	apply(ctx context.Context, owner, id string, change func(r *record) error) (*record, error)
	admit(ctx context.Context, owner, id string) error
	release(ctx context.Context, owner, id string) error
}

var _ taskRecords = (*taskStore)(nil)

// taskStore keeps task records in the shared state store: one JSON record per task, and
// per owner the list of unfinished task ids that bounds how many an owner may have.
type taskStore struct {
	kv  state.KV
	cfg TasksConfig
	lim logLimits
	// onStatus is told of each status change this store writes (Options.OnTaskStatus);
	// nil: no one is.
	onStatus func(from, to string)
}

// moved tells onStatus of a status change, when it changed.
func (s *taskStore) moved(from, to string) {
	if s.onStatus != nil && from != to {
		s.onStatus(from, to)
	}
}

func newTaskStore(kv state.KV, cfg TasksConfig) *taskStore {
	return &taskStore{kv: kv, cfg: cfg, lim: logLimits{
		maxEvents: cfg.MaxEvents, maxBytes: cfg.MaxEventBytes, maxPartials: cfg.MaxPartials,
	}}
}

// ownerKey encodes a principal subject for use inside a key (base64url has no ':').
func ownerKey(owner string) string { return base64.RawURLEncoding.EncodeToString([]byte(owner)) }

func taskKey(owner, id string) string { return prefixTask + ownerKey(owner) + ":" + id }

// get returns the owner's task id; TASK_NOT_FOUND when there is none (whoever else owns
// a task of that id).
func (s *taskStore) get(ctx context.Context, owner, id string) (*record, error) {
	r, _, err := s.load(ctx, owner, id)
	return r, err
}

func (s *taskStore) load(ctx context.Context, owner, id string) (*record, []byte, error) {
	raw, ok, err := s.kv.Get(ctx, taskKey(owner, id))
	if err != nil {
		return nil, nil, gateway.AsError(err)
	}
	if !ok {
		return nil, nil, errTaskNotFound(id)
	}
	r := &record{lim: s.lim}
	if err := json.Unmarshal(raw, r); err != nil {
		return nil, nil, gateway.NewError(schemas.CodeInternal).Wrap(err)
	}
	return r, raw, nil
}

// create stores a new record; a record of the same owner and id makes it fail with a
// duplicate-task error.
func (s *taskStore) create(ctx context.Context, r *record) error {
	r.lim = s.lim
	raw, err := json.Marshal(r)
	if err != nil {
		return gateway.NewError(schemas.CodeInternal).Wrap(err)
	}
	ok, err := s.kv.SetNX(ctx, taskKey(r.Owner, r.ID), raw, r.ttl(s.cfg))
	switch {
	case err != nil:
		return gateway.AsError(err)
	case !ok:
		return errDuplicateTask(r.ID)
	default:
		s.moved("", string(r.Status))
		return nil
	}
}

// discard deletes a task record that was created but refused before anyone could see it
// (so before its status moved from pending).
func (s *taskStore) discard(ctx context.Context, owner, id string) error {
	deleted, err := s.kv.Delete(ctx, taskKey(owner, id))
	if err != nil {
		return gateway.AsError(err)
	}
	if deleted {
		s.moved(string(nk.TaskPending), "")
	}
	return nil
}

// apply changes the owner's task id with change and stores the result with one
// compare-and-swap, retrying on a fresh read when another writer got there first. change
// sees a freshly decoded record each time; an error from it aborts without writing. On
// success the record as stored is returned, its fresh field holding the events change
// emitted.
func (s *taskStore) apply(ctx context.Context, owner, id string, change func(r *record) error) (*record, error) {
	for range casAttempts {
		r, raw, err := s.load(ctx, owner, id)
		if err != nil {
			return nil, err
		}
		from := r.Status
		if err := change(r); err != nil {
			return nil, err
		}
		next, err := json.Marshal(r)
		if err != nil {
			return nil, gateway.NewError(schemas.CodeInternal).Wrap(err)
		}
		ok, err := s.kv.CompareAndSwap(ctx, taskKey(owner, id), raw, next, r.ttl(s.cfg))
		if err != nil {
			return nil, gateway.AsError(err)
		}
		if ok {
			s.moved(string(from), string(r.Status))
			return r, nil
		}
	}
	return nil, errBusy()
}

// admit adds a new task to its owner's unfinished tasks, refusing it when the owner has
// MaxPerOwner already. Ids whose task has finished or expired are pruned on the way, so a
// crashed process cannot hold an owner's quota for good.
func (s *taskStore) admit(ctx context.Context, owner, id string) error {
	return s.updateActive(ctx, owner, func(ids []string) ([]string, error) {
		live := ids[:0:0]
		for _, other := range ids {
			if other == id || !s.unfinished(ctx, owner, other) {
				continue
			}
			live = append(live, other)
		}
		if len(live) >= s.cfg.MaxPerOwner {
			return nil, errTooManyTasks(s.cfg.MaxPerOwner)
		}
		return append(live, id), nil
	})
}

// release removes a finished task from its owner's unfinished tasks.
func (s *taskStore) release(ctx context.Context, owner, id string) error {
	return s.updateActive(ctx, owner, func(ids []string) ([]string, error) {
		return slices.DeleteFunc(ids, func(x string) bool { return x == id }), nil
	})
}

// unfinished reports whether the owner's task id exists and is not terminal; a read
// error counts as unfinished, so that the quota errs on the safe side.
func (s *taskStore) unfinished(ctx context.Context, owner, id string) bool {
	r, err := s.get(ctx, owner, id)
	if err != nil {
		var ge *gateway.Error
		return !errors.As(err, &ge) || ge.Code() != schemas.CodeTaskNotFound
	}
	return !r.Status.Terminal()
}

// updateActive rewrites the owner's list of unfinished task ids with one compare-and-swap.
func (s *taskStore) updateActive(ctx context.Context, owner string, change func([]string) ([]string, error)) error {
	key := prefixActive + ownerKey(owner)
	for range casAttempts {
		raw, ok, err := s.kv.Get(ctx, key)
		if err != nil {
			return gateway.AsError(err)
		}
		var ids []string
		if ok && json.Unmarshal(raw, &ids) != nil {
			ids = nil
		}
		ids, err = change(ids)
		if err != nil {
			return err
		}
		var next []byte
		if len(ids) > 0 {
			next, _ = json.Marshal(ids)
		}
		if !ok {
			raw = nil
		}
		if next == nil && raw == nil {
			return nil
		}
		swapped, err := s.kv.CompareAndSwap(ctx, key, raw, next, s.cfg.ActiveTTL)
		if err != nil {
			return gateway.AsError(err)
		}
		if swapped {
			return nil
		}
	}
	return errBusy()
}

// nowMs returns t as epoch milliseconds.
func nowMs(t time.Time) int64 { return t.UnixMilli() }
