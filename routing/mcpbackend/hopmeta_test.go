package mcpbackend

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestWithHopMeta covers the params shapes mcp-go hands a transport: typed params structs
// before 2026-07-28, the member map on it, and none.
func TestWithHopMeta(t *testing.T) {
	forged := func() *mcp.Meta {
		return &mcp.Meta{ProgressToken: "p1", AdditionalFields: map[string]any{MetaKeyAuthorization: "Bearer forged", "x": 1.0}}
	}
	typed := func(m *mcp.Meta) mcp.CallToolParams {
		return mcp.CallToolParams{Name: "echo", Arguments: json.RawMessage(`{"gatehouse.dev/authorization":"an argument, not metadata"}`), Meta: m}
	}
	members := func(meta string) map[string]json.RawMessage {
		m := map[string]json.RawMessage{"name": json.RawMessage(`"echo"`)}
		if meta != "" {
			m["_meta"] = json.RawMessage(meta)
		}
		return m
	}
	tests := []struct {
		name    string
		params  any
		bearer  string
		want    string // the params as JSON; "same" when they must be returned untouched
		wantErr string
	}{
		{"typed, no meta, no token", mcp.CallToolParams{Name: "echo", Arguments: json.RawMessage(`{"a":1}`)}, "", "same", ""},
		{"typed, the name only in arguments", typed(nil), "", `{"name":"echo","arguments":{"gatehouse.dev/authorization":"an argument, not metadata"}}`, ""},
		{"typed, no meta, token", typed(nil), "t1", `{"name":"echo","arguments":{"gatehouse.dev/authorization":"an argument, not metadata"},"_meta":{"gatehouse.dev/authorization":"Bearer t1"}}`, ""},
		{"typed, caller's value replaced", typed(forged()), "t2", `{"name":"echo","arguments":{"gatehouse.dev/authorization":"an argument, not metadata"},"_meta":{"gatehouse.dev/authorization":"Bearer t2","progressToken":"p1","x":1}}`, ""},
		{"typed, caller's value removed", typed(forged()), "", `{"name":"echo","arguments":{"gatehouse.dev/authorization":"an argument, not metadata"},"_meta":{"progressToken":"p1","x":1}}`, ""},
		{"typed, only the caller's value", typed(&mcp.Meta{AdditionalFields: map[string]any{MetaKeyAuthorization: "x"}}), "", `{"name":"echo","arguments":{"gatehouse.dev/authorization":"an argument, not metadata"}}`, ""},
		{"resources/read, token", mcp.ReadResourceParams{URI: "res://x", Meta: forged()}, "t9", `{"uri":"res://x","_meta":{"gatehouse.dev/authorization":"Bearer t9","progressToken":"p1","x":1}}`, ""},
		{"prompts/get, caller's value removed", mcp.GetPromptParams{Name: "p", Meta: forged()}, "", `{"name":"p","_meta":{"progressToken":"p1","x":1}}`, ""},
		{"other typed params, no member", mcp.PaginatedParams{Cursor: "c1"}, "", "same", ""},
		{"other typed params, caller's value replaced", mcp.PaginatedParams{Cursor: "c1", Meta: forged()}, "t10", `{"cursor":"c1","_meta":{"gatehouse.dev/authorization":"Bearer t10","progressToken":"p1","x":1}}`, ""},
		{"members, no token", members(`{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`), "", "same", ""},
		{"members, token", members(`{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`), "t3", `{"name":"echo","_meta":{"gatehouse.dev/authorization":"Bearer t3","io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`, ""},
		{"members, caller's value replaced", members(`{"gatehouse.dev/authorization":"Bearer forged"}`), "t4", `{"name":"echo","_meta":{"gatehouse.dev/authorization":"Bearer t4"}}`, ""},
		{"members, caller's value removed", members(`{"gatehouse.dev/authorization":"Bearer forged","y":2}`), "", `{"name":"echo","_meta":{"y":2}}`, ""},
		{"members, null meta", members(`null`), "t5", `{"name":"echo","_meta":{"gatehouse.dev/authorization":"Bearer t5"}}`, ""},
		{"no params, no token", nil, "", "same", ""},
		{"no params, token", nil, "t6", `{"_meta":{"gatehouse.dev/authorization":"Bearer t6"}}`, ""},
		{"params not an object", []int{1}, "t7", "", "not a JSON object"},
		{"meta not an object", members(`"gatehouse.dev/authorization"`), "", "", "_meta is not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := withHopMeta(tt.params, tt.bearer)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want an error containing %q", err, tt.wantErr)
				}
				if tt.bearer != "" && strings.Contains(err.Error(), tt.bearer) {
					t.Fatalf("the error names the credential: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.want == "same" {
				if !reflect.DeepEqual(got, tt.params) {
					t.Fatalf("params changed: %#v", got)
				}
				return
			}
			raw, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			var g, w any
			if err := json.Unmarshal(raw, &g); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tt.want), &w); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(g, w) {
				t.Fatalf("got %s\nwant %s", raw, tt.want)
			}
		})
	}
	t.Run("the caller's _meta is not modified", func(t *testing.T) {
		in := typed(forged())
		if _, err := withHopMeta(in, "t11"); err != nil {
			t.Fatal(err)
		}
		if in.Meta.AdditionalFields[MetaKeyAuthorization] != "Bearer forged" {
			t.Fatalf("input modified: %v", in.Meta.AdditionalFields)
		}
	})
	t.Run("the caller's member map is not modified", func(t *testing.T) {
		in := members(`{"gatehouse.dev/authorization":"Bearer forged"}`)
		if _, err := withHopMeta(in, "t8"); err != nil {
			t.Fatal(err)
		}
		if string(in["_meta"]) != `{"gatehouse.dev/authorization":"Bearer forged"}` {
			t.Fatalf("input modified: %s", in["_meta"])
		}
	})
}

func BenchmarkWithHopMeta(b *testing.B) {
	typed := mcp.CallToolParams{Name: "echo", Arguments: json.RawMessage(`{"message":"ping"}`), Meta: &mcp.Meta{ProgressToken: "gatehouse-1"}}
	members := map[string]json.RawMessage{"name": json.RawMessage(`"echo"`), "arguments": json.RawMessage(`{"message":"ping"}`),
		"_meta": json.RawMessage(`{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`)}
	cases := []struct {
		name   string
		params any
		bearer string
	}{
		{"typed/no token", typed, ""},
		{"typed/token", typed, "eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiJhbGljZSJ9.c2ln"},
		{"members/no token", members, ""},
		{"members/token", members, "eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiJhbGljZSJ9.c2ln"},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := withHopMeta(c.params, c.bearer); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
