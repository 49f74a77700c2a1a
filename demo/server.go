package demo

import (
	"log/slog"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

// SuiteVersion is the version of @modelcontextprotocol/conformance whose scenario sources
// the fixtures follow.
const SuiteVersion = "0.1.16"

// Defaults applied by NewMCP to zero MCPOptions fields.
const (
	DefaultMCPName      = "gatehouse-demo-mcp"
	DefaultMCPVersion   = "1.0.0"
	DefaultMCPStepDelay = 50 * time.Millisecond
)

// MCPOptions configures a fixture server. The zero value is ready to use.
type MCPOptions struct {
	// Name and Version are announced in serverInfo; empty means DefaultMCPName and
	// DefaultMCPVersion.
	Name    string
	Version string
	// StepDelay separates the notifications of test_tool_with_logging and
	// test_tool_with_progress (the suite asks for about 50 ms) and follows the last one;
	// it is also test_reconnection's duration. Zero means DefaultMCPStepDelay, a negative
	// value no delay.
	StepDelay time.Duration
	// Logger receives the transports' error logs; nil discards them. Nothing is ever
	// written to stdout, which ServeStdio may own.
	Logger *slog.Logger
}

// MCP is one fixture server: an mcp-go server with the suite's tools, resources,
// resource templates and prompts registered. It is safe for concurrent use.
type MCP struct {
	mcp       *server.MCPServer
	logger    *slog.Logger
	stepDelay time.Duration
	watched   *watchedResource
}

// NewMCP returns a fixture server configured by opts.
func NewMCP(opts MCPOptions) *MCP {
	opts = opts.withDefaults()
	s := &MCP{
		logger:    opts.Logger,
		stepDelay: max(opts.StepDelay, 0),
		watched:   newWatchedResource(),
	}
	hooks := &server.Hooks{}
	s.watched.hook(hooks)
	s.mcp = server.NewMCPServer(opts.Name, opts.Version,
		server.WithToolCapabilities(true),
		server.WithResourceCapabilities(true, true),
		server.WithPromptCapabilities(true),
		server.WithLogging(),
		server.WithCompletions(),
		server.WithPromptCompletionProvider(promptCompletions{}),
		server.WithResourceCompletionProvider(resourceCompletions{}),
		server.WithHooks(hooks),
		server.WithRecovery(),
	)
	// No EnableSampling or WithElicitation: they would announce sampling and elicitation
	// as server capabilities, which the specification defines for clients only. Asking
	// the client needs neither.
	s.addTools()
	s.addResources()
	s.addPrompts()
	return s
}

// MCPServer returns the underlying mcp-go server, for transports this package does not
// wrap (in-process clients, legacy SSE).
func (s *MCP) MCPServer() *server.MCPServer { return s.mcp }

func (o MCPOptions) withDefaults() MCPOptions {
	if o.Name == "" {
		o.Name = DefaultMCPName
	}
	if o.Version == "" {
		o.Version = DefaultMCPVersion
	}
	if o.StepDelay == 0 {
		o.StepDelay = DefaultMCPStepDelay
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}
