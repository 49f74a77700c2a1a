package mcpface

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/fuzzseed"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
)

const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`

func modernCall(params string) string {
	return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` + params + `,` + modernMeta + `}}`
}

func TestCheckRouting(t *testing.T) {
	v26 := [][2]string{{"Mcp-Protocol-Version", "2026-07-28"}}
	hdr := func(kv ...[2]string) http.Header {
		h := http.Header{}
		for _, p := range kv {
			h[p[0]] = append(h[p[0]], p[1]) // as sent: no canonicalization
		}
		return h
	}
	with := func(kv ...[2]string) http.Header { return hdr(append(append([][2]string{}, v26...), kv...)...) }
	m := func(v string) [2]string { return [2]string{"Mcp-Method", v} }
	n := func(v string) [2]string { return [2]string{"Mcp-Name", v} }
	call := modernCall(`"name":"public","arguments":{}`)
	tests := []struct {
		name   string
		h      http.Header
		body   string
		code   int    // 0: accepted
		header string // the header at fault
		tool   string // the verified name, when accepted with headers
	}{
		{"agreeing", with(m("tools/call"), n("public")), call, 0, "", "public"},
		{"name in base64", with(m("tools/call"), n("=?base64?cHVibGlj?=")), call, 0, "", "public"},
		{"name variant of header", with([2]string{"mcp-method", "tools/call"}, [2]string{"MCP-NAME", "public"}), call, 0, "", "public"},
		{"method mismatch", with(m("tools/list"), n("public")), call, mcp.HEADER_MISMATCH, "Mcp-Method", ""},
		{"method value case", with(m("Tools/Call"), n("public")), call, mcp.HEADER_MISMATCH, "Mcp-Method", ""},
		{"name mismatch", with(m("tools/call"), n("secret")), call, mcp.HEADER_MISMATCH, "Mcp-Name", ""},
		{"name value case", with(m("tools/call"), n("PUBLIC")), call, mcp.HEADER_MISMATCH, "Mcp-Name", ""},
		{"allowed header hides denied tool", with(m("tools/call"), n("public")), modernCall(`"name":"secret"`), mcp.HEADER_MISMATCH, "Mcp-Name", ""},
		{"method twice", with(m("tools/call"), m("tools/call"), n("public")), call, mcp.HEADER_MISMATCH, "Mcp-Method", ""},
		{"method twice in two spellings", with(m("tools/call"), [2]string{"mcp-method", "tools/call"}, n("public")), call, mcp.HEADER_MISMATCH, "Mcp-Method", ""},
		{"name twice", with(m("tools/call"), n("public"), n("secret")), call, mcp.HEADER_MISMATCH, "Mcp-Name", ""},
		{"name twice in two spellings", with(m("tools/call"), n("public"), [2]string{"mcp-name", "public"}), call, mcp.HEADER_MISMATCH, "Mcp-Name", ""},
		{"version twice", with(m("tools/call"), n("public"), [2]string{"Mcp-Protocol-Version", "2025-11-25"}), call, mcp.HEADER_MISMATCH, "Mcp-Protocol-Version", ""},
		{"method missing", with(n("public")), call, mcp.HEADER_MISMATCH, "Mcp-Method", ""},
		{"name missing", with(m("tools/call")), call, mcp.HEADER_MISMATCH, "Mcp-Name", ""},
		{"name for a method without one", with(m("tools/list"), n("public")), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + modernMeta + `}}`, mcp.HEADER_MISMATCH, "Mcp-Name", ""},
		{"list without name", with(m("tools/list")), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + modernMeta + `}}`, 0, "", ""},
		{"bad base64", with(m("tools/call"), n("=?base64?***?=")), call, mcp.HEADER_MISMATCH, "Mcp-Name", ""},
		{"name not a string", with(m("tools/call"), n("7")), modernCall(`"name":7`), mcp.HEADER_MISMATCH, "Mcp-Name", ""},
		{"escaped body name", with(m("tools/call"), n("public")), modernCall(`"name":"pub\u006cic"`), 0, "", "public"},
		{"resource uri", with(m("resources/read"), n("file:///a")), `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///a",` + modernMeta + `}}`, 0, "", "file:///a"},
		{"resource uri mismatch", with(m("resources/read"), n("file:///b")), `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///a",` + modernMeta + `}}`, mcp.HEADER_MISMATCH, "Mcp-Name", ""},
		{"task id", with(m("tasks/get"), n("t-1")), `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"t-1",` + modernMeta + `}}`, 0, "", "t-1"},
		{"task id mismatch", with(m("tasks/cancel"), n("t-2")), `{"jsonrpc":"2.0","id":1,"method":"tasks/cancel","params":{"taskId":"t-1",` + modernMeta + `}}`, mcp.HEADER_MISMATCH, "Mcp-Name", ""},
		{"duplicate name in params", with(m("tools/call"), n("public")), modernCall(`"name":"public","name":"secret"`), mcp.INVALID_REQUEST, "", ""},
		{"duplicate method", with(m("tools/call"), n("public")), `{"jsonrpc":"2.0","id":1,"method":"tools/call","method":"tools/list","params":{"name":"public",` + modernMeta + `}}`, mcp.INVALID_REQUEST, "", ""},
		{"duplicate _meta", with(m("tools/call"), n("public")), modernCall(`"name":"public","_meta":{}`), mcp.INVALID_REQUEST, "", ""},
		{"duplicate key in _meta", with(m("tools/call"), n("public")), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"public","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/protocolVersion":"2025-11-25"}}}`, mcp.INVALID_REQUEST, "", ""},
		{"duplicate argument", with(m("tools/call"), n("public")), modernCall(`"name":"public","arguments":{"a":1,"a":2}`), mcp.INVALID_REQUEST, "", ""},
		{"name in another case", with(m("tools/call"), n("public")), modernCall(`"name":"public","NAME":"secret"`), mcp.INVALID_REQUEST, "", ""},
		{"name with a long s", with(m("tasks/get"), n("t-1")), `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"t-1","ta\u017fkId":"t-2",` + modernMeta + `}}`, mcp.INVALID_REQUEST, "", ""},
		{"method in another case", with(m("tools/call"), n("public")), `{"jsonrpc":"2.0","id":1,"method":"tools/call","Method":"tools/list","params":{"name":"public",` + modernMeta + `}}`, mcp.INVALID_REQUEST, "", ""},
		{"batch", with(m("tools/call"), n("public")), `[` + call + `]`, mcp.INVALID_REQUEST, "", ""},
		{"not json", with(m("tools/call"), n("public")), `{"jsonrpc":`, mcp.PARSE_ERROR, "", ""},
		{"modern by body only", hdr(m("tools/call")), call, mcp.HEADER_MISMATCH, "Mcp-Name", ""},
		{"earlier revision without headers", hdr([2]string{"Mcp-Protocol-Version", "2025-11-25"}), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","name":"y"}}`, 0, "", ""},
		{"earlier revision with a lying header", hdr([2]string{"Mcp-Protocol-Version", "2025-11-25"}, m("tools/call"), n("public")), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"secret"}}`, mcp.HEADER_MISMATCH, "Mcp-Name", ""},
		{"earlier revision, name without method", hdr(n("public")), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"public"}}`, mcp.HEADER_MISMATCH, "Mcp-Name", ""},
		{"earlier revision with agreeing headers", hdr(m("tools/call"), n("public")), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"public"}}`, 0, "", "public"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt, id, err := checkRouting(tt.h, []byte(tt.body), jsonrpc.Limits{})
			if tt.code == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if tt.tool != "" && (!rt.verified || rt.name != tt.tool) {
					t.Fatalf("routing %+v, want the name %q verified", rt, tt.tool)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted (%+v), want code %d", rt, tt.code)
			}
			if int(err.Code) != tt.code || err.Header != tt.header {
				t.Fatalf("refused %d %q (%v), want %d %q", err.Code, err.Header, err, tt.code, tt.header)
			}
			if tt.code == mcp.HEADER_MISMATCH && id.Raw() != "1" {
				t.Fatalf("id %s, want 1", id.Raw())
			}
		})
	}
}

// FuzzCheckRouting: whatever the body and headers, a request checkRouting lets through
// with verified headers has exactly the method and name its body has for mcp-go.
func FuzzCheckRouting(f *testing.F) {
	// Seeds from real traffic: the golden files' and the recorded peers' frames (internal/fuzzseed).
	for _, b := range fuzzseed.Frames(f, fuzzseed.MCPRequest) {
		var m struct {
			Method string `json:"method"`
			Params struct {
				Name string `json:"name"`
				URI  string `json:"uri"`
			} `json:"params"`
		}
		if json.Unmarshal(b, &m) == nil {
			f.Add(string(b), m.Method, m.Params.Name+m.Params.URI)
		}
	}
	f.Add(modernCall(`"name":"public"`), "tools/call", "public")
	f.Add(modernCall(`"name":"pub\u006cic"`), "tools/call", "public")
	f.Add(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"a",`+modernMeta+`}}`, "resources/read", "=?base64?YQ==?=")
	f.Add(modernCall(`"name":"a","name":"b"`), "tools/call", "a")
	f.Add(modernCall(`"name":"a","Name":"b"`), "tools/call", "a")
	f.Add(`[`+modernCall(`"name":"a"`)+`]`, "tools/call", "a")
	f.Fuzz(func(t *testing.T, body, method, name string) {
		h := http.Header{"Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {method}, "Mcp-Name": {name}}
		rt, _, err := checkRouting(h, []byte(body), jsonrpc.Limits{})
		if err != nil || !rt.verified {
			return
		}
		var req struct {
			Method string
			Params map[string]any
		}
		if e := json.Unmarshal([]byte(body), &req); e != nil {
			t.Fatalf("accepted a body encoding/json refuses: %v", e)
		}
		if req.Method != method || rt.method != method {
			t.Fatalf("method %q accepted for a body of %q", method, req.Method)
		}
		member, _ := nameMember(method)
		if member == "" {
			return
		}
		got, _ := req.Params[member].(string)
		if want, _ := decodeHeaderValue(name); got != want || rt.name != got {
			t.Fatalf("name %q accepted for a body naming %q", want, got)
		}
	})
}
