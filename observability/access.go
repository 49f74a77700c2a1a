package observability

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"time"
)

// DefaultAccessSampleRatio is the share of successful calls the access log records when
// log.access.sample_ratio is unset. Failed calls are always recorded.
const DefaultAccessSampleRatio = 0.01

// AccessConfig is the log.access section: one line per call.
type AccessConfig struct {
	// Enabled turns the access log on (default true).
	Enabled *bool `yaml:"enabled" json:"enabled,omitempty"`
	// SampleRatio is the share of successful calls logged, 0…1 (default 0.01); failed
	// calls are always logged.
	SampleRatio *float64 `yaml:"sample_ratio" json:"sample_ratio,omitempty"`
}

// Validate reports a sample ratio outside 0…1.
func (c AccessConfig) Validate() error {
	if r := c.SampleRatio; r != nil && (math.IsNaN(*r) || *r < 0 || *r > 1) {
		return fmt.Errorf("log.access.sample_ratio %v: want a number from 0 to 1", *r)
	}
	return nil
}

// ratio returns the sample ratio in force.
func (c AccessConfig) ratio() float64 {
	if c.SampleRatio == nil {
		return DefaultAccessSampleRatio
	}
	return *c.SampleRatio
}

// AccessEntry is what the access log records of one call.
type AccessEntry struct {
	// Method is the JSON-RPC method called.
	Method string
	// Protocol is the ingress protocol (http, websocket, grpc, mcp, stdio).
	Protocol string
	// Code is the JSON-RPC error code of a failed call; 0 for a success.
	Code int
	// Duration is how long the call took in the gateway.
	Duration time.Duration
	// Caller is the caller's subject; the log carries only its hash (CallerHash).
	Caller string
	// TraceID is the call's trace id.
	TraceID string
	// ServedBy names who served the call when its target says (the agent's id for the
	// agent link); the line carries it as "agent", absent when empty.
	ServedBy string
	// Params and Result are the call's payloads, logged (redacted) only with
	// log.debug_payloads; either may be nil.
	Params, Result []byte
}

// AccessLog writes the per-call access log and, with log.debug_payloads, the calls'
// redacted payloads. A nil *AccessLog logs nothing.
type AccessLog struct {
	log      *slog.Logger
	enabled  bool
	payloads bool
	// threshold: a successful call is logged when its sampling key is below it.
	threshold uint64
	always    bool
}

// NewAccessLog returns the access log cfg describes, writing to log; nil when cfg turns
// both the access log and payload logging off.
func NewAccessLog(cfg LogConfig, log *slog.Logger) *AccessLog {
	enabled := cfg.Access.Enabled == nil || *cfg.Access.Enabled
	if !enabled && !cfg.DebugPayloads {
		return nil
	}
	r := cfg.Access.ratio()
	a := &AccessLog{log: log, enabled: enabled, payloads: cfg.DebugPayloads, always: r >= 1}
	if !a.always && r > 0 {
		a.threshold = uint64(r * float64(math.MaxUint64))
	}
	return a
}

// Sampled reports whether the access log records a call with this trace id: always when
// it failed; otherwise as the sample ratio says, decided by the trace id, so every replica
// and every hop keeps or drops the same traces (a random draw when the id is not hex).
func (a *AccessLog) Sampled(traceID string, failed bool) bool {
	if a == nil || !a.enabled {
		return false
	}
	if failed || a.always {
		return true
	}
	if a.threshold == 0 {
		return false
	}
	return samplingKey(traceID) < a.threshold
}

// Record logs e: its access line when sampled, its payloads at debug level when
// log.debug_payloads is on. ctx gives the line its span and task ids.
func (a *AccessLog) Record(ctx context.Context, e *AccessEntry) {
	if a == nil {
		return
	}
	failed := e.Code != 0
	if a.Sampled(e.TraceID, failed) {
		status := "success"
		if failed {
			status = "error"
		}
		attrs := []slog.Attr{
			slog.String("method", e.Method),
			slog.String("protocol", e.Protocol),
			slog.String("status", status),
			slog.Int("code", e.Code),
			slog.Float64("duration_ms", float64(e.Duration.Microseconds())/1000),
			slog.String("caller", CallerHash(e.Caller)),
			slog.String(KeyTraceID, e.TraceID),
		}
		if e.ServedBy != "" {
			attrs = append(attrs, slog.String("agent", e.ServedBy))
		}
		a.log.LogAttrs(ctx, slog.LevelInfo, "access", attrs...)
	}
	if a.payloads && a.log.Enabled(ctx, slog.LevelDebug) {
		a.log.LogAttrs(ctx, slog.LevelDebug, "call payload",
			slog.String("method", e.Method),
			slog.String(KeyTraceID, e.TraceID),
			slog.String("params", RedactJSON(e.Params, MaxPayloadLogBytes)),
			slog.String("result", RedactJSON(e.Result, MaxPayloadLogBytes)),
		)
	}
}

// CallerHash returns the id logs give a caller: the first 16 hex digits of the SHA-256 of
// its subject, so one caller's lines can be followed without the log naming them; "" for
// no subject.
func CallerHash(subject string) string {
	if subject == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(subject))
	return hex.EncodeToString(sum[:8])
}

// samplingKey returns the low 64 bits of a hex trace id, or a random number when the id
// is not 32 hex digits.
func samplingKey(traceID string) uint64 {
	var b [16]byte
	if len(traceID) == 32 {
		if _, err := hex.Decode(b[:], []byte(traceID)); err == nil {
			return binary.BigEndian.Uint64(b[8:])
		}
	}
	return rand.Uint64() //nolint:gosec // sampling, not secrecy
}
