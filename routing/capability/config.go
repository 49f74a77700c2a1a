package capability

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/gatehouse-dev/gatehouse/codecs/nekte"
)

// Config is the capability registry's section of the configuration (nekte.catalog; see
// docs/nekte.md). Zero fields take the defaults below (WithDefaults).
type Config struct {
	// Agent is the agent name on the wire: discover's agent and the agent card's
	// (default "gatehouse").
	Agent string `yaml:"agent" json:"agent,omitempty"`
	// HashLength is the length of version hashes in hex digits: 8 (the default, as the
	// published NEKTE vectors) or 16.
	HashLength int `yaml:"hash_length" json:"hash_length,omitempty"`
	// Categories maps a source to the category of its capabilities. Keys are a kind
	// ("mcp", "grpc", "builtin") or a kind and a source name ("mcp:<upstream>",
	// "grpc:<backend>", "builtin:demo"); the more specific key wins. A capability whose
	// source has no key is in the category named after its source (the MCP upstream, the
	// gRPC backend, "demo"), or after its kind when it has no source.
	Categories map[string]string `yaml:"categories" json:"categories,omitempty"`
	// Discover configures nekte.discover.
	Discover DiscoverConfig `yaml:"discover" json:"discover"`
	// Search configures the query filter of nekte.discover and capability matching.
	Search SearchConfig `yaml:"search" json:"search"`
	// Invoke configures nekte.invoke.
	Invoke InvokeConfig `yaml:"invoke" json:"invoke"`
}

// DiscoverConfig configures nekte.discover's pagination.
type DiscoverConfig struct {
	// PageSize is how many capabilities a page holds when the caller sets no limit; 0 (the
	// default) puts every match in one page, which is what clients unaware of cursors
	// (the NEKTE reference client among them) need to see the whole catalog.
	PageSize int `yaml:"page_size" json:"page_size,omitempty"`
	// MaxPageSize caps the caller's limit and PageSize (default 500).
	MaxPageSize int `yaml:"max_page_size" json:"max_page_size,omitempty"`
}

// SearchConfig configures ranked search over capability ids and descriptions.
type SearchConfig struct {
	// TopK is how many matches a query returns when the caller sets no top_k (default 10).
	TopK int `yaml:"top_k" json:"top_k,omitempty"`
	// Threshold is the least score (0..1, see the package doc) a match needs when the
	// caller sets no threshold, and the least score Match accepts (default 0.2).
	Threshold *float64 `yaml:"threshold" json:"threshold,omitempty"`
}

// InvokeConfig configures nekte.invoke.
type InvokeConfig struct {
	// MaxCollectedBytes bounds the JSON array a streamed result is collected into
	// (default 4 MiB); a longer stream fails with PAYLOAD_TOO_LARGE.
	MaxCollectedBytes int64 `yaml:"max_collected_bytes" json:"max_collected_bytes,omitempty"`
}

// Defaults.
const (
	DefaultAgent             = "gatehouse"
	DefaultMaxPageSize       = 500
	DefaultTopK              = 10
	DefaultThreshold         = 0.2
	DefaultMaxCollectedBytes = 4 << 20
)

// Source kinds as they appear in category keys.
const (
	sourceMCP     = "mcp"
	sourceGRPC    = "grpc"
	sourceBuiltin = "builtin"
)

// WithDefaults returns c with every unset field at its default.
func (c Config) WithDefaults() Config {
	if c.Agent == "" {
		c.Agent = DefaultAgent
	}
	if c.HashLength == 0 {
		c.HashLength = nekte.HashLen
	}
	if c.Discover.MaxPageSize == 0 {
		c.Discover.MaxPageSize = DefaultMaxPageSize
	}
	if c.Search.TopK == 0 {
		c.Search.TopK = DefaultTopK
	}
	if c.Search.Threshold == nil {
		t := DefaultThreshold
		c.Search.Threshold = &t
	}
	if c.Invoke.MaxCollectedBytes == 0 {
		c.Invoke.MaxCollectedBytes = DefaultMaxCollectedBytes
	}
	return c
}

// threshold returns the configured default threshold.
func (c *Config) threshold() float64 {
	if c.Search.Threshold == nil {
		return DefaultThreshold
	}
	return *c.Search.Threshold
}

// Validate checks c (with or without defaults applied) and reports every problem.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if n := len(c.Agent); n > nekte.MaxIDLen {
		bad("agent: must be at most %d characters", nekte.MaxIDLen)
	}
	if c.HashLength != 0 && c.HashLength != nekte.HashLen && c.HashLength != nekte.HashLenLong {
		bad("hash_length: must be %d or %d", nekte.HashLen, nekte.HashLenLong)
	}
	for key, cat := range c.Categories {
		if err := checkCategoryKey(key); err != nil {
			bad("categories: %w", err)
		}
		if cat == "" || len(cat) > nekte.MaxCategoryLen {
			bad("categories: %q: the category must have 1 to %d characters", key, nekte.MaxCategoryLen)
		}
	}
	d := c.Discover
	if d.PageSize < 0 || d.MaxPageSize < 0 {
		bad("discover: page_size and max_page_size must not be negative")
	}
	if maxPage := cmp.Or(d.MaxPageSize, DefaultMaxPageSize); d.PageSize > maxPage {
		bad("discover: page_size %d exceeds max_page_size %d", d.PageSize, maxPage)
	}
	if c.Search.TopK < 0 {
		bad("search: top_k must not be negative")
	}
	if th := c.Search.Threshold; th != nil && (*th < 0 || *th > 1 || math.IsNaN(*th)) {
		bad("search: threshold must be between 0 and 1")
	}
	if c.Invoke.MaxCollectedBytes < 0 {
		bad("invoke: max_collected_bytes must not be negative")
	}
	return errors.Join(errs...)
}

// checkCategoryKey accepts "kind" and "kind:name" for the known kinds.
func checkCategoryKey(key string) error {
	kind, name, qualified := strings.Cut(key, ":")
	switch {
	case kind != sourceMCP && kind != sourceGRPC && kind != sourceBuiltin:
		return fmt.Errorf("%q: keys are mcp, grpc, builtin, or one of them with \":<source name>\"", key)
	case qualified && name == "":
		return fmt.Errorf("%q: the source name after ':' is missing", key)
	default:
		return nil
	}
}

// category returns the category of a capability from a source (see Config.Categories).
func (c *Config) category(kind Kind, source string) string {
	prefix := kindPrefix(kind)
	if source != "" {
		if cat, ok := c.Categories[prefix+":"+source]; ok {
			return cat
		}
	}
	if cat, ok := c.Categories[prefix]; ok {
		return cat
	}
	if source != "" {
		return source
	}
	return prefix
}

// kindPrefix is how a kind appears in category keys.
func kindPrefix(k Kind) string {
	switch k {
	case KindMCPTool:
		return sourceMCP
	case KindGRPCMethod:
		return sourceGRPC
	default:
		return sourceBuiltin
	}
}
