package mcpbackend

import (
	"encoding/json"
	"slices"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// Probe is what the gateway learnt of an upstream server when its pool last connected.
// The connection probes server/discover first whenever a stateless revision is
// configured; a server that does not answer it is initialized with a handshake revision.
type Probe struct {
	// Method is how the version was settled: "server/discover" or "initialize".
	Method string `json:"method"`
	// DiscoverRefused is set when server/discover was sent and not answered with a result
	// (a server before 2026-07-28), so the handshake followed.
	DiscoverRefused bool `json:"discover_refused,omitempty"`
	// Versions are the revisions the server speaks, newest first: server/discover's
	// supportedVersions, or for a server that only answers initialize the one it chose.
	Versions []string `json:"versions"`
	// Negotiated is the revision the gateway speaks with it.
	Negotiated string `json:"negotiated"`
	// Capabilities names the server's declared capabilities, sorted.
	Capabilities []string `json:"capabilities"`
}

// probeNotes is what a session's wire saw of the negotiation.
type probeNotes struct {
	discovered *mcp.DiscoverResult
	refused    bool // server/discover was sent and not answered with a result
}

// noteProbe records a server/discover exchange of the session's handshake (wire.go).
func (s *session) noteProbe(req transport.JSONRPCRequest, resp *transport.JSONRPCResponse, err error) {
	if req.Method != string(mcp.MethodServerDiscover) || s.cli == nil || s.cli.IsInitialized() {
		return // a later discover is a heartbeat
	}
	if err != nil || resp == nil || resp.Error != nil {
		s.probeNotes.refused = true
		return
	}
	var res mcp.DiscoverResult
	if json.Unmarshal(resp.Result, &res) == nil {
		s.probeNotes.discovered = &res
	}
}

// probe is what s's handshake learnt.
func (s *session) probe() *Probe {
	p := &Probe{Method: string(mcp.MethodInitialize), Negotiated: s.version, DiscoverRefused: s.probeNotes.refused,
		Capabilities: capabilityNames(s.caps)}
	if d := s.probeNotes.discovered; d != nil && mcp.IsModernProtocol(s.version) {
		p.Method = string(mcp.MethodServerDiscover)
		p.Versions = slices.Clone(d.SupportedVersions)
	}
	if len(p.Versions) == 0 {
		p.Versions = []string{s.version}
	}
	return p
}

// capabilityNames names the capabilities a server declared.
func capabilityNames(c mcp.ServerCapabilities) []string {
	var out []string
	for _, n := range []struct {
		name string
		set  bool
	}{
		{"completions", c.Completions != nil}, {"experimental", len(c.Experimental) > 0}, {"extensions", len(c.Extensions) > 0},
		{"logging", c.Logging != nil}, {"prompts", c.Prompts != nil}, {"resources", c.Resources != nil},
		{"tasks", c.Tasks != nil}, {"tools", c.Tools != nil},
	} {
		if n.set {
			out = append(out, n.name)
		}
	}
	return out
}

// Probes returns, by upstream name, what each server was found to speak when its pool
// last connected (absent while none has).
func (b *Bridge) Probes() map[string]Probe {
	out := make(map[string]Probe, len(b.ups))
	for _, u := range b.ups {
		if p := u.probe.Load(); p != nil {
			out[u.cfg.Name] = *p
		}
	}
	return out
}

// Probes is Bridge.Probes.
func (t *Target) Probes() map[string]Probe { return t.b.Probes() }
