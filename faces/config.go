package faces

import "github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"

// JSONRPCConfig is the jsonrpc section: it bounds what the JSON-RPC decoder accepts, on
// every face.
type JSONRPCConfig struct {
	MaxBodyBytes   int64 `yaml:"max_body_bytes" json:"max_body_bytes,omitempty"`
	MaxDepth       int   `yaml:"max_depth" json:"max_depth,omitempty"`
	MaxStringBytes int   `yaml:"max_string_bytes" json:"max_string_bytes,omitempty"`
	// MaxCollectedBytes bounds a streamed result gathered into one array (batch members,
	// HTTP callers that do not accept text/event-stream).
	MaxCollectedBytes int64 `yaml:"max_collected_bytes" json:"max_collected_bytes,omitempty"`
}

// BatchConfig is the batch section: it governs JSON-RPC batches.
type BatchConfig struct {
	// MaxSize is the most members a batch may have, for callers of a tier not in Tiers.
	MaxSize int `yaml:"max_size" json:"max_size,omitempty"`
	// Tiers overrides MaxSize per client tier.
	Tiers map[string]int `yaml:"tiers" json:"tiers,omitempty"`
	// Concurrency bounds how many members of one batch run at once.
	Concurrency int `yaml:"concurrency" json:"concurrency,omitempty"`
}

// Defaults of the jsonrpc and batch sections.
const (
	DefaultMaxBodyBytes      = 1 << 20
	DefaultMaxDepth          = jsonrpc.DefaultMaxDepth
	DefaultMaxStringBytes    = 256 << 10
	DefaultMaxCollectedBytes = 4 << 20
	DefaultBatchMaxSize      = 50
	DefaultBatchConcurrency  = 16
)

// WithDefaults returns c with every zero field set to its default.
func (c JSONRPCConfig) WithDefaults() JSONRPCConfig {
	setDefault(&c.MaxBodyBytes, DefaultMaxBodyBytes)
	setDefault(&c.MaxDepth, DefaultMaxDepth)
	setDefault(&c.MaxStringBytes, DefaultMaxStringBytes)
	setDefault(&c.MaxCollectedBytes, DefaultMaxCollectedBytes)
	return c
}

// WithDefaults returns c with every zero field set to its default.
func (c BatchConfig) WithDefaults() BatchConfig {
	setDefault(&c.MaxSize, DefaultBatchMaxSize)
	setDefault(&c.Concurrency, DefaultBatchConcurrency)
	return c
}

// Limits returns the JSON-RPC decoder's limits of c, with batch's size limit for callers
// whose tier batch.Tiers does not name (Pipeline.Limits).
func (c JSONRPCConfig) Limits(batch BatchConfig) jsonrpc.Limits {
	return jsonrpc.Limits{MaxDepth: c.MaxDepth, MaxStringBytes: c.MaxStringBytes, MaxBatch: batch.MaxSize}
}

func setDefault[T comparable](p *T, def T) {
	var zero T
	if *p == zero {
		*p = def
	}
}
