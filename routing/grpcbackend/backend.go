package grpcbackend

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync/atomic"
	"time"
	"unicode"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

// Backend is one gRPC backend: a connection, its descriptors and the methods routed to it.
// It is a gateway.Target; the routing table sends it the explicit method names and every
// name under its services' prefixes.
type Backend struct {
	cfg  Config
	hop  gateway.HopAuth
	conn *grpc.ClientConn
	log  *slog.Logger
	now  func() time.Time

	state atomic.Pointer[resolved] // nil until descriptors load
	err   atomic.Pointer[error]    // the last load error, nil once loaded

	stop   context.CancelFunc
	loaded chan struct{} // closed when the first load succeeds
	done   chan struct{} // closed when the background loader has exited
	share  share         // the connection's holders (Renew, shared.go)
}

var (
	_ gateway.Target  = (*Backend)(nil)
	_ gateway.Readier = (*Backend)(nil)
	_ gateway.Closer  = (*Backend)(nil)
)

// New connects to a backend (lazily: dialling happens on first use) and starts loading its
// descriptors in the background, retrying with backoff until they load or Close is called.
func New(cfg Config, log *slog.Logger, now func() time.Time) (*Backend, error) {
	cfg = cfg.withDefaults()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if now == nil {
		now = time.Now
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	opts, err := dialOptions(cfg)
	if err != nil {
		return nil, fmt.Errorf("backend %q: %w", cfg.Name, err)
	}
	conn, err := grpc.NewClient(cfg.Address, opts...)
	if err != nil {
		return nil, fmt.Errorf("backend %q: %w", cfg.Name, err)
	}
	return start(cfg, conn, newConnRefs(), log, now), nil
}

// start returns the backend of cfg over conn, held with refs, and starts loading its
// descriptors.
func start(cfg Config, conn *grpc.ClientConn, refs *atomic.Int64, log *slog.Logger, now func() time.Time) *Backend {
	ctx, cancel := context.WithCancel(context.Background())
	b := &Backend{cfg: cfg, hop: cfg.DownstreamToken.HopAuth(cfg.Name), conn: conn, log: log.With("backend", cfg.Name), now: now,
		stop: cancel, loaded: make(chan struct{}), done: make(chan struct{}), share: share{refs: refs}}
	notYet := errors.New("descriptors not loaded yet")
	b.err.Store(&notYet)
	go b.loadLoop(ctx)
	return b
}

func dialOptions(cfg Config) ([]grpc.DialOption, error) {
	creds := insecure.NewCredentials()
	if cfg.TLS != nil {
		tc, err := cfg.TLS.Load()
		if err != nil {
			return nil, err
		}
		creds = credentials.NewTLS(tc)
	}
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(cfg.MaxRecvBytes), grpc.MaxCallSendMsgSize(cfg.MaxSendBytes)),
	}
	if k := cfg.Keepalive; k != nil {
		opts = append(opts, grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: k.Time, Timeout: k.Timeout, PermitWithoutStream: true}))
	}
	return opts, nil
}

// Name implements gateway.Target.
func (b *Backend) Name() string { return b.cfg.Name }

// Routes returns the explicit method names and the service prefixes to route to b.
func (b *Backend) Routes() (methods, prefixes []string) {
	for m := range b.cfg.Methods {
		methods = append(methods, m)
	}
	for _, s := range b.cfg.Services {
		prefixes = append(prefixes, s.Prefix)
	}
	sort.Strings(methods)
	return methods, prefixes
}

// Ready implements gateway.Readier: descriptors loaded and the connection not failing.
func (b *Backend) Ready(context.Context) error {
	if err := b.err.Load(); err != nil {
		return *err
	}
	switch s := b.conn.GetState(); s {
	case connectivity.TransientFailure, connectivity.Shutdown:
		b.conn.Connect()
		return fmt.Errorf("connection %s", strings.ToLower(s.String()))
	case connectivity.Idle:
		b.conn.Connect()
	}
	return nil
}

// Close stops the loader and closes the connection, unless a renewed backend still
// shares it (Renew); it is idempotent.
func (b *Backend) Close() error {
	if b.share.closed.Swap(true) {
		return nil
	}
	b.stop()
	<-b.done
	if !b.share.last() {
		return nil
	}
	return b.conn.Close()
}

// Loaded is closed once the backend's descriptors have loaded.
func (b *Backend) Loaded() <-chan struct{} { return b.loaded }

// loadLoop loads the descriptors, retrying with capped exponential backoff on failure.
func (b *Backend) loadLoop(ctx context.Context) {
	defer close(b.done)
	delay := 100 * time.Millisecond
	for {
		err := b.load(ctx)
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			return
		}
		b.log.Warn("loading descriptors; retrying", "err", err, "in", delay.String())
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(delay*2, 10*time.Second)
	}
}

func (b *Backend) load(ctx context.Context) error {
	files, err := loadDescriptors(ctx, b.cfg.Descriptors, b.conn)
	if err == nil {
		var r *resolved
		if r, err = resolve(b.cfg, files); err == nil {
			b.state.Store(r)
			b.err.Store(nil)
			close(b.loaded)
			b.log.Info("descriptors loaded", "methods", len(r.methods), "services", len(r.services))
			return nil
		}
	}
	b.err.Store(&err)
	return err
}

// resolved is what a backend's descriptors make of its configuration.
type resolved struct {
	files    *protoregistry.Files
	methods  map[string]*method // explicit names
	services []*service         // prefixed services, longest prefix first
}

// service is an exposed service: names under prefix resolve by its naming rule.
type service struct {
	cfg    ServiceConfig
	byName map[string]*method
}

// method is one RPC as a JSON-RPC method.
type method struct {
	path       string // "/pkg.Service/Method"
	desc       protoreflect.MethodDescriptor
	codec      *codec
	unwrap     string
	deprecated *deprecation
}

// deprecation is a DeprecationConfig with its sunset parsed.
type deprecation struct {
	cfg    DeprecationConfig
	sunset time.Time
}

func resolve(cfg Config, files *protoregistry.Files) (*resolved, error) {
	r := &resolved{files: files, methods: make(map[string]*method)}
	cache := newCodecCache(cfg, files)
	for name, rpc := range cfg.Methods {
		md, err := findMethod(files, rpc)
		if err != nil {
			return nil, fmt.Errorf("method %q: %w", name, err)
		}
		m, err := newMethod(md, cache, cfg.Unwrap[name], nil)
		if err != nil {
			return nil, fmt.Errorf("method %q: %w", name, err)
		}
		r.methods[name] = m
	}
	for _, sc := range cfg.Services {
		svc, err := findService(files, sc.Service)
		if err != nil {
			return nil, err
		}
		s := &service{cfg: sc, byName: make(map[string]*method)}
		mds := svc.Methods()
		for i := range mds.Len() {
			md := mds.Get(i)
			name := sc.Prefix + methodName(string(md.Name()), sc.Naming)
			m, err := newMethod(md, cache, cfg.Unwrap[name], sc.Deprecated)
			if err != nil {
				return nil, fmt.Errorf("service %s: %w", sc.Service, err)
			}
			s.byName[name] = m
		}
		r.services = append(r.services, s)
	}
	sort.SliceStable(r.services, func(i, j int) bool { return len(r.services[i].cfg.Prefix) > len(r.services[j].cfg.Prefix) })
	return r, nil
}

func newMethod(md protoreflect.MethodDescriptor, cache *codecCache, unwrap string, depCfg *DeprecationConfig) (*method, error) {
	c, err := cache.codec(md, unwrap)
	if err != nil {
		return nil, err
	}
	var dep *deprecation
	if depCfg != nil {
		sunset, err := time.Parse(time.DateOnly, depCfg.Sunset)
		if err != nil {
			return nil, fmt.Errorf("sunset %q: %w", depCfg.Sunset, err)
		}
		dep = &deprecation{cfg: *depCfg, sunset: sunset}
	}
	return &method{
		path:       "/" + string(md.Parent().FullName()) + "/" + string(md.Name()),
		desc:       md,
		codec:      c,
		unwrap:     unwrap,
		deprecated: dep,
	}, nil
}

// lookup finds the method a JSON-RPC name resolves to.
func (r *resolved) lookup(name string) *method {
	if m, ok := r.methods[name]; ok {
		return m
	}
	for _, s := range r.services {
		if strings.HasPrefix(name, s.cfg.Prefix) {
			if m, ok := s.byName[name]; ok {
				return m
			}
		}
	}
	return nil
}

// methodName turns an RPC name into a JSON-RPC method name.
func methodName(rpc, naming string) string {
	if naming == namingSnake {
		var b strings.Builder
		for i, r := range rpc {
			if unicode.IsUpper(r) {
				if i > 0 {
					b.WriteByte('_')
				}
				r = unicode.ToLower(r)
			}
			b.WriteRune(r)
		}
		return b.String()
	}
	if rpc == "" {
		return rpc
	}
	return strings.ToLower(rpc[:1]) + rpc[1:]
}
