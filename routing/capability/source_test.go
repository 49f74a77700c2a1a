package capability_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/demo"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing"
	"github.com/gatehouse-dev/gatehouse/routing/capability"
	"github.com/gatehouse-dev/gatehouse/routing/grpcbackend"
	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend"
)

const calc = "calculator.v1.CalculatorService"

func TestGRPCSource(t *testing.T) {
	addr, stop, err := demo.StartCalculator("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stop() })
	b, err := grpcbackend.New(grpcbackend.Config{
		Name: "calc", Address: addr,
		Descriptors: grpcbackend.DescriptorsConfig{Protos: &grpcbackend.ProtosConfig{
			ImportPaths: []string{"../../schemas/proto"}, Files: []string{"calculator/v1/calculator.proto"}}},
		Methods:  map[string]string{"subtract": calc + "/Subtract"},
		Services: []grpcbackend.ServiceConfig{{Service: calc, Prefix: "calc."}},
		Unwrap:   map[string]string{"subtract": "result"},
	}, slog.New(slog.DiscardHandler), time.Now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	r, err := capability.New(capability.Config{Categories: map[string]string{"grpc:calc": "math"}}, capability.SourcesOf([]gateway.Target{b})...)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-b.Loaded():
	case <-time.After(10 * time.Second):
		t.Fatal("descriptors did not load")
	}
	var got []string
	for _, c := range r.Capabilities() {
		got = append(got, c.ID)
	}
	// sumStream (client streaming) and accumulate (bidirectional) are left out.
	if s := strings.Join(got, " "); s != "calc.count calc.getData calc.notifyHello calc.notifySum calc.subtract calc.sum calc.update subtract" {
		t.Fatalf("capabilities %s", s)
	}
	sub, _ := r.Lookup("subtract")
	if sub.Category != "math" || sub.Kind != capability.KindGRPCMethod || sub.Source != "calc" || sub.Method != "subtract" ||
		sub.Description != "Subtract returns minuend - subtrahend: subtract [42, 23] gives 19." ||
		string(sub.Output) != `{"description":"minuend - subtrahend.","type":"number"}` {
		t.Fatalf("subtract = %+v", sub)
	}
	count, _ := r.Lookup("calc.count")
	if !count.Streaming || !strings.HasPrefix(string(count.Output), `{"type":"array","items":{"description":"CountResponse is one integer of a count."`) {
		t.Fatalf("count = %+v", count)
	}
	inv := targetInvoker{b}
	res, err := r.Invoke(ctxTimeout(t, 10*time.Second), inv, nekte.InvokeParams{Cap: "subtract", H: sub.Hash,
		In: json.RawMessage(`{"minuend":42,"subtrahend":23}`), Budget: &nekte.Budget{DetailLevel: nekte.Full}})
	if err != nil || string(res.Out) != "19" {
		t.Fatalf("subtract: %+v %v", res, err)
	}
	res, err = r.Invoke(ctxTimeout(t, 10*time.Second), inv, nekte.InvokeParams{Cap: "calc.count", In: json.RawMessage(`{"from":1,"to":3}`),
		Budget: &nekte.Budget{DetailLevel: nekte.Full}})
	if err != nil || string(res.Out) != `[{"value":"1"},{"value":"2"},{"value":"3"}]` {
		t.Fatalf("count: %+v %v", res, err)
	}
	if _, err := r.Invoke(context.Background(), inv, nekte.InvokeParams{Cap: "subtract", In: json.RawMessage(`{"minuend":"x"}`)}); dataOf(err)["path"] != "in.minuend" {
		t.Fatalf("invalid input: %v %v", err, dataOf(err))
	}
}

func TestMCPToolsConversion(t *testing.T) {
	entries := []mcpbackend.Entry{
		{Name: "echo", Upstream: "u", Available: true,
			Definition: json.RawMessage(`{"name":"echo","description":"Echoes.","inputSchema":{"type":"object"},"outputSchema":{"type":"object","properties":{"m":{"type":"string"}}}}`)},
		{Name: "titled", Upstream: "u", Available: true, Definition: json.RawMessage(`{"name":"titled","title":"A title","inputSchema":{"type":"object"}}`)},
		{Name: "annotated", Upstream: "u", Available: true,
			Definition: json.RawMessage(`{"name":"annotated","annotations":{"title":"From annotations","readOnlyHint":true,"idempotentHint":true,"openWorldHint":false}}`)},
		{Name: "open", Upstream: "u", Available: true, Definition: json.RawMessage(`{"name":"open","annotations":{"readOnlyHint":true,"idempotentHint":true}}`)},
		{Name: "down", Upstream: "u", Available: false, Definition: json.RawMessage(`{"name":"down"}`)},
		{Name: "broken", Upstream: "u", Available: true, Definition: json.RawMessage(`[]`)},
	}
	caps := capability.MCPTools(entries, "tools.")
	type row struct {
		id, desc, method string
		det              bool
	}
	var got []row
	for _, c := range caps {
		got = append(got, row{c.ID, c.Description, c.Method, c.Deterministic})
		if c.Kind != capability.KindMCPTool || c.Source != "u" {
			t.Fatalf("%+v", c)
		}
	}
	want := []row{{"echo", "Echoes.", "tools.echo", false}, {"titled", "A title", "tools.titled", false},
		{"annotated", "From annotations", "tools.annotated", true}, {"open", "", "tools.open", false}}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("got %+v, want %+v", got[i], want[i])
		}
	}
	if string(caps[0].Output) != `{"type":"object","properties":{"m":{"type":"string"}}}` {
		t.Fatalf("output %s", caps[0].Output)
	}
}

// TestDemoExamples runs each demo capability on its example input and checks that the
// result is its example output and fits its output schema.
func TestDemoExamples(t *testing.T) {
	spec := demo.NewSpec(routing.DemoConfig{})
	r, err := capability.New(capability.Config{}, capability.SourcesOf([]gateway.Target{spec})...)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range r.Capabilities() {
		t.Run(c.ID, func(t *testing.T) {
			if c.Description == "" || len(c.Examples) != 1 {
				t.Fatalf("%+v", c)
			}
			ex := c.Examples[0]
			res, err := r.Invoke(context.Background(), targetInvoker{spec}, nekte.InvokeParams{Cap: c.ID, H: c.Hash, In: ex.In,
				Budget: &nekte.Budget{DetailLevel: nekte.Full}})
			if err != nil || string(res.Out) != string(ex.Out) {
				t.Fatalf("got %+v, %v; want %s", res, err, ex.Out)
			}
			c2 := jsonschema.NewCompiler()
			if err := c2.AddResource("urn:out", decodeJSON(t, c.Output)); err != nil {
				t.Fatal(err)
			}
			sch, err := c2.Compile("urn:out")
			if err != nil {
				t.Fatal(err)
			}
			if err := sch.Validate(decodeJSON(t, res.Out)); err != nil {
				t.Fatalf("the result does not fit the output schema: %v", err)
			}
		})
	}
}
