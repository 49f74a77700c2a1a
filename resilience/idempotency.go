package resilience

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
	"github.com/gatehouse-dev/gatehouse/state"
)

// IdempotencyKeyMember is the params member that carries a call's idempotency key.
const IdempotencyKeyMember = "idempotency_key"

// IdempotencyConfig is the idempotency section. Absent, the stage is not in the chain and
// params.idempotency_key reaches the backend like any other member (a gRPC backend refuses
// it as an unknown field unless it has one of that name).
//
// With it, a call whose object params carry idempotency_key (a non-empty string) runs at most
// once per caller, method and key while its record lives: the first success is kept and
// replayed to every repeat; a repeat that arrives while the first runs waits for it; the
// same key with different params is refused. Failures are not kept: the caller may retry.
type IdempotencyConfig struct {
	// TTL is how long a success is kept and replayed.
	TTL time.Duration `yaml:"ttl" json:"ttl,omitempty"`
	// MaxKeyBytes bounds the length of a key (in bytes, after unescaping).
	MaxKeyBytes int `yaml:"max_key_bytes" json:"max_key_bytes,omitempty"`
	// MaxResultBytes bounds a kept result. A larger success is recorded without its result:
	// a repeat is told the call completed (INVALID_PARAMS, reason
	// idempotency_result_not_kept) and is not run again.
	MaxResultBytes int `yaml:"max_result_bytes" json:"max_result_bytes,omitempty"`
	// PollInterval is how often a waiting repeat reads the record, which the first call
	// may finish on any replica sharing the state store.
	PollInterval time.Duration `yaml:"poll_interval" json:"poll_interval,omitempty"`
}

// Defaults and bounds of the idempotency section.
const (
	DefaultIdempotencyTTL          = 24 * time.Hour
	DefaultIdempotencyMaxKeyBytes  = 255
	DefaultIdempotencyMaxResult    = 64 << 10
	DefaultIdempotencyPollInterval = 50 * time.Millisecond
	// MaxIdempotencyTTL bounds ttl.
	MaxIdempotencyTTL = 30 * 24 * time.Hour
	// MaxIdempotencyKeyBytes bounds max_key_bytes.
	MaxIdempotencyKeyBytes = 4096
	// MaxIdempotencyResult bounds max_result_bytes so a record fits the state store's
	// default value limit.
	MaxIdempotencyResult = state.DefaultMaxValueBytes - recordHeader
	// idempotencyLockGrace is how long a pending record outlives its call's deadline, and
	// bounds the store writes that finish or release it after the caller went away.
	idempotencyLockGrace = 5 * time.Second
	// idempotencyLockNoDeadline is the pending record's lifetime for a call without a
	// deadline (the deadline stage gives every call one).
	idempotencyLockNoDeadline = 5 * time.Minute
)

// WithDefaults returns c with zero fields set to their defaults.
func (c IdempotencyConfig) WithDefaults() IdempotencyConfig {
	if c.TTL == 0 {
		c.TTL = DefaultIdempotencyTTL
	}
	if c.MaxKeyBytes == 0 {
		c.MaxKeyBytes = DefaultIdempotencyMaxKeyBytes
	}
	if c.MaxResultBytes == 0 {
		c.MaxResultBytes = DefaultIdempotencyMaxResult
	}
	if c.PollInterval == 0 {
		c.PollInterval = DefaultIdempotencyPollInterval
	}
	return c
}

// Validate reports every problem of c with its defaults applied; paths are relative to
// the section.
func (c IdempotencyConfig) Validate() []ConfigError {
	c = c.WithDefaults()
	var errs []ConfigError
	bad := func(path, format string, args ...any) {
		errs = append(errs, ConfigError{Path: path, Msg: fmt.Sprintf(format, args...)})
	}
	if c.TTL < time.Second || c.TTL > MaxIdempotencyTTL {
		bad("ttl", "ttl is %s: it must be between 1s and %s", c.TTL, MaxIdempotencyTTL)
	}
	if c.MaxKeyBytes < 1 || c.MaxKeyBytes > MaxIdempotencyKeyBytes {
		bad("max_key_bytes", "max_key_bytes is %d: it must be between 1 and %d", c.MaxKeyBytes, MaxIdempotencyKeyBytes)
	}
	if c.MaxResultBytes < 1 || c.MaxResultBytes > MaxIdempotencyResult {
		bad("max_result_bytes", "max_result_bytes is %d: it must be between 1 and %d", c.MaxResultBytes, MaxIdempotencyResult)
	}
	if c.PollInterval < time.Millisecond || c.PollInterval >= c.TTL {
		bad("poll_interval", "poll_interval is %s: it must be at least 1ms and shorter than ttl (%s)", c.PollInterval, c.TTL)
	}
	return errs
}

// Classifier reports whether a call changes state, so that its idempotency key is honoured.
// The server passes one that reads the policy's mutation class (resilience may not import
// auth); nil means every call does.
type Classifier func(ctx context.Context, call *gateway.Call) bool

// Idempotency is the idempotency stage of one configuration.
type Idempotency struct {
	cfg      IdempotencyConfig
	records  IdempotencyRecords
	classify Classifier
	log      *slog.Logger
}

// NewIdempotencyStage returns the idempotency stage of cfg, its records kept in kv (the
// process's state store: records outlive a reload, and replicas sharing the store replay
// each other's results): nil, out of the chain, when cfg is nil. classify picks the calls
// whose keys are honoured (nil: all); log receives store failures after a call ran. An
// invalid section refuses every call.
func NewIdempotencyStage(cfg *IdempotencyConfig, kv state.KV, classify Classifier, log *slog.Logger) gateway.Middleware {
	if cfg == nil {
		return nil
	}
	s, err := NewIdempotency(*cfg, NewKVIdempotencyRecords(kv), classify, log)
	if err != nil {
		return refuseAll("the idempotency section is invalid", err)
	}
	return s.Middleware()
}

// NewIdempotency returns the stage for cfg (defaults applied) keeping records in records;
// classify picks the calls whose keys are honoured (nil: all). log receives store
// failures that happen after a call ran.
func NewIdempotency(cfg IdempotencyConfig, records IdempotencyRecords, classify Classifier, log *slog.Logger) (*Idempotency, error) {
	cfg = cfg.WithDefaults()
	if errs := cfg.Validate(); len(errs) > 0 {
		return nil, fmt.Errorf("idempotency: %w", errs[0])
	}
	if classify == nil {
		classify = func(context.Context, *gateway.Call) bool { return true }
	}
	return &Idempotency{cfg: cfg, records: records, classify: classify, log: log}, nil
}

type idempotencyKeyCtx struct{}

// IdempotencyKeyFrom returns the idempotency key the call running in ctx carried; ok is
// false when it carried none or the stage is not in the chain. The key is removed from the
// params the backend receives, so a backend cannot deduplicate by it: a stage that retries
// a call must not take the key as proof that running it twice at the backend is harmless,
// only that repeats by the caller are answered once.
func IdempotencyKeyFrom(ctx context.Context) (key string, ok bool) {
	key, ok = ctx.Value(idempotencyKeyCtx{}).(string)
	return key, ok
}

// Middleware returns the stage. A call whose object params carry idempotency_key loses
// that member (the backend never sees it, any face, any target); then, unless the call is a
// capability's input (nekte.invoke: no member of it is reserved) or the classifier says it
// changes no state, it runs at most once per caller, method and key.
func (s *Idempotency) Middleware() gateway.Middleware {
	return func(next gateway.Handler) gateway.Handler {
		return func(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
			if call.Capability != "" {
				return next(ctx, call)
			}
			key, params, found, err := s.cutKey(call.Params)
			if err != nil {
				return nil, err
			}
			if !found {
				return next(ctx, call)
			}
			call.Params = params
			ctx = context.WithValue(ctx, idempotencyKeyCtx{}, key)
			if !s.classify(ctx, call) {
				return next(ctx, call)
			}
			return s.once(ctx, call, key, next)
		}
	}
}

// keyMarker is how cutKey tells params that cannot hold the key without scanning them: the
// member's name, or any \u escape (which could spell it).
var keyMarker = []byte(IdempotencyKeyMember)

// cutKey returns the idempotency key of params and params without it; found is false when
// there is none. A key that is not a non-empty string of at most max_key_bytes is
// INVALID_PARAMS.
func (s *Idempotency) cutKey(params []byte) (key string, rest []byte, found bool, err error) {
	if !bytes.Contains(params, keyMarker) && !bytes.Contains(params, []byte(`\u`)) {
		return "", params, false, nil
	}
	value, rest, found, cerr := cutMember(params, IdempotencyKeyMember)
	if cerr != nil {
		return "", params, false, gateway.Errorf(schemas.CodeInvalidParams, "params are not a well-formed JSON object").Wrap(cerr)
	}
	if !found {
		return "", params, false, nil
	}
	if value[0] != '"' || json.Unmarshal(value, &key) != nil || key == "" || len(key) > s.cfg.MaxKeyBytes {
		return "", params, false, gateway.Errorf(schemas.CodeInvalidParams, "idempotency_key must be a non-empty string of at most %d bytes", s.cfg.MaxKeyBytes).
			With("reason", "idempotency_key_invalid").With("max_key_bytes", s.cfg.MaxKeyBytes)
	}
	return key, rest, true, nil
}

// once runs call at most once for its caller, method and key: it claims the record (and
// runs the call), or replays the record's success, or waits while another call holds it.
func (s *Idempotency) once(ctx context.Context, call *gateway.Call, key string, next gateway.Handler) (*gateway.Result, error) {
	digest, err := paramsDigest(call.Params)
	if err != nil {
		return nil, gateway.Errorf(schemas.CodeInvalidParams, "params are not well-formed JSON").Wrap(err)
	}
	rk := recordKey(callerIdentity(ctx, call.Principal), call.Method, key)
	lock := idemRecord{state: recordPending, digest: digest}
	_, _ = rand.Read(lock.owner[:])
	pending := lock.encode()
	var wait *time.Timer
	for {
		cur, ok, claimed, err := s.records.Claim(ctx, rk, pending, lockTTL(ctx))
		switch {
		case err != nil:
			return nil, storeError(ctx, err)
		case claimed:
			return s.run(ctx, call, rk, lock, pending, next)
		case ok:
			// A record that does not decode is waited out like a pending one: only this
			// stage writes under its keys.
			if rec, derr := decodeRecord(cur); derr == nil {
				if res, answered, err := s.decide(rec, digest); answered {
					return res, err
				}
			}
			if wait, err = pause(ctx, wait, s.cfg.PollInterval); err != nil {
				return nil, err
			}
		}
	}
}

// decide answers a repeat from the record found, with a replay or an error; answered is
// false while the first call still runs.
func (s *Idempotency) decide(rec idemRecord, digest [32]byte) (res *gateway.Result, answered bool, err error) {
	switch {
	case rec.digest != digest:
		return nil, true, gateway.Errorf(schemas.CodeInvalidParams, "idempotency_key was already used with different params").
			With("reason", "idempotency_key_reused")
	case rec.state == recordDone:
		return gateway.NewResult(rec.result), true, nil
	case rec.state == recordUnkept:
		return nil, true, gateway.Errorf(schemas.CodeInvalidParams, "The call with this idempotency_key completed; its result was not kept").
			With("reason", "idempotency_result_not_kept").With("max_result_bytes", s.cfg.MaxResultBytes)
	}
	return nil, false, nil
}

// run runs the call that claimed the record, then keeps its success (or releases the
// record after a failure, so the caller may retry).
func (s *Idempotency) run(ctx context.Context, call *gateway.Call, rk string, lock idemRecord, pending []byte, next gateway.Handler) (*gateway.Result, error) {
	res, err := next(ctx, call)
	if err != nil {
		s.release(ctx, rk, pending)
		return res, err
	}
	if res.Stream != nil {
		res.Stream = &recordedStream{Stream: res.Stream, done: func(completed bool) {
			if !completed {
				s.release(ctx, rk, pending)
				return
			}
			s.finish(ctx, rk, pending, idemRecord{state: recordUnkept, digest: lock.digest})
		}}
		return res, nil
	}
	value := res.Value
	if value == nil {
		value = []byte("null")
	}
	final := idemRecord{state: recordDone, digest: lock.digest, result: value}
	if len(value) > s.cfg.MaxResultBytes {
		final = idemRecord{state: recordUnkept, digest: lock.digest, size: uint64(len(value))}
	}
	s.finish(ctx, rk, pending, final)
	return res, nil
}

// finish replaces the pending record with final; a failure is logged, the call's outcome
// stands.
func (s *Idempotency) finish(ctx context.Context, rk string, pending []byte, final idemRecord) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), idempotencyLockGrace)
	defer cancel()
	replaced, err := s.records.Finish(cctx, rk, pending, final.encode(), s.cfg.TTL)
	switch {
	case err != nil:
		s.log.Error("keeping an idempotent call's outcome: a repeat will run it again", "key", rk, "err", err)
	case !replaced:
		s.log.Warn("an idempotent call outlived its lock: its outcome is not kept", "key", rk)
	}
}

// release removes the pending record after a failure, so a repeat runs the call again.
func (s *Idempotency) release(ctx context.Context, rk string, pending []byte) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), idempotencyLockGrace)
	defer cancel()
	if err := s.records.Release(cctx, rk, pending); err != nil {
		s.log.Warn("releasing an idempotency lock: repeats wait until it expires", "key", rk, "err", err)
	}
}

// lockTTL is how long a pending record lives: until the call's deadline and a grace, so a
// crashed owner never holds it for good.
func lockTTL(ctx context.Context) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		return max(time.Until(dl), 0) + idempotencyLockGrace
	}
	return idempotencyLockNoDeadline
}

// pause waits d on t (made on first use), or until ctx is done.
func pause(ctx context.Context, t *time.Timer, d time.Duration) (*time.Timer, error) {
	if t == nil {
		t = time.NewTimer(d)
	} else {
		t.Reset(d)
	}
	select {
	case <-ctx.Done():
		t.Stop()
		return t, gateway.AsError(ctx.Err())
	case <-t.C:
		return t, nil
	}
}

// storeError is the caller's error when the record cannot be read or claimed: the call is
// not run unprotected.
func storeError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return gateway.AsError(ctx.Err())
	}
	return gateway.Errorf(schemas.CodeUnavailable, "Idempotency state unavailable").
		With("retry_after_ms", storeErrorRetry.Milliseconds()).Wrap(err)
}

// recordedStream is a streamed result whose record is finished when the stream ends: kept
// as completed (its messages are not kept) when it was read to its end, released otherwise.
type recordedStream struct {
	gateway.Stream
	done      func(completed bool)
	completed atomic.Bool
	once      sync.Once
}

func (r *recordedStream) Recv(ctx context.Context) ([]byte, error) {
	msg, err := r.Stream.Recv(ctx)
	if errors.Is(err, io.EOF) {
		r.completed.Store(true)
	}
	return msg, err
}

func (r *recordedStream) Close() error {
	err := r.Stream.Close()
	r.once.Do(func() { r.done(r.completed.Load()) })
	return err
}
