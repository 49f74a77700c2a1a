package capability_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/fuzzseed"

	"github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/demo"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing"
	"github.com/gatehouse-dev/gatehouse/routing/capability"
	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

const personSchema = `{"type":"object","properties":{"name":{"type":"string","minLength":1},` +
	`"tags":{"type":"array","items":{"type":"string"}},"address":{"type":"object","properties":{"zip":{"type":"string","pattern":"^[0-9]{5}$"}}},` +
	`"kind":{"enum":["a","b"]},"n":{"type":"integer","maximum":10}},"required":["name"],"additionalProperties":false}`

func TestInvokeChecks(t *testing.T) {
	r := newRegistry(t, capability.Config{}, tool("person", "Stores a person.", personSchema))
	c, _ := r.Lookup("person")
	ok := returning(`{"content":[{"type":"text","text":"stored"}]}`)
	tests := []struct {
		name   string
		p      nekte.InvokeParams
		code   schemas.Code
		data   map[string]any // members that must be in error.data
		reason string
	}{
		{"valid with h", nekte.InvokeParams{Cap: "person", H: c.Hash, In: json.RawMessage(`{"name":"Ada"}`)}, 0, nil, ""},
		{"valid without h", nekte.InvokeParams{Cap: "person", In: json.RawMessage(`{"name":"Ada","tags":["x"]}`)}, 0, nil, ""},
		{"unknown", nekte.InvokeParams{Cap: "nobody", In: json.RawMessage(`{}`)}, schemas.CodeCapabilityNotFound, map[string]any{"cap": "nobody"}, ""},
		{"stale h", nekte.InvokeParams{Cap: "person", H: "00000000", In: json.RawMessage(`{"name":"Ada"}`)},
			schemas.CodeVersionMismatch, map[string]any{"current_hash": c.Hash}, ""},
		{"missing member", nekte.InvokeParams{Cap: "person", In: json.RawMessage(`{}`)},
			schemas.CodeInvalidParams, map[string]any{"path": "in.name", "reason": "is required"}, ""},
		{"absent in is {}", nekte.InvokeParams{Cap: "person"},
			schemas.CodeInvalidParams, map[string]any{"path": "in.name", "reason": "is required"}, ""},
		{"wrong type deep", nekte.InvokeParams{Cap: "person", In: json.RawMessage(`{"name":"A","tags":["x",7]}`)},
			schemas.CodeInvalidParams, map[string]any{"path": "in.tags[1]", "reason": "must be of type string"}, ""},
		{"pattern", nekte.InvokeParams{Cap: "person", In: json.RawMessage(`{"name":"A","address":{"zip":"secret-value"}}`)},
			schemas.CodeInvalidParams, map[string]any{"path": "in.address.zip"}, "pattern"},
		{"extra member", nekte.InvokeParams{Cap: "person", In: json.RawMessage(`{"name":"A","z":1,"y":2}`)},
			schemas.CodeInvalidParams, map[string]any{"path": "in.y", "reason": "is not allowed"}, ""},
		{"enum", nekte.InvokeParams{Cap: "person", In: json.RawMessage(`{"name":"A","kind":"c"}`)},
			schemas.CodeInvalidParams, map[string]any{"path": "in.kind", "reason": `must be one of "a", "b"`}, ""},
		{"maximum", nekte.InvokeParams{Cap: "person", In: json.RawMessage(`{"name":"A","n":11}`)},
			schemas.CodeInvalidParams, map[string]any{"path": "in.n", "reason": "must be at most 10"}, ""},
		{"first failure by location", nekte.InvokeParams{Cap: "person", In: json.RawMessage(`{"name":"","n":"x","kind":5}`)},
			schemas.CodeInvalidParams, map[string]any{"path": "in.kind"}, ""},
		{"not an object", nekte.InvokeParams{Cap: "person", In: json.RawMessage(`[1]`)},
			schemas.CodeInvalidParams, map[string]any{"path": "in", "reason": "must be of type object"}, ""},
		{"not JSON", nekte.InvokeParams{Cap: "person", In: json.RawMessage(`{nope`)},
			schemas.CodeInvalidParams, map[string]any{"path": "in", "reason": "must be valid JSON"}, ""},
		{"bad params", nekte.InvokeParams{Cap: ""}, schemas.CodeInvalidParams, map[string]any{"field": "cap"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := r.Invoke(context.Background(), ok, tt.p)
			if tt.code == 0 {
				if err != nil || string(res.Out) != `{"text":"stored"}` || res.ResolvedLevel != nekte.Compact {
					t.Fatalf("got %+v, %v", res, err)
				}
				return
			}
			if res != nil || codeOf(err) != tt.code {
				t.Fatalf("got %+v, %v; want code %d", res, err, tt.code)
			}
			d := dataOf(err)
			for k, v := range tt.data {
				if d[k] != v {
					t.Fatalf("data %v, want %s = %v", d, k, v)
				}
			}
			if !strings.Contains(fmt.Sprint(d["reason"]), tt.reason) || strings.Contains(fmt.Sprint(d), "secret-value") {
				t.Fatalf("reason %v", d)
			}
		})
	}
}

func TestVersionMismatchData(t *testing.T) {
	r := newRegistry(t, capability.Config{}, tool("echo", "Echoes.", `{"type":"object"}`))
	r.Observe("echo", 12*time.Millisecond, 7)
	_, err := r.Invoke(context.Background(), returning(`{}`), nekte.InvokeParams{Cap: "echo", H: "deadbeef"})
	ge, _ := errors.AsType[*gateway.Error](err)
	if ge == nil || ge.Message() != "VERSION_MISMATCH" {
		t.Fatalf("got %v", err)
	}
	data, _ := json.Marshal(ge.Data())
	c, _ := r.Lookup("echo")
	want := `{"current_hash":"` + c.Hash + `","schema":{"id":"echo","cat":"up","h":"` + c.Hash +
		`","desc":"Echoes.","cost":{"avg_ms":12,"avg_tokens":7},"input":{"type":"object"},"output":{}}}`
	if string(data) != want {
		t.Fatalf("data %s\nwant %s", data, want)
	}
	l2, _ := r.Discover(nekte.DiscoverParams{Level: 2, Filter: &nekte.DiscoverFilter{ID: "echo"}})
	if !strings.Contains(string(l2), string(must(json.Marshal(ge.Data()["schema"])))) {
		t.Fatalf("the schema in the error is not the L2 entry: %s", l2)
	}
}

func TestInvokeResults(t *testing.T) {
	spec := demo.NewSpec(routing.DemoConfig{})
	r, err := capability.New(capability.Config{}, capability.SourcesOf([]gateway.Target{spec})...)
	if err != nil {
		t.Fatal(err)
	}
	r.Update([]capability.Capability{
		tool("text", "", ""), tool("failing", "", ""),
		{ID: "stream", Method: "count", Kind: capability.KindGRPCMethod, Streaming: true},
		{ID: "bigstream", Method: "count", Kind: capability.KindGRPCMethod, Streaming: true},
		{ID: "broken", Method: "broken", Kind: capability.KindGRPCMethod},
	})
	longText := strings.Repeat("word ", 400)
	var closed sync.WaitGroup
	inv := invokerFunc(func(ctx context.Context, c capability.Capability, in json.RawMessage) (*gateway.Result, error) {
		switch c.ID {
		case "text":
			return gateway.NewResult([]byte(`{"content":[{"type":"text","text":` + string(must(json.Marshal(longText))) + `}]}`)), nil
		case "failing":
			return gateway.NewResult([]byte(`{"content":[{"type":"text","text":"boom"}],"isError":true}`)), nil
		case "stream":
			closed.Add(1)
			return &gateway.Result{Stream: &sliceStream{msgs: []string{`{"value":"1"}`, `{"value":"2"}`}, closed: &closed}}, nil
		case "bigstream":
			closed.Add(1)
			return &gateway.Result{Stream: &sliceStream{msgs: []string{strings.Repeat(`"x"`, 40), `1`, `2`}, closed: &closed}}, nil
		case "broken":
			return gateway.NewResult([]byte(`{nope`)), nil
		}
		return spec.Invoke(ctx, &gateway.Call{Method: c.Method, Params: in, Capability: c.ID})
	})
	small := capability.Config{Invoke: capability.InvokeConfig{MaxCollectedBytes: 100}}
	rSmall := newRegistry(t, small, r.Capabilities()...)
	tests := []struct {
		name   string
		r      *capability.Registry
		p      nekte.InvokeParams
		out    string // JSON of out; prefix match when it ends in "…"
		level  nekte.DetailLevel
		code   schemas.Code
		reason string
	}{
		{"builtin full", r, nekte.InvokeParams{Cap: "subtract", In: json.RawMessage(`{"minuend":42,"subtrahend":23}`),
			Budget: &nekte.Budget{DetailLevel: nekte.Full}}, `19`, nekte.Full, 0, ""},
		{"builtin default budget", r, nekte.InvokeParams{Cap: "get_data"}, `["hello",5]`, nekte.Compact, 0, ""},
		{"builtin minimal", r, nekte.InvokeParams{Cap: "get_data", Budget: &nekte.Budget{DetailLevel: nekte.Minimal}},
			`"2 items: hello, 5"`, nekte.Minimal, 0, ""},
		{"builtin array input", r, nekte.InvokeParams{Cap: "sum", In: json.RawMessage(`[1,2,4]`)}, `7`, nekte.Compact, 0, ""},
		{"builtin invalid input", r, nekte.InvokeParams{Cap: "sum", In: json.RawMessage(`{"a":1}`)}, "", "", schemas.CodeInvalidParams, "must be of type array"},
		{"mcp text compact cut", r, nekte.InvokeParams{Cap: "text"}, `{"text":"word word`, nekte.Compact, 0, ""},
		{"mcp text full too big falls back", r, nekte.InvokeParams{Cap: "text", Budget: &nekte.Budget{MaxTokens: 100, DetailLevel: nekte.Full}},
			`"word word`, nekte.Minimal, 0, ""},
		{"mcp isError", r, nekte.InvokeParams{Cap: "failing"}, "", "", schemas.CodeToolFailed, ""},
		{"stream collected", r, nekte.InvokeParams{Cap: "stream", Budget: &nekte.Budget{DetailLevel: nekte.Full}},
			`[{"value":"1"},{"value":"2"}]`, nekte.Full, 0, ""},
		{"stream over the bound", rSmall, nekte.InvokeParams{Cap: "bigstream"}, "", "", schemas.CodePayloadTooLarge, ""},
		{"stream within the bound", rSmall, nekte.InvokeParams{Cap: "stream"}, `[{"value":"1"},{"value":"2"}]`, nekte.Compact, 0, ""},
		{"result not JSON", r, nekte.InvokeParams{Cap: "broken"}, "", "", schemas.CodeInternal, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := tt.r.Invoke(context.Background(), inv, tt.p)
			if tt.code != 0 {
				if res != nil || codeOf(err) != tt.code || !strings.Contains(fmt.Sprint(dataOf(err)["reason"]), tt.reason) {
					t.Fatalf("got %+v, %v %v; want code %d", res, err, dataOf(err), tt.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(res.Out), tt.out) || res.ResolvedLevel != tt.level {
				t.Fatalf("out %s at %s, want %s at %s", res.Out, res.ResolvedLevel, tt.out, tt.level)
			}
			if res.Meta.TokensUsed != nekte.Tokens(res.Out) || res.Meta.TokensUsed == 0 {
				t.Fatalf("tokens_used %d for %s", res.Meta.TokensUsed, res.Out)
			}
		})
	}
	closed.Wait() // every stream was closed
	_, err = r.Invoke(context.Background(), inv, nekte.InvokeParams{Cap: "failing"})
	d := dataOf(err)
	if d["tool"] != "failing" || !strings.Contains(string(must(json.Marshal(d["result"]))), "boom") {
		t.Fatalf("TOOL_FAILED data %v", d)
	}
	if c, _ := r.Lookup("subtract"); c.Cost.AvgTokens == 0 {
		t.Fatalf("invoke not observed: %+v", c.Cost)
	}
}

// sliceStream is a stream of fixed messages.
type sliceStream struct {
	msgs   []string
	closed *sync.WaitGroup
	once   sync.Once
}

func (s *sliceStream) Recv(context.Context) ([]byte, error) {
	if len(s.msgs) == 0 {
		return nil, io.EOF
	}
	m := s.msgs[0]
	s.msgs = s.msgs[1:]
	return []byte(m), nil
}

func (s *sliceStream) Close() error {
	s.once.Do(s.closed.Done)
	return nil
}

func TestInvokerErrorsPassThrough(t *testing.T) {
	r := newRegistry(t, capability.Config{}, tool("x", "", ""))
	backend := gateway.WireError(schemas.CodeToolFailed, "Tool call failed", map[string]any{"upstream": "u"})
	tests := []struct {
		err  error
		code schemas.Code
	}{
		{backend, schemas.CodeToolFailed},
		{context.DeadlineExceeded, schemas.CodeDeadlineExceeded},
		{errors.New("plain"), schemas.CodeInternal},
	}
	for _, tt := range tests {
		inv := invokerFunc(func(context.Context, capability.Capability, json.RawMessage) (*gateway.Result, error) {
			return nil, tt.err
		})
		_, err := r.Invoke(context.Background(), inv, nekte.InvokeParams{Cap: "x"})
		if codeOf(err) != tt.code {
			t.Errorf("%v → %v", tt.err, err)
		}
	}
}

func TestInvokeUncompilableSchemaIsNotChecked(t *testing.T) {
	r := newRegistry(t, capability.Config{},
		tool("ref", "", `{"$ref":"file:///etc/passwd"}`),
		tool("lookahead", "", `{"type":"string","pattern":"^(?!x)"}`))
	for _, id := range []string{"ref", "lookahead"} {
		if _, err := r.Invoke(context.Background(), returning(`{"content":[]}`), nekte.InvokeParams{Cap: id, In: json.RawMessage(`{}`)}); err != nil {
			t.Errorf("%s: %v", id, err)
		}
	}
}

// TestInvokeMCPFixture runs capabilities on a real MCP server through the bridge: text
// results, isError results, and a tool added at run time (list_changed) changing the
// catalog.
func TestInvokeMCPFixture(t *testing.T) {
	target := startBridge(t, fast(mcpbackend.Config{Name: "fx", Stdio: &mcpbackend.StdioConfig{Command: fixtureBin, Env: map[string]string{"FIXTURE_NAME": "fx"}}}))
	r, err := capability.New(capability.Config{}, capability.SourcesOf([]gateway.Target{target})...)
	if err != nil {
		t.Fatal(err)
	}
	inv := targetInvoker{target}
	ctx := ctxTimeout(t, 20*time.Second)
	echo, ok := r.Lookup("echo")
	if !ok || echo.Category != "fx" || echo.Method != "mcp.echo" || echo.Source != "fx" || !strings.Contains(string(echo.Input), `"message"`) {
		t.Fatalf("echo = %+v", echo)
	}
	res, err := r.Invoke(ctx, inv, nekte.InvokeParams{Cap: "echo", H: echo.Hash, In: json.RawMessage(`{"message":"hi"}`)})
	if err != nil || !strings.Contains(string(res.Out), "hi") {
		t.Fatalf("echo: %+v %v", res, err)
	}
	if _, err := r.Invoke(ctx, inv, nekte.InvokeParams{Cap: "echo", In: json.RawMessage(`{}`)}); codeOf(err) != schemas.CodeInvalidParams ||
		dataOf(err)["path"] != "in.message" {
		t.Fatalf("missing message: %v %v", err, dataOf(err))
	}
	if _, err := r.Invoke(ctx, inv, nekte.InvokeParams{Cap: "fail"}); codeOf(err) != schemas.CodeToolFailed {
		t.Fatalf("fail: %v", err)
	}
	v := r.Version()
	if _, err := r.Invoke(ctx, inv, nekte.InvokeParams{Cap: "add_tool", In: json.RawMessage(`{"name":"late"}`)}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, ok := r.Lookup("late"); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the tool added upstream never appeared")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if r.Version() == v {
		t.Fatal("the catalog version did not change")
	}
}

// FuzzInvokeInput checks that any input is either run or refused with INVALID_PARAMS
// naming a path under "in", never repeating a string of the input in the reason.
func FuzzInvokeInput(f *testing.F) {
	// Seeds from real traffic: the golden files' and the recorded peers' frames (internal/fuzzseed).
	for _, b := range fuzzseed.Find(f, "in", fuzzseed.NEKTERequest) {
		f.Add(b)
	}
	for _, b := range fuzzseed.Find(f, "arguments", fuzzseed.MCPRequest) {
		f.Add(b)
	}
	for _, s := range []string{`{"name":"Ada"}`, `{}`, `[1]`, `{"name":"","n":"x","kind":5}`, `{"address":{"zip":"abc"}}`, `null`, `"x"`, `{`} {
		f.Add([]byte(s))
	}
	r := newRegistry(f, capability.Config{}, tool("person", "Stores a person.", personSchema))
	ok := returning(`{"content":[{"type":"text","text":"stored"}]}`)
	f.Fuzz(func(t *testing.T, in []byte) {
		res, err := r.Invoke(context.Background(), ok, nekte.InvokeParams{Cap: "person", In: in})
		if err == nil {
			if res == nil || !json.Valid(res.Out) {
				t.Fatalf("result %+v", res)
			}
			return
		}
		d := dataOf(err)
		path, _ := d["path"].(string)
		if codeOf(err) != schemas.CodeInvalidParams || !strings.HasPrefix(path, "in") || d["reason"] == "" {
			t.Fatalf("error %v %v", err, d)
		}
	})
}
