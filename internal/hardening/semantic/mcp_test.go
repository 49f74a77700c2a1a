package semantic

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/gatehouse-dev/gatehouse/internal/hardening"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// TestMCP sends hostile calls to the MCP face (/mcp) in both its revisions — 2025-11-25
// in a session, 2026-07-28 stateless — in front of an MCP upstream whose tool calls are
// counted: injected tool and method names, ids of every type, unicode arguments, bodies
// at jsonrpc.max_body_bytes ± 1.
func TestMCP(t *testing.T) {
	var calls atomic.Int64
	srv := mcpserver.NewMCPServer("up", "1", mcpserver.WithToolCapabilities(false))
	srv.AddTool(mcp.NewTool("echo", mcp.WithDescription("echoes"), mcp.WithString("text")),
		func(_ context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			calls.Add(1)
			return mcp.NewToolResultText(r.GetString("text", "")), nil
		})
	up := httptest.NewServer(mcpserver.NewStreamableHTTPServer(srv))
	t.Cleanup(up.Close)
	e := newEnv(t, fmt.Sprintf("  mcp:\n    servers:\n      - {name: up, http: {url: %q}}\n", up.URL+"/mcp"))
	g := e.gen
	session := map[string]string{"Accept": "application/json, text/event-stream"}
	_, hd, body := e.post("/mcp", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`, session)
	if hd.Get("Mcp-Session-Id") == "" {
		t.Fatalf("initialize: %s", body)
	}
	session["Mcp-Session-Id"] = hd.Get("Mcp-Session-Id")
	session["Mcp-Protocol-Version"] = "2025-11-25"
	e.post("/mcp", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, session)
	// the tool's name on the face, once the upstream's catalog is loaded
	tool := ""
	for i := 0; tool == "" && i < 400; i++ {
		_, _, body = e.post("/mcp", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, session)
		if i := strings.Index(body, `echo"`); i > 0 {
			tool = body[strings.LastIndex(body[:i], `"`)+1 : i+4]
		}
	}
	if tool == "" {
		t.Fatalf("the upstream's tool is not listed: %s", body)
	}
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"b","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	toolCall := func(id, name, args string, stateless bool) (string, map[string]string) {
		if !stateless {
			return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + name + `","arguments":` + args + `}}`, session
		}
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + name + `","arguments":` + args + `,` + meta + `}}`,
			map[string]string{"Accept": "application/json, text/event-stream", "Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": g.HeaderInjected(name)}
	}
	type mcpCall struct {
		body    string
		headers map[string]string
		id      string
		code    schemas.Code
	}
	classes := []struct {
		name string
		make func(stateless bool) mcpCall
	}{
		{"tool/unicode-arguments", func(s bool) mcpCall {
			id := g.ValidID(maxString)
			for id == "null" { // MCP ids are never null (2025-11-25 takes one for a notification)
				id = g.ValidID(maxString)
			}
			b, h := toolCall(id, tool, `{"text":"`+g.Content(maxString)+`"}`, s)
			if s {
				h["Mcp-Name"] = tool
			}
			return mcpCall{b, h, id, 0}
		}},
		// On 2026-07-28 the Mcp-Name and Mcp-Method headers are checked against the body
		// first: a hostile name or method there is -32020 (the revision's header mismatch).
		{"tool/name-injection", func(s bool) mcpCall {
			name := g.Injected(tool)
			b, h := toolCall("3", name, `{"text":"x"}`, s)
			var decoded string
			if !s || json.Unmarshal([]byte(`"`+name+`"`), &decoded) == nil && decoded == h["Mcp-Name"] {
				return mcpCall{b, h, "3", schemas.CodeInvalidParams}
			}
			return mcpCall{b, h, "3", -32020}
		}},
		{"method/injection", func(s bool) mcpCall {
			b, h := toolCall("4", tool, `{}`, s)
			b = strings.Replace(b, `"tools/call"`, `"`+g.Injected("tools/call")+`"`, 1)
			return mcpCall{b, h, "4", map[bool]schemas.Code{false: schemas.CodeMethodNotFound, true: -32020}[s]}
		}},
		{"id/refused-type", func(s bool) mcpCall {
			b, h := toolCall(g.InvalidID(), tool, `{"text":"x"}`, s)
			if !s {
				// KNOWN GAP (reported): in a 2025-11-25 session an id that is an object,
				// an array or a boolean reaches the tool and is echoed, where JSON-RPC and
				// MCP allow only strings and numbers (2026-07-28 refuses it with -32600).
				// This asserts the current behaviour so that a fix shows here.
				return mcpCall{b, h, "", 0}
			}
			return mcpCall{b, h, "", schemas.CodeInvalidRequest}
		}},
		{"body/over-limit", func(s bool) mcpCall {
			b, h := toolCall("5", tool, `{"text":"x"}`, s)
			return mcpCall{pad(b, maxBody+1), h, "", schemas.CodePayloadTooLarge}
		}},
	}
	n := hardening.Iterations(t, 200)
	for i := range n {
		cl := classes[i%len(classes)]
		stateless := i/len(classes)%2 == 1
		c := cl.make(stateless)
		rev := map[bool]string{false: "2025-11-25", true: "2026-07-28"}[stateless]
		before := calls.Load()
		status, _, raw := e.post("/mcp", c.body, c.headers)
		hits := calls.Load() - before
		class := "mcp/" + rev + "/" + cl.name
		outcome := fmt.Sprint(status)
		if c.code == schemas.CodePayloadTooLarge {
			if status != http.StatusRequestEntityTooLarge || hits != 0 {
				t.Errorf("%s: HTTP %d %.300s, %d upstream calls", class, status, raw, hits)
			}
			e.count(class, outcome)
			continue
		}
		r, err := parseMCPReply(raw)
		switch {
		case err != nil:
			t.Errorf("%s: HTTP %d %v: %.300s", class, status, err, raw)
		case c.code == 0 && (r.Error != nil || hits != 1 || c.id != "" && !sameValue(c.id, r.ID, true)):
			t.Errorf("%s: want a result from one upstream call (%d), id %s: %.400s\nsent %.300s", class, hits, c.id, raw, c.body)
		case c.code != 0 && (r.Error == nil || r.Error.Code != c.code || hits != 0):
			t.Errorf("%s: want %d and no upstream call (%d): HTTP %d %.400s\nsent %.300s", class, c.code, hits, status, raw, c.body)
		}
		e.count(class, r.outcome())
		if e.tooMany() {
			break
		}
	}
	t.Logf("the MCP upstream's tool ran %d times (the calculator's hits below are not its)", calls.Load())
	e.finish()
}

// parseMCPReply reads an MCP face's answer: one JSON-RPC response, as JSON or as the one
// event of a text/event-stream; an MCP error needs no trace id.
func parseMCPReply(raw string) (reply, error) {
	if i := strings.Index(raw, "data: "); i >= 0 && strings.HasPrefix(raw, "event:") || strings.HasPrefix(raw, "data: ") {
		raw = strings.TrimSpace(strings.SplitN(raw[i+6:], "\n", 2)[0])
	}
	return parseReplyOf([]byte(raw), false)
}

// sameValue reports whether the response id got denotes the value of the request id sent:
// the MCP face may write a number in another form (1e308 as 1e+308), never another value.
//
// KNOWN GAP (reported): on the MCP face (both revisions) a number id goes through a float64, so
// 9007199254740993 is answered as 9007199254740992 — another request's id. asDouble
// compares such ids as doubles, the current behaviour, so that a fix shows here.
func sameValue(sent string, got json.RawMessage, asDouble bool) bool {
	if sameID(sent, got) {
		return true
	}
	if asDouble {
		var a, b float64
		return json.Unmarshal([]byte(sent), &a) == nil && json.Unmarshal(got, &b) == nil && a == b
	}
	a, _, errA := big.ParseFloat(sent, 10, 256, big.ToNearestEven)
	b, _, errB := big.ParseFloat(string(got), 10, 256, big.ToNearestEven)
	return errA == nil && errB == nil && a.Cmp(b) == 0
}
