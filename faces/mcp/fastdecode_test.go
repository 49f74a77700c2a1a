package mcpface

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/fuzzseed"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
)

func TestDecodeToolCall(t *testing.T) {
	tests := []struct {
		name, body string
		ok         bool
		id, tool   string
		args, meta string
	}{
		{"plain", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo","arguments":{"a":1}},"id":7}`, true, "7", "echo", `{"a":1}`, ""},
		{"spaces and order", ` { "id" : "x-1" , "params" : { "arguments" : null , "name" : "echo" } , "method" : "tools/call" , "jsonrpc" : "2.0" } `, true, `"x-1"`, "echo", "", ""},
		{"meta", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo","_meta":{"progressToken":3}},"id":-12}`, true, "-12", "echo", "", `{"progressToken":3}`},
		{"no arguments", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo"},"id":0}`, true, "0", "echo", "", ""},
		{"another method", `{"jsonrpc":"2.0","method":"tools/list","params":{"name":"echo"},"id":1}`, false, "", "", "", ""},
		{"notification", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo"}}`, false, "", "", "", ""},
		{"batch", `[{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo"},"id":1}]`, false, "", "", "", ""},
		{"fraction id", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo"},"id":1.0}`, false, "", "", "", ""},
		{"exponent id", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo"},"id":1e2}`, false, "", "", "", ""},
		{"huge id", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo"},"id":12345678901234567}`, false, "", "", "", ""},
		{"minus zero id", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo"},"id":-0}`, false, "", "", "", ""},
		{"null id", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo"},"id":null}`, false, "", "", "", ""},
		{"escaped id", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo"},"id":"a\u0062"}`, false, "", "", "", ""},
		{"html in id", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo"},"id":"<a>"}`, false, "", "", "", ""},
		{"escaped member name", `{"jsonrpc":"2.0","method":"tools/call","params":{"n\u0061me":"echo"},"id":1}`, false, "", "", "", ""},
		{"escaped tool name", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"ec\u0068o"},"id":1}`, false, "", "", "", ""},
		{"no name", `{"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{}},"id":1}`, false, "", "", "", ""},
		{"name not a string", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":7},"id":1}`, false, "", "", "", ""},
		{"arguments an array", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo","arguments":[1]},"id":1}`, false, "", "", "", ""},
		{"arguments a string", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo","arguments":"x"},"id":1}`, false, "", "", "", ""},
		{"task", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo","task":{}},"id":1}`, false, "", "", "", ""},
		{"modern meta", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}},"id":1}`, false, "", "", "", ""},
		{"meta not an object", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo","_meta":1},"id":1}`, false, "", "", "", ""},
		{"reserved member", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo","arguments":{"deadline_ms":5}},"id":1}`, false, "", "", "", ""},
		{"repeated name", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo","name":"other"},"id":1}`, false, "", "", "", ""},
		{"repeated argument", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo","arguments":{"a":1,"a":2}},"id":1}`, false, "", "", "", ""},
		{"params an array", `{"jsonrpc":"2.0","method":"tools/call","params":["echo"],"id":1}`, false, "", "", "", ""},
		{"not json", `{"jsonrpc":"2.0","method":"tools/call",`, false, "", "", "", ""},
		{"wrong version", `{"jsonrpc":"1.0","method":"tools/call","params":{"name":"echo"},"id":1}`, false, "", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, ok := decodeToolCall([]byte(tt.body), jsonrpc.Limits{})
			if ok != tt.ok {
				t.Fatalf("ok %v, want %v (%+v)", ok, tt.ok, c)
			}
			if !ok {
				return
			}
			if c.id != tt.id || c.name != tt.tool || string(c.args) != tt.args || string(c.meta) != tt.meta {
				t.Fatalf("decoded id %s name %s args %s meta %s", c.id, c.name, c.args, c.meta)
			}
		})
	}
}

// FuzzDecodeToolCall: whatever the body, decodeToolCall does not panic, and a body it
// takes is one mcp-go reads the same: the same id (re-encoded to the same text), tool
// name, arguments and _meta.
func FuzzDecodeToolCall(f *testing.F) {
	// Seeds from real traffic: the golden files' and the recorded peers' frames (internal/fuzzseed).
	fuzzseed.Add(f, fuzzseed.MCPRequest)
	for _, s := range []string{
		`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo","arguments":{"a":[1,{"b":"c"}]}},"id":7}`,
		`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo","_meta":{"progressToken":"t"}},"id":"x"}`,
		` { "id" : -3 , "params" : { "arguments" : null , "name" : "e" } , "method" : "tools/call" , "jsonrpc" : "2.0" } `,
		`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo","arguments":{"s":"\u00e9\"\\"}},"id":1}`,
		`[{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo"},"id":1}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		c, ok := decodeToolCall(body, jsonrpc.Limits{})
		if !ok {
			return
		}
		var req mcp.CallToolRequest
		var env struct {
			ID any `json:"id"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			t.Fatalf("mcp-go cannot read a body the fast path took: %v", err)
		}
		if err := json.Unmarshal(body, &env); err != nil {
			t.Fatal(err)
		}
		if id, _ := json.Marshal(mcp.NewRequestId(env.ID)); string(id) != c.id {
			t.Fatalf("id %s, mcp-go writes %s", c.id, id)
		}
		if req.Params.Name != c.name {
			t.Fatalf("name %q, mcp-go reads %q", c.name, req.Params.Name)
		}
		var args any
		if c.args != nil {
			if err := json.Unmarshal(c.args, &args); err != nil {
				t.Fatal(err)
			}
		}
		if !reflect.DeepEqual(args, req.Params.Arguments) {
			t.Fatalf("arguments %s, mcp-go reads %#v", c.args, req.Params.Arguments)
		}
		if (c.meta == nil) != (req.Params.Meta == nil) {
			t.Fatalf("_meta %s, mcp-go reads %+v", c.meta, req.Params.Meta)
		}
	})
}
