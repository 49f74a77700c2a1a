package mcpface

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
	"github.com/gatehouse-dev/gatehouse/state"
)

// taskIndex is, per principal, the MCP tasks the face created for it and until when it
// answers for each: one JSON value per principal in the shared state store, changed by
// compare-and-swap, so that every replica lists, reads and cancels the same tasks. The
// tasks themselves are the NEKTE service's records; the index only says which of them
// were made over MCP by whom, and bounds how many and for how long.
type taskIndex struct {
	kv  state.KV
	max int           // mcp_face.tasks.max_per_principal
	ttl time.Duration // mcp_face.tasks.result_ttl
	now func() time.Time
}

// indexedTask is one task of a principal's index. Times are epoch milliseconds.
type indexedTask struct {
	ID      string `json:"id"`
	Created int64  `json:"created"`
	Expires int64  `json:"expires"`
	// Progress is the caller's progress token of the task's tools/call, as sent.
	Progress json.RawMessage `json:"progress,omitempty"`
}

// ttlMs is the task's lifetime from its creation, the ttl MCP reports.
func (t indexedTask) ttlMs() int64 { return t.Expires - t.Created }

// prefixTaskIndex + base64url(owner) → the JSON array of a caller's indexedTasks (owner:
// gateway.Principal.Owner, the token's issuer and subject).
const prefixTaskIndex = "mcp:tasks:"

// indexCASAttempts bounds the compare-and-swap retries of one change of an index.
const indexCASAttempts = 32

// errTooManyTasks refuses a task past mcp_face.tasks.max_per_principal.
func errTooManyTasks(limit int) *gateway.Error {
	return gateway.Errorf(schemas.CodeQuota, "Too many MCP tasks: at most %d per caller (mcp_face.tasks.max_per_principal)", limit).
		With("limit", limit)
}

// errIndexBusy is a change that lost the compare-and-swap race too often.
var errIndexBusy = errors.New("the MCP task index changed too often to be updated")

func indexKey(subject string) string {
	return prefixTaskIndex + base64.RawURLEncoding.EncodeToString([]byte(subject))
}

// ttlFor is the lifetime a task asking for requested milliseconds gets: the request's,
// at most the result TTL; the result TTL when it asks for none (nil or not positive).
func (x *taskIndex) ttlFor(requested *int64) time.Duration {
	if requested == nil || *requested <= 0 {
		return x.ttl
	}
	return min(time.Duration(*requested)*time.Millisecond, x.ttl)
}

// add records a new task of subject, refusing it when subject holds max tasks already.
// Expired entries are dropped on the way.
func (x *taskIndex) add(ctx context.Context, subject string, t indexedTask) error {
	return x.update(ctx, subject, func(ts []indexedTask) ([]indexedTask, error) {
		if len(ts) >= x.max {
			return nil, errTooManyTasks(x.max)
		}
		return append(ts, t), nil
	})
}

// remove drops a task of subject (a creation that failed).
func (x *taskIndex) remove(ctx context.Context, subject, id string) error {
	return x.update(ctx, subject, func(ts []indexedTask) ([]indexedTask, error) {
		return slices.DeleteFunc(ts, func(t indexedTask) bool { return t.ID == id }), nil
	})
}

// get returns subject's task id; false when subject has none of that id (whoever else
// has) or it expired.
func (x *taskIndex) get(ctx context.Context, subject, id string) (indexedTask, bool, error) {
	ts, err := x.list(ctx, subject)
	if err != nil {
		return indexedTask{}, false, err
	}
	for _, t := range ts {
		if t.ID == id {
			return t, true, nil
		}
	}
	return indexedTask{}, false, nil
}

// list returns subject's live tasks, oldest first.
func (x *taskIndex) list(ctx context.Context, subject string) ([]indexedTask, error) {
	ts, _, _, err := x.load(ctx, subject)
	return ts, err
}

// load reads subject's index: its live tasks, the raw value and whether it exists.
func (x *taskIndex) load(ctx context.Context, subject string) ([]indexedTask, []byte, bool, error) {
	raw, ok, err := x.kv.Get(ctx, indexKey(subject))
	if err != nil {
		return nil, nil, false, fmt.Errorf("reading the MCP task index: %w", err)
	}
	var ts []indexedTask
	if ok && json.Unmarshal(raw, &ts) != nil {
		ts = nil // unreadable: start over rather than refuse the caller for good
	}
	now := x.now().UnixMilli()
	return slices.DeleteFunc(ts, func(t indexedTask) bool { return t.Expires <= now }), raw, ok, nil
}

// update rewrites subject's index with one compare-and-swap; the value lives as long as
// the result TTL from its last change, which outlives every entry in it.
func (x *taskIndex) update(ctx context.Context, subject string, change func([]indexedTask) ([]indexedTask, error)) error {
	key := indexKey(subject)
	for range indexCASAttempts {
		ts, raw, ok, err := x.load(ctx, subject)
		if err != nil {
			return err
		}
		ts, err = change(ts)
		if err != nil {
			return err
		}
		var next []byte
		if len(ts) > 0 {
			if next, err = json.Marshal(ts); err != nil {
				return err
			}
		}
		if !ok {
			raw = nil
		}
		if next == nil && raw == nil {
			return nil
		}
		swapped, err := x.kv.CompareAndSwap(ctx, key, raw, next, x.ttl)
		if err != nil {
			return fmt.Errorf("writing the MCP task index: %w", err)
		}
		if swapped {
			return nil
		}
	}
	return errIndexBusy
}
