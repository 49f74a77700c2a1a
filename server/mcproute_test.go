package server

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend"
)

// serveSampler runs a gRPC server with one method, sampler.v1.Sampler/CreateMessage
// taking and returning a google.protobuf.Struct: it answers a sampling request with a
// result quoting the request's first message. It returns its address and a .proto
// directory describing it.
func serveSampler(t *testing.T) (addr, protoDir string) {
	t.Helper()
	protoDir = t.TempDir()
	writeFile(t, protoDir, "sampler.proto", `syntax = "proto3";
package sampler.v1;
import "google/protobuf/struct.proto";
service Sampler { rpc CreateMessage(google.protobuf.Struct) returns (google.protobuf.Struct); }
`)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(grpc.UnknownServiceHandler(func(_ any, stream grpc.ServerStream) error {
		in := &structpb.Struct{}
		if err := stream.RecvMsg(in); err != nil {
			return err
		}
		text := "?"
		if msgs := in.GetFields()["messages"].GetListValue().GetValues(); len(msgs) > 0 {
			text = msgs[0].GetStructValue().GetFields()["content"].GetStructValue().GetFields()["text"].GetStringValue()
		}
		out, err := structpb.NewStruct(map[string]any{"role": "assistant", "model": "grpc-model",
			"content": map[string]any{"type": "text", "text": "grpc saw " + text}})
		if err != nil {
			return err
		}
		return stream.SendMsg(out)
	}))
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(gs.Stop)
	return ln.Addr().String(), protoDir
}

// TestMCPRouteBackends bridges the fixtures with both policies "route": sampling goes to
// a routed method of a gRPC backend, elicitation to an HTTP endpoint.
func TestMCPRouteBackends(t *testing.T) {
	addr, protoDir := serveSampler(t)
	elicit := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p struct{ Message string }
		_ = json.NewDecoder(r.Body).Decode(&p)
		_, _ = fmt.Fprintf(w, `{"action":"accept","content":{"username":%q,"email":"e@example.com"}}`, r.Header.Get(mcpbackend.HeaderUpstream)+": "+p.Message)
	}))
	t.Cleanup(elicit.Close)
	ts := start(t, strings.Replace(baseConfig, "routing:\n  demo: {}\n", fmt.Sprintf(`routing:
  grpc:
    - name: sampler
      address: %q
      descriptors: {protos: {import_paths: [%q], files: [sampler.proto]}}
      methods: {llm.sample: sampler.v1.Sampler/CreateMessage}
  mcp:
    direct_zones: [external]
    sampling_backend: {method: llm.sample}
    elicitation_backend: {http: {url: %q, timeout: 5s}}
    servers:
      - name: demo
        http: {url: %q}
        sampling: route
        elicitation: route
`, addr, protoDir, elicit.URL, serveDemoMCP(t)), 1), nil)
	call := func(method, params string) response {
		_, _, body := ts.post(fmt.Sprintf(`{"jsonrpc":"2.0","method":%q,"params":%s,"id":1}`, method, params))
		return decodeOne(t, body)
	}
	waitFor(t, func() bool {
		return call("mcp.test_simple_text", `{}`).Error == nil && call("llm.sample", `{}`).Error == nil
	})
	tests := []struct {
		method, params, want string
	}{
		{"mcp.test_sampling", `{"prompt":"the sea"}`, "LLM response: grpc saw the sea"},
		{"mcp.test_elicitation", `{"message":"name?"}`, `demo: name?`},
	}
	for _, tt := range tests {
		r := call(tt.method, tt.params)
		if r.Error != nil || !strings.Contains(string(r.Result), tt.want) {
			t.Errorf("%s: %s %+v; want %q in it", tt.method, r.Result, r.Error, tt.want)
		}
	}
}

func TestMCPRouteBackendRequired(t *testing.T) {
	_, err := Parse("gatehouse.yaml", []byte(strings.Replace(baseConfig, "routing:\n  demo: {}\n", `routing:
  mcp:
    servers:
      - name: up1
        stdio: {command: server}
        elicitation: route
`, 1)))
	if err == nil || !strings.Contains(err.Error(), `mcp upstream "up1": elicitation is route but elicitation_backend is not set`) {
		t.Fatalf("got %v", err)
	}
}
