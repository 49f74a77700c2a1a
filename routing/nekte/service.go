package nekte

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	nk "github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/capability"
	"github.com/gatehouse-dev/gatehouse/schemas"
	"github.com/gatehouse-dev/gatehouse/state"
)

// Catalog is what the Service needs of the capability registry. Implementations are safe
// for concurrent use.
type Catalog interface {
	// Lookup returns the capability of an id.
	Lookup(id string) (capability.Capability, bool)
	// Match returns the capability that best matches a free-text task description.
	Match(query string) (capability.Capability, bool)
	// DiscoverWith answers nekte.discover with the result's JSON.
	DiscoverWith(p nk.DiscoverParams, o capability.DiscoverOptions) (json.RawMessage, error)
	// Invoke answers nekte.invoke, running the capability on inv with the caller in ctx.
	// On return, the result is non-nil iff err is nil.
	Invoke(ctx context.Context, inv capability.Invoker, p nk.InvokeParams) (*nk.InvokeResult, error)
	// Observe records one completed task of capability id (its running time and the tokens
	// of the result it returned) in the capability's cost hint.
	Observe(id string, d time.Duration, tokens int)
}

// Options are what a Service is built from beside its Config.
type Options struct {
	// KV is the shared state store: task records and persist: true context envelopes.
	KV state.KV
	// Catalog is the capability registry.
	Catalog Catalog
	// Invoker runs capabilities for nekte.invoke, delegated tasks and verify's sample
	// check.
	Invoker capability.Invoker
	// Logger receives what cannot be reported to a caller (default: discard).
	Logger *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
	// OnTaskStatus, when set, is told of every task status change this process writes:
	// from "" when a task is created, to "" when a task refused before it started is
	// discarded. Changes other replicas write are theirs to tell. It must not block.
	OnTaskStatus func(from, to string)
	// RecentTasks bounds the tasks this process remembers for the operator's view
	// (OperatorTasks); 0 takes DefaultRecentTasks.
	RecentTasks int
}

// stateValueLimit is the value limit Config.Validate assumes; New checks the store's own.
const stateValueLimit = state.DefaultMaxValueBytes

// Service is the NEKTE target: it serves every nekte.* method (Routes), runs delegated
// tasks, keeps context envelopes and signs receipts. Create it with New; Close it (after
// SuspendAll, when draining) to stop its tasks.
type Service struct {
	cfg      Config
	tasks    taskRecords
	contexts envelopes
	store    *contextStore // contexts, for UsePeers and the peer calls
	local    *state.Embedded
	signer   *signer
	catalog  Catalog
	invoker  capability.Invoker
	log      *slog.Logger
	now      func() time.Time

	hubs hubs
	runs runSet
	// recent are the tasks this process created, for the operator (admin.go).
	recent *recentTasks

	closing   chan struct{}
	closeOnce sync.Once
}

var (
	_ gateway.Target = (*Service)(nil)
	_ gateway.Closer = (*Service)(nil)
)

// New validates cfg, applies its defaults and returns the Service. It loads or generates
// the receipt key and starts the process-local store of persist: false envelopes (Close
// stops it).
func New(cfg Config, opts Options) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if opts.KV == nil || opts.Catalog == nil || opts.Invoker == nil {
		return nil, errors.New("nekte: Options.KV, Options.Catalog and Options.Invoker are required")
	}
	cfg = cfg.WithDefaults()
	if l, ok := opts.KV.(state.Limited); ok {
		if err := cfg.checkRecordSize(l.Limits().MaxValueBytes); err != nil {
			return nil, err
		}
	}
	sig, err := newSigner(cfg.Receipts)
	if err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	local := state.NewEmbedded(state.EmbeddedOptions{MaxEntries: cfg.Contexts.MaxLocal, Now: opts.Now})
	tasks := newTaskStore(opts.KV, cfg.Tasks)
	tasks.onStatus = opts.OnTaskStatus
	store := &contextStore{durable: opts.KV, local: local, cfg: cfg.Contexts, now: opts.Now, log: opts.Logger}
	s := &Service{
		cfg:      cfg,
		tasks:    tasks,
		contexts: store,
		store:    store,
		local:    local,
		signer:   sig,
		catalog:  opts.Catalog,
		invoker:  opts.Invoker,
		log:      opts.Logger,
		now:      opts.Now,
		closing:  make(chan struct{}),
		recent:   &recentTasks{max: cmp.Or(max(opts.RecentTasks, 0), DefaultRecentTasks)},
	}
	if sig.generated {
		s.log.Info("nekte: receipts are signed with a key generated for this process; set nekte.receipts.key_file to verify them across replicas and restarts", "kid", sig.kid)
	}
	return s, nil
}

// Name implements gateway.Target.
func (s *Service) Name() string { return "nekte" }

// Routes returns the methods to route to the Service: NEKTE's, and nekte.task.stream and
// nekte.task.suspend.
func (s *Service) Routes() (methods, prefixes []string) {
	return []string{
		nk.MethodDiscover, nk.MethodInvoke, nk.MethodDelegate, nk.MethodContext, nk.MethodVerify,
		nk.MethodTaskCancel, nk.MethodTaskResume, nk.MethodTaskStatus, nk.MethodIntrospect,
		MethodTaskStream, MethodTaskSuspend,
	}, nil
}

// ReceiptKey returns the public key that signs receipts as a JSON Web Key (with kid, alg
// and use), for the gateway's JWKS document.
func (s *Service) ReceiptKey() json.RawMessage {
	jwk := s.signer.jwk()
	jwk["kid"] = s.signer.kid
	jwk["alg"] = s.signer.method.Alg()
	jwk["use"] = "sig"
	return mustMarshal(jwk)
}

// Invoke implements gateway.Target: it decodes the params of call.Method strictly
// (codecs/nekte.Decode) and runs the method for call.Principal.
func (s *Service) Invoke(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
	owner := call.Principal.Owner()
	switch call.Method {
	case nk.MethodDiscover:
		return s.discover(call)
	case nk.MethodInvoke:
		return decoded(call, func(p *nk.InvokeParams) (*gateway.Result, error) { return s.invoke(ctx, p) })
	case nk.MethodDelegate:
		return decoded(call, func(p *delegateParams) (*gateway.Result, error) { return s.delegate(ctx, owner, p) })
	case nk.MethodTaskCancel:
		return decoded(call, func(p *nk.TaskCancelParams) (*gateway.Result, error) {
			return value(s.cancel(ctx, owner, p.TaskID, p.Reason))
		})
	case nk.MethodTaskResume:
		return decoded(call, func(p *nk.TaskResumeParams) (*gateway.Result, error) { return value(s.resume(ctx, owner, p)) })
	case nk.MethodTaskStatus:
		return decoded(call, func(p *nk.TaskStatusParams) (*gateway.Result, error) { return value(s.status(ctx, owner, p.TaskID)) })
	case MethodTaskSuspend:
		return decoded(call, func(p *taskRefParams) (*gateway.Result, error) {
			return value(s.suspend(ctx, owner, p.TaskID, "suspended by the caller"))
		})
	case MethodTaskStream:
		return decoded(call, func(p *taskRefParams) (*gateway.Result, error) { return s.stream(ctx, owner, p.TaskID) })
	case nk.MethodContext:
		return decoded(call, func(p *contextParams) (*gateway.Result, error) { return value(s.contexts.handle(ctx, owner, p)) })
	case nk.MethodVerify:
		return decoded(call, func(p *verifyParams) (*gateway.Result, error) { return value(s.verify(ctx, owner, p)) })
	case nk.MethodIntrospect:
		return decoded(call, func(p *nk.IntrospectParams) (*gateway.Result, error) {
			return value(nk.IntrospectResult{Guide: guide(p.Topic)}, nil)
		})
	default:
		return nil, gateway.Errorf(schemas.CodeMethodNotFound, "Method not found: %s", call.Method)
	}
}

// decoded decodes call's params into a fresh P and runs fn with them.
func decoded[P any, PP interface {
	*P
	nk.Params
}](call *gateway.Call, fn func(PP) (*gateway.Result, error)) (*gateway.Result, error) {
	p := PP(new(P))
	if err := nk.Decode(call.Params, p); err != nil {
		return nil, paramError(err)
	}
	return fn(p)
}

// value returns v as a JSON result.
func value[T any](v T, err error) (*gateway.Result, error) {
	if err != nil {
		return nil, err
	}
	b, err := marshal(v)
	if err != nil {
		return nil, gateway.NewError(schemas.CodeInternal).Wrap(err)
	}
	return gateway.NewResult(b), nil
}

// discover decodes nekte.discover's params with the catalog's additive options
// (capability.DecodeDiscover) and answers with the catalog.
func (s *Service) discover(call *gateway.Call) (*gateway.Result, error) {
	p, o, err := capability.DecodeDiscover(call.Params)
	if err != nil {
		return nil, paramError(err)
	}
	raw, err := s.catalog.DiscoverWith(p, o)
	if err != nil {
		return nil, gateway.AsError(err)
	}
	return gateway.NewResult(raw), nil
}

func (s *Service) invoke(ctx context.Context, p *nk.InvokeParams) (*gateway.Result, error) {
	res, err := s.catalog.Invoke(ctx, s.invoker, *p)
	if err != nil {
		return nil, gateway.AsError(err)
	}
	return value(res, nil)
}

// commit changes the owner's task id in the store (taskStore.apply) and hands the events
// the change emitted to the task's streams in this process. Writes of one task in one
// process are serialised, so streams see its events in order.
func (s *Service) commit(ctx context.Context, owner, id string, change func(r *record) error) (*record, error) {
	h := s.hubs.acquire(taskKey(owner, id))
	defer s.hubs.release(h)
	h.mu.Lock()
	defer h.mu.Unlock()
	r, err := s.tasks.apply(ctx, owner, id, change)
	if err != nil {
		return nil, err
	}
	h.publish(r.fresh)
	return r, nil
}

func (s *Service) nowMs() int64 { return nowMs(s.now()) }

func (s *Service) isClosing() bool {
	select {
	case <-s.closing:
		return true
	default:
		return false
	}
}

// Close suspends the tasks running in this process (as SuspendAll, within
// tasks.drain_timeout), stops what is left, ends the streams of this process after the
// events they hold, stops the local envelope store and closes the peer client (UsePeers).
// It does not close the KV.
func (s *Service) Close() error {
	var err error
	s.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Tasks.DrainTimeout)
		defer cancel()
		err = s.SuspendAll(ctx)
		s.runs.shut(errCauseClosing)
		close(s.closing)
		for _, h := range s.hubs.all() {
			h.mu.Lock()
			h.refreshAll()
			h.mu.Unlock()
		}
		err = errors.Join(err, s.local.Close(), s.closePeers())
	})
	return err
}

// isNotFound reports whether err is TASK_NOT_FOUND.
func isNotFound(err error) bool {
	var ge *gateway.Error
	return errors.As(err, &ge) && ge.Code() == schemas.CodeTaskNotFound
}

// logf logs a failure no caller can be told about.
func (s *Service) logf(msg string, owner, id string, err error) {
	s.log.Warn(fmt.Sprintf("nekte: %s", msg), "task_id", id, "owner", owner, "error", err)
}
