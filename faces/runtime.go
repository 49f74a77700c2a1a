package faces

import (
	"log/slog"
	"time"

	"github.com/gatehouse-dev/gatehouse/auth"
	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/resilience"
)

// Runtime is one configuration as a face sees it. A face takes one for each body (or
// connection step) it serves and releases it when done: a reload swaps configurations
// atomically, and calls in flight finish on the one they started with.
type Runtime interface {
	// Pipeline returns the configuration's entry into the pipeline.
	Pipeline() *Pipeline
	// Authenticator returns the configuration's authenticator.
	Authenticator() gateway.Authenticator
	// Release drops the hold on the configuration; the Runtime must not be used after.
	Release()
}

// Pipeline is one configuration's handler chain and what a face needs to turn bodies into
// calls and outcomes into bytes. The server builds it once per configuration; it is
// immutable and safe for concurrent use.
type Pipeline struct {
	// Handler runs one call through the configuration's stages (server/chain.go).
	Handler gateway.Handler
	// Limits are the JSON-RPC decoder's limits; MaxBatch is that of callers whose tier
	// Tiers does not name.
	Limits jsonrpc.Limits
	// Tiers overrides the batch size limit per client tier.
	Tiers map[string]int
	// BatchConcurrency bounds how many members of one batch run at once.
	BatchConcurrency int
	// MaxBodyBytes bounds one body (jsonrpc.max_body_bytes).
	MaxBodyBytes int64
	// MaxCollectedBytes bounds a streamed result gathered into one array.
	MaxCollectedBytes int64
	// Deadline resolves each call's absolute deadline.
	Deadline resilience.DeadlineConfig
	// Now is the clock.
	Now func() time.Time
	// Log receives the calls' errors.
	Log *slog.Logger
	// Access is the per-call access log; nil when off.
	Access *observability.AccessLog
	// Tracer starts the calls' spans; nil when tracing is off.
	Tracer *observability.CallTracer
	// Liveness re-checks the principal of a connection that outlives the request that
	// authenticated it (WebSocket, event streams, MCP streams) before each of its calls, and
	// ends the connection when the credential expires or is revoked. It is the process's,
	// the same in every configuration; nil checks expiry only.
	Liveness *auth.Liveness
}

// LimitsFor returns the decoder limits for a caller: the batch size depends on its tier.
func (p *Pipeline) LimitsFor(pr gateway.Principal) jsonrpc.Limits {
	lim := p.Limits
	if n, ok := p.Tiers[pr.Tier]; ok {
		lim.MaxBatch = n
	}
	return lim
}

// Resolve returns the absolute deadline of a body whose caller named callerMs (epoch
// milliseconds; 0 for none).
func (p *Pipeline) Resolve(callerMs int64) time.Time {
	return p.Deadline.Resolve(p.Now(), callerMs)
}
