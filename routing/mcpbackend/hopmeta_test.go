package mcpbackend

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/gatehouse-dev/gatehouse/gateway"
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
			got, err := withHopMeta(tt.params, hopMeta{bearer: tt.bearer})
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
		if _, err := withHopMeta(in, hopMeta{bearer: "t11"}); err != nil {
			t.Fatal(err)
		}
		if in.Meta.AdditionalFields[MetaKeyAuthorization] != "Bearer forged" {
			t.Fatalf("input modified: %v", in.Meta.AdditionalFields)
		}
	})
	t.Run("the caller's member map is not modified", func(t *testing.T) {
		in := members(`{"gatehouse.dev/authorization":"Bearer forged"}`)
		if _, err := withHopMeta(in, hopMeta{bearer: "t8"}); err != nil {
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
				if _, err := withHopMeta(c.params, hopMeta{bearer: c.bearer}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestWithHopMetaTraceContext: a traced call's trace context is set in _meta beside the hop
// credential, replacing any stale one (a tracestate without a new one is removed); an
// untraced call's _meta keeps what it had.
func TestWithHopMetaTraceContext(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	tests := []struct {
		name   string
		params any
		hop    hopMeta
		want   string
	}{
		{"typed, traced", mcp.CallToolParams{Name: "echo"}, hopMeta{bearer: "t1", traceparent: tp, tracestate: "k=v"},
			`{"name":"echo","_meta":{"gatehouse.dev/authorization":"Bearer t1","traceparent":"` + tp + `","tracestate":"k=v"}}`},
		{"typed, stale state dropped", mcp.CallToolParams{Name: "echo", Meta: &mcp.Meta{AdditionalFields: map[string]any{"traceparent": "old", "tracestate": "old"}}},
			hopMeta{traceparent: tp}, `{"name":"echo","_meta":{"traceparent":"` + tp + `"}}`},
		{"typed, untraced keeps", mcp.CallToolParams{Name: "echo", Meta: &mcp.Meta{AdditionalFields: map[string]any{"traceparent": "theirs"}}},
			hopMeta{}, `{"name":"echo","_meta":{"traceparent":"theirs"}}`},
		{"members, traced", map[string]json.RawMessage{"name": json.RawMessage(`"echo"`), "_meta": json.RawMessage(`{"tracestate":"old","x":1}`)},
			hopMeta{traceparent: tp}, `{"name":"echo","_meta":{"traceparent":"` + tp + `","x":1}}`},
		{"no params, traced", nil, hopMeta{traceparent: tp}, `{"_meta":{"traceparent":"` + tp + `"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := withHopMeta(tt.params, tt.hop)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := json.Marshal(got)
			var g, w any
			_ = json.Unmarshal(raw, &g)
			if err := json.Unmarshal([]byte(tt.want), &w); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(g, w) {
				t.Fatalf("got %s\nwant %s", raw, tt.want)
			}
		})
	}
}

// TestHopHeadersTraceContext: over HTTP, a traced call's requests carry the traceparent and
// tracestate headers of its span beside the hop credential; untraced ones carry neither.
func TestHopHeadersTraceContext(t *testing.T) {
	u := &upstream{hop: gateway.HopAuth{Mode: gateway.HopMint}}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, TraceFlags: trace.FlagsSampled})
	ctx := gateway.WithHopToken(trace.ContextWithSpanContext(context.Background(), sc), "tok")
	h := u.hopHeaders(ctx)
	if h["traceparent"] != "00-01000000000000000000000000000000-0200000000000000-01" || h["Authorization"] != "Bearer tok" {
		t.Fatalf("traced: %v", h)
	}
	if h := u.hopHeaders(context.Background()); h != nil {
		t.Fatalf("untraced: %v", h)
	}
}
