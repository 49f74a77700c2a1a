package openrpc

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/gatehouse-dev/gatehouse/routing/capability"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// Version is the version of the OpenRPC specification the documents follow.
const Version = "1.3.2"

// MethodDiscover is the specification's service discovery method, which answers the
// document. It is not listed in the document itself.
const MethodDiscover = "rpc.discover"

// DefaultCacheSize is how many documents a Generator keeps when Params.CacheSize is 0.
const DefaultCacheSize = 32

// Method is a method the catalog does not describe (the nekte.* methods, any other routed
// method), as the server hands it to the Generator.
type Method struct {
	// Name is the JSON-RPC method.
	Name string
	// Description is the human text; its first sentence is the summary.
	Description string
	// Category names the method's tag ("" for none).
	Category string
	// Params and Result are the JSON Schemas of the params and the result; empty is {}.
	Params, Result json.RawMessage
	// Errors are the codes the method answers beside the common ones.
	Errors []schemas.Code
}

// Server is one place the methods are served: the spec's Server Object. Its URL is
// absolute: the specification allows relative ones, but the official meta-schema
// (format "uri") refuses them.
type Server struct {
	Name    string `json:"name,omitempty"`
	URL     string `json:"url"`
	Summary string `json:"summary,omitempty"`
}

// Params are what a Generator is built from.
type Params struct {
	// Catalog is the configuration's capability catalog; nil lists the built-in methods only.
	Catalog *capability.Registry
	// Builtins are the methods the catalog does not hold. A built-in with the name of a
	// capability's method is left out: the catalog's description wins.
	Builtins []Method
	// Title is info.title (default "Gatehouse").
	Title string
	// Version is info.version: the gateway's build version.
	Version string
	// Servers are the document's servers.
	Servers []Server
	// Common are the codes every method can answer (the gateway's stages'); nil takes
	// DefaultCommon.
	Common []schemas.Code
	// CacheSize bounds the documents kept (0: DefaultCacheSize; Config.cache_size).
	CacheSize int
}

// DefaultCommon are the codes any call can answer whatever the configuration: its params
// refused, its deadline passed, its caller gone, its target down, the gateway stopping.
var DefaultCommon = []schemas.Code{
	schemas.CodeInvalidParams, schemas.CodeInternal, schemas.CodeDeadlineExceeded, schemas.CodeCancelled,
	schemas.CodeUnavailable, schemas.CodeShuttingDown,
}

// View is what one caller may see. A nil field shows everything of its kind.
type View struct {
	// Capability reports whether the caller sees a capability of the catalog.
	Capability func(capability.Capability) bool
	// Method reports whether the caller sees a built-in method.
	Method func(name string) bool
}

// Generator writes the documents of one configuration, one per catalog version and view.
// It is safe for concurrent use.
type Generator struct {
	p Params

	mu      sync.Mutex
	version string            // the catalog version the cached documents belong to
	docs    map[string][]byte // by the fingerprint of the view; guarded by mu
}

// New returns the Generator of p.
func New(p Params) *Generator {
	p.Title = cmp.Or(p.Title, "Gatehouse")
	if p.Common == nil {
		p.Common = DefaultCommon
	}
	if p.CacheSize <= 0 {
		p.CacheSize = DefaultCacheSize
	}
	p.Builtins = slices.Clone(p.Builtins)
	return &Generator{p: p, docs: map[string][]byte{}}
}

// Document returns the OpenRPC document of the methods v shows, JSON. The slice is shared
// with the cache and must not be modified.
func (g *Generator) Document(v View) []byte {
	version, caps := g.catalog()
	shownCaps, shownBuiltins, key := g.view(v, caps)
	g.mu.Lock()
	if g.version == version {
		if doc, ok := g.docs[key]; ok {
			g.mu.Unlock()
			return doc
		}
	}
	g.mu.Unlock()
	doc := g.write(version, shownCaps, shownBuiltins)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.version != version {
		g.version, g.docs = version, map[string][]byte{}
	}
	if len(g.docs) >= g.p.CacheSize {
		for k := range g.docs { // the cache is full: one entry makes room
			delete(g.docs, k)
			break
		}
	}
	g.docs[key] = doc
	return doc
}

// catalog returns the catalog's version and capabilities.
func (g *Generator) catalog() (string, []capability.Capability) {
	if g.p.Catalog == nil {
		return "", nil
	}
	return g.p.Catalog.Version(), g.p.Catalog.Capabilities()
}

// view returns what v shows and the fingerprint of what it hides.
func (g *Generator) view(v View, caps []capability.Capability) ([]capability.Capability, []Method, string) {
	h := sha256.New()
	shownCaps := make([]capability.Capability, 0, len(caps))
	for _, c := range caps {
		if v.Capability == nil || v.Capability(c) {
			shownCaps = append(shownCaps, c)
		} else {
			h.Write([]byte(c.Method))
			h.Write([]byte{0})
		}
	}
	h.Write([]byte{1})
	shownBuiltins := make([]Method, 0, len(g.p.Builtins))
	for _, m := range g.p.Builtins {
		if v.Method == nil || v.Method(m.Name) {
			shownBuiltins = append(shownBuiltins, m)
		} else {
			h.Write([]byte(m.Name))
			h.Write([]byte{0})
		}
	}
	return shownCaps, shownBuiltins, hex.EncodeToString(h.Sum(nil))
}

// write builds a document.
func (g *Generator) write(catalogVersion string, caps []capability.Capability, builtins []Method) []byte {
	b := newBuilder(g.p.Common)
	for _, c := range caps {
		b.add(Method{Name: c.Method, Description: c.Description, Category: c.Category,
			Params: c.Input, Result: c.Output, Errors: kindErrors(c.Kind)})
	}
	for _, m := range builtins {
		b.add(m)
	}
	slices.SortFunc(b.methods, func(x, y method) int { return strings.Compare(x.Name, y.Name) })
	doc := document{
		OpenRPC: Version,
		Info: info{Title: g.p.Title, Version: cmp.Or(g.p.Version, "dev"),
			Description: "The methods this caller may call. rpc.discover answers this document for the caller who asks; GET /openrpc.json answers it for a caller without credentials."},
		Servers:        g.p.Servers,
		Methods:        b.methods,
		Components:     components{Errors: b.errors, Schemas: b.schemas},
		CatalogVersion: catalogVersion,
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(doc) // every part is a string, a number or valid JSON
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})
}

// kindErrors are the codes a capability of a kind answers beside the common ones.
func kindErrors(k capability.Kind) []schemas.Code {
	switch k {
	case capability.KindMCPTool:
		return []schemas.Code{schemas.CodeToolFailed}
	case capability.KindGRPCMethod:
		// What a backend's gRPC status becomes (schemas.FromGRPC), beyond the common codes.
		return []schemas.Code{schemas.CodeAgentExecution, schemas.CodeAuthentication, schemas.CodeInsufficientScope,
			schemas.CodeRateLimited, schemas.CodeMethodNotFound}
	case capability.KindAgentOperator:
		return []schemas.Code{schemas.CodeAgentRejected, schemas.CodeAgentTaskFailed, schemas.CodeAgentTimeout,
			schemas.CodeAgentGone, schemas.CodeNoAgent}
	default:
		return nil
	}
}

// Config is the openrpc section of the configuration file (docs/configuration.md).
type Config struct {
	// CacheSize bounds the documents kept per configuration, one per view (default
	// DefaultCacheSize, at most MaxCacheSize).
	CacheSize int `yaml:"cache_size" json:"cache_size,omitempty"`
}

// MaxCacheSize is the largest cache_size accepted.
const MaxCacheSize = 100000

// WithDefaults returns c with an unset cache size at its default.
func (c Config) WithDefaults() Config {
	c.CacheSize = cmp.Or(c.CacheSize, DefaultCacheSize)
	return c
}

// Validate checks the cache size: 0 (the default) to MaxCacheSize.
func (c Config) Validate() error {
	if c.CacheSize < 0 || c.CacheSize > MaxCacheSize {
		return fmt.Errorf("cache_size: must be between 1 and %d", MaxCacheSize)
	}
	return nil
}
