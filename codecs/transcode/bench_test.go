package transcode_test

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/gatehouse-dev/gatehouse/codecs/transcode"
	"github.com/gatehouse-dev/gatehouse/codecs/transcode/internal/benchpb"
)

// The benchmarks compare, for the same JSON document and the same wire bytes:
//   - plan: Plan.EncodeJSON / Plan.DecodeWire, appending to a reused buffer;
//   - dynamicpb: protojson.Unmarshal into a dynamic message then proto.Marshal, and
//     proto.Unmarshal into a dynamic message then protojson.Marshal;
//   - generated: the same with the generated benchpb types.
// The baselines reuse their message and output buffer across iterations, which favours them.

func benchSmall() *benchpb.Small {
	return &benchpb.Small{Id: "task-7f3a9c", Count: 42, Active: true, Score: 0.875, Status: benchpb.Status_STATUS_RUNNING}
}

func benchLarge() *benchpb.Large {
	meta, err := structpb.NewStruct(map[string]any{
		"requester": "agent://planner-3", "priority": 2, "tags": []any{"retrieval", "summarize"},
		"trace": map[string]any{"sampled": true, "parent": "00f067aa0ba902b7"},
	})
	if err != nil {
		panic(err)
	}
	l := &benchpb.Large{
		TaskId: "3f8e2c1a-7b4d-4e9f-a1c2-9d8e7f6a5b4c", Agent: "research-agent-v2", Status: benchpb.Status_STATUS_RUNNING,
		CreatedAt: &timestamppb.Timestamp{Seconds: 1735689600, Nanos: 123000000},
		Constraints: &benchpb.Constraints{MaxSteps: 25, TimeoutMs: 120000,
			AllowedTools: []string{"web.search", "fs.read", "memory.recall", "code.exec"}, Budget: 12.5},
		Labels:   map[string]string{"team": "platform", "env": "prod", "region": "eu-west-1", "tier": "gold"},
		Checksum: []byte("0123456789abcdef0123456789abcdef"),
		Metadata: meta,
		Summary:  benchSmall(),
	}
	for i := range 10 {
		l.Steps = append(l.Steps, &benchpb.Step{
			Index: int32(i), Tool: "web.search",
			Input:      fmt.Sprintf(`{"query":"distributed tracing overhead step %d","limit":10}`, i),
			Output:     fmt.Sprintf("Found %d results; top: \"OpenTelemetry sampling strategies\" (score 0.9%d)", 10+i, i),
			Status:     benchpb.Status_STATUS_DONE,
			Notes:      []string{"cached", "trimmed to 2 KB"},
			DurationMs: int64(150 + 37*i),
			Detail:     &benchpb.Small{Id: fmt.Sprintf("s-%d", i), Count: int64(i * 3), Score: float64(i) / 7},
		})
		l.Sizes = append(l.Sizes, int64(1024*(i+1)))
		l.Weights = append(l.Weights, 0.1*float64(i+1))
	}
	return l
}

// benchCase is one message of the benchmarks in every form they need.
type benchCase struct {
	name string
	gen  proto.Message
	doc  []byte // its JSON
	wire []byte // its wire bytes
	plan *transcode.Plan
}

func benchCases(b *testing.B) []benchCase {
	b.Helper()
	var out []benchCase
	for _, c := range []struct {
		name string
		gen  proto.Message
	}{{"small", benchSmall()}, {"large", benchLarge()}} {
		doc, err := protojson.Marshal(c.gen)
		if err != nil {
			b.Fatal(err)
		}
		wire, err := proto.Marshal(c.gen)
		if err != nil {
			b.Fatal(err)
		}
		p, err := transcode.Compile(c.gen.ProtoReflect().Descriptor(), transcode.Options{})
		if err != nil {
			b.Fatal(err)
		}
		// The plan must produce what the baselines produce.
		got, err := p.EncodeJSON(nil, doc)
		if err != nil {
			b.Fatal(err)
		}
		m := c.gen.ProtoReflect().New().Interface()
		if err := proto.Unmarshal(got, m); err != nil || !proto.Equal(m, c.gen) {
			b.Fatalf("%s: EncodeJSON disagrees with protojson: %v", c.name, err)
		}
		js, err := p.DecodeWire(nil, wire)
		if err != nil {
			b.Fatal(err)
		}
		if d := jsonDiff(js, doc); d != "" {
			b.Fatalf("%s: %s", c.name, d)
		}
		out = append(out, benchCase{name: c.name, gen: c.gen, doc: doc, wire: wire, plan: p})
	}
	return out
}

// baseline is a protojson path, run on a dynamic or a generated message.
type baseline func(buf, in []byte, m proto.Message) ([]byte, error)

// runBench runs the three variants of one direction for each benchmark message.
func runBench(b *testing.B, input func(benchCase) []byte, viaPlan func(benchCase, []byte) ([]byte, error), via baseline) {
	for _, c := range benchCases(b) {
		md := c.gen.ProtoReflect().Descriptor()
		in := input(c)
		b.Run(c.name+"/plan", func(b *testing.B) {
			loop(b, c, func(buf []byte) ([]byte, error) { return viaPlan(c, buf) })
		})
		b.Run(c.name+"/dynamicpb", func(b *testing.B) {
			m := dynamicpb.NewMessage(md)
			loop(b, c, func(buf []byte) ([]byte, error) { return via(buf, in, m) })
		})
		b.Run(c.name+"/generated", func(b *testing.B) {
			m := c.gen.ProtoReflect().New().Interface()
			loop(b, c, func(buf []byte) ([]byte, error) { return via(buf, in, m) })
		})
	}
}

func BenchmarkJSONToProto(b *testing.B) {
	runBench(b, func(c benchCase) []byte { return c.doc },
		func(c benchCase, buf []byte) ([]byte, error) { return c.plan.EncodeJSON(buf, c.doc) },
		func(buf, doc []byte, m proto.Message) ([]byte, error) {
			if err := protojson.Unmarshal(doc, m); err != nil {
				return nil, err
			}
			return proto.MarshalOptions{}.MarshalAppend(buf, m)
		})
}

func BenchmarkProtoToJSON(b *testing.B) {
	runBench(b, func(c benchCase) []byte { return c.wire },
		func(c benchCase, buf []byte) ([]byte, error) { return c.plan.DecodeWire(buf, c.wire) },
		func(buf, wire []byte, m proto.Message) ([]byte, error) {
			if err := proto.Unmarshal(wire, m); err != nil {
				return nil, err
			}
			return protojson.MarshalOptions{}.MarshalAppend(buf, m)
		})
}

// loop runs f, which appends its output to a reused buffer. Throughput is counted in
// bytes of JSON for both directions.
func loop(b *testing.B, c benchCase, f func([]byte) ([]byte, error)) {
	b.ReportAllocs()
	b.SetBytes(int64(len(c.doc)))
	buf := make([]byte, 0, 2*len(c.doc))
	for b.Loop() {
		out, err := f(buf[:0])
		if err != nil {
			b.Fatal(err)
		}
		buf = out
	}
}
