package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/gatehouse-dev/gatehouse/faces"
)

// Path is where the face serves: GET Path is the WebSocket, POST Path/… the HTTP+SSE
// endpoints.
const (
	Path       = "/session"
	PathChat   = Path + "/chat"
	PathAbort  = Path + "/abort"
	PathStatus = Path + "/status"
	PathTask   = Path + "/task"
)

// Gateway is what the face sees of the gateway.
type Gateway interface {
	// Acquire returns the configuration in force, held until its Release.
	Acquire() Runtime
	// Draining reports whether the gateway is shutting down: new connections are refused.
	Draining() bool
}

// Runtime is one configuration as this face sees it.
type Runtime interface {
	faces.Runtime
	// Session returns the session section, nil when the face is off.
	Session() *Config
}

// Face is the session RPC face. It outlives configurations: each connection reads its
// section when it is opened, and each request runs on the configuration in force when it
// starts.
type Face struct {
	gw  Gateway
	log *slog.Logger

	mu       sync.Mutex
	conns    map[*wsConn]struct{}
	sessions map[string]map[string]*session // principal → session id → session (HTTP+SSE)
	closed   bool

	pools sync.Map // write buffer size → *sync.Pool

	taskPrefix string
	taskSeq    atomic.Uint64

	// started and ended count requests accepted and requests ended (each exactly once).
	started, ended atomic.Int64
}

// New returns the face serving gw's configurations; log receives what fails outside a call.
func New(gw Gateway, log *slog.Logger) *Face {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return &Face{gw: gw, log: log, conns: make(map[*wsConn]struct{}),
		sessions: make(map[string]map[string]*session), taskPrefix: "task_" + hex.EncodeToString(b[:]) + "_"}
}

// newTaskID returns a task id unique in this process.
func (f *Face) newTaskID() string {
	return f.taskPrefix + strconv.FormatUint(f.taskSeq.Add(1), 36)
}

// Open returns how many WebSocket connections and HTTP+SSE sessions are open.
func (f *Face) Open() (conns, sessions int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range f.sessions {
		sessions += len(m)
	}
	return len(f.conns), sessions
}

// Pending returns how many requests have been accepted and not yet ended.
func (f *Face) Pending() int64 { return f.started.Load() - f.ended.Load() }

func (f *Face) writeBuffers(size int) *sync.Pool {
	if p, ok := f.pools.Load(size); ok {
		return p.(*sync.Pool)
	}
	p, _ := f.pools.LoadOrStore(size, new(sync.Pool))
	return p.(*sync.Pool)
}

// errShutdown ends the requests still queued when the gateway drains.
var errShutdown = errors.New("the gateway is shutting down")

// Drain stops every WebSocket connection reading and ends every queued request with
// chat.error "shutting_down"; running requests finish and are answered, then the
// connections close with 1001. Connections still busy when ctx ends are aborted.
func (f *Face) Drain(ctx context.Context) error {
	f.mu.Lock()
	f.closed = true
	conns := make([]*wsConn, 0, len(f.conns))
	for c := range f.conns {
		conns = append(conns, c)
	}
	var sessions []*session
	for _, m := range f.sessions {
		for _, s := range m {
			sessions = append(sessions, s)
		}
	}
	f.mu.Unlock()
	for _, s := range sessions {
		s.dropQueued(errShutdown)
	}
	return faces.DrainConns(ctx, conns, "session connections")
}
