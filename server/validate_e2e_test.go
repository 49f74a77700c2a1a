package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	toolv1 "github.com/gatehouse-dev/gatehouse/schemas/gen/tool/v1"
)

// validationConfig bridges the MCP fixture with its validation tools (FIXTURE_VALIDATE) and
// its request log (FIXTURE_HOP: hop_log lists every request the server received), with the
// internal listener (tool.v1), the MCP face and NEKTE on, and tools callable as methods
// from the boundary.
func validationConfig(t *testing.T) string {
	t.Helper()
	fixture := buildMCPFixture(t)
	yaml := strings.Replace(baseConfig, "  admin: {addr: \"127.0.0.1:0\"}\n",
		"  admin: {addr: \"127.0.0.1:0\"}\n  internal: {addr: \"127.0.0.1:0\"}\n", 1) + "mcp_face: {}\nnekte: {}\n"
	section := fmt.Sprintf(`routing:
  demo: {}
  mcp:
    direct_zones: [external, internal, operator, local]
    servers:
      - name: fx
        stdio: {command: %q, env: {FIXTURE_NAME: fx, FIXTURE_HOP: "1", FIXTURE_VALIDATE: "1"}}
`, fixture)
	return strings.Replace(yaml, "routing:\n  demo: {}\n", section, 1)
}

// upstreamToolCalls returns how many tools/call requests the fixture received, hop_log's own
// call included.
func upstreamToolCalls(t *testing.T, ts *testServer) int {
	t.Helper()
	r := ts.rpc(t, `{"jsonrpc":"2.0","method":"mcp.hop_log","params":{},"id":"log"}`)
	var res struct {
		Content []struct{ Text string } `json:"content"`
	}
	if r.Error != nil || json.Unmarshal(r.Result, &res) != nil || len(res.Content) == 0 {
		t.Fatalf("hop_log: %+v %s", r.Error, r.Result)
	}
	n := 0
	for line := range strings.SplitSeq(res.Content[0].Text, "\n") {
		if strings.HasPrefix(line, "tools/call") {
			n++
		}
	}
	return n
}

// TestInputValidationEveryPath is the proof of "validation everywhere": each bad input is
// refused with -32602 naming the failing path and keyword on every path into an MCP tool —
// mcp.<tool> on /rpc, tools/call on /mcp, tool.v1 ToolInvocation over gRPC and
// nekte.invoke — and the upstream, which logs every request it receives, sees none of them;
// a valid input reaches it on each path. Tools whose schema cannot be used are withheld
// from every listing, calling them fails with CAPABILITY_NOT_FOUND naming the reason, and
// the reason is logged.
func TestInputValidationEveryPath(t *testing.T) {
	ts := start(t, validationConfig(t), nil)
	ts.waitReadyWithin(30 * time.Second)
	waitFor(t, func() bool { return capHash(t, ts, "strict") != "" })

	bad := []struct {
		name, in, path, keyword, nektePath string
	}{
		{"missing member", `{}`, "/n", "required", "in.n"},
		{"quoted integer", `{"n":"7"}`, "/n", "type", "in.n"},
		{"past the maximum", `{"n":11}`, "/n", "maximum", "in.n"},
		{"not an integer", `{"n":1.5}`, "/n", "type", "in.n"},
		{"extra member", `{"n":1,"zzz":true}`, "/zzz", "additionalProperties", "in.zzz"},
		{"deep item", `{"n":1,"items":["a",2]}`, "/items/1", "type", "in.items[1]"},
	}
	conn, err := grpc.NewClient(ts.InternalAddr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	tools := toolv1.NewToolServiceClient(conn)
	cli := mcpFaceClient(t, ts)

	paths := []struct {
		name string
		call func(in string) (code int, data map[string]any)
	}{
		{"rpc mcp.<tool>", func(in string) (int, map[string]any) {
			return errorOf(ts.rpc(t, `{"jsonrpc":"2.0","method":"mcp.strict","params":`+in+`,"id":1}`))
		}},
		{"nekte.invoke", func(in string) (int, map[string]any) {
			return errorOf(ts.rpc(t, `{"jsonrpc":"2.0","method":"nekte.invoke","params":{"cap":"strict","in":`+in+`},"id":2}`))
		}},
		{"grpc tool.v1", func(in string) (int, map[string]any) { return toolInvocation(t, tools, in) }},
		{"mcp tools/call", func(in string) (int, map[string]any) { return mcpToolCall(t, cli, in) }},
	}
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			before := upstreamToolCalls(t, ts)
			for _, b := range bad {
				code, data := p.call(b.in)
				if code != -32602 {
					t.Fatalf("%s: code %d (data %v), want -32602", b.name, code, data)
				}
				if data == nil {
					continue // the MCP client library keeps no error data
				}
				wantPath := b.path
				if p.name == "nekte.invoke" {
					wantPath = b.nektePath
				}
				if data["path"] != wantPath || data["keyword"] != b.keyword {
					t.Fatalf("%s: data %v, want path %q keyword %q", b.name, data, wantPath, b.keyword)
				}
				if errs, _ := data["errors"].([]any); len(errs) == 0 {
					t.Fatalf("%s: data %v has no errors list", b.name, data)
				}
			}
			if got := upstreamToolCalls(t, ts) - before; got != 1 { // hop_log's own call
				t.Fatalf("the upstream received %d tool calls for refused inputs", got-1)
			}
			if code, data := p.call(`{"n":3}`); code != 0 {
				t.Fatalf("valid input: code %d data %v", code, data)
			}
			if got := upstreamToolCalls(t, ts) - before; got != 3 { // log, valid call, log
				t.Fatalf("the upstream received %d tool calls, want the valid one and two logs", got)
			}
		})
	}

	t.Run("withheld", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		list, err := cli.ListTools(ctx, mcp.ListToolsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var listed []string
		for _, tool := range list.Tools {
			listed = append(listed, tool.Name)
		}
		if !slices.Contains(listed, "strict") {
			t.Fatalf("tools/list: %v, want strict among them", listed)
		}
		for _, name := range []string{"remote_ref", "not_object"} {
			if capHash(t, ts, name) != "" {
				t.Errorf("nekte.discover lists %s", name)
			}
			if slices.Contains(listed, name) {
				t.Errorf("tools/list lists %s: %v", name, listed)
			}
			code, data := errorOf(ts.rpc(t, `{"jsonrpc":"2.0","method":"mcp.`+name+`","params":{},"id":3}`))
			if code != -32002 || !strings.HasPrefix(fmt.Sprint(data["reason"]), "withheld: ") {
				t.Errorf("mcp.%s: code %d data %v, want CAPABILITY_NOT_FOUND withheld", name, code, data)
			}
		}
		if got, ok := ts.scrape()[`gatehouse_mcp_tools_withheld{upstream="fx"}`]; !ok || got != 2 {
			t.Errorf("gatehouse_mcp_tools_withheld{upstream=\"fx\"} = %v (present %v), want 2", got, ok)
		}
		logs := ts.logs.String()
		for _, want := range []string{"remote_ref", "refers to a document elsewhere", "not_object", `"type\" is not \"object\"`} {
			if !strings.Contains(logs, "MCP tool withheld") || !strings.Contains(logs, want) {
				t.Errorf("the log does not say %q", want)
			}
		}
	})
}

// errorOf returns a response's error code and data, 0 for a result.
func errorOf(r response) (int, map[string]any) {
	if r.Error == nil {
		return 0, nil
	}
	return r.Error.Code, r.Error.Data
}

// toolInvocation calls strict through tool.v1 and returns the JSON-RPC code and data of
// its refusal (from the status's ErrorInfo), 0 on success.
func toolInvocation(t *testing.T, c toolv1.ToolServiceClient, in string) (int, map[string]any) {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(in), &m); err != nil {
		t.Fatal(err)
	}
	params, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = c.ToolInvocation(ctx, &toolv1.ToolInvocationRequest{ToolName: "strict", InputParams: params})
	if err == nil {
		return 0, nil
	}
	st := status.Convert(err)
	if st.Code() != codes.InvalidArgument || len(st.Details()) == 0 {
		t.Fatalf("tool.v1: %v; want InvalidArgument with details", err)
	}
	info, _ := st.Details()[0].(*errdetails.ErrorInfo)
	var data map[string]any
	if info == nil || json.Unmarshal([]byte(info.GetMetadata()["data"]), &data) != nil {
		t.Fatalf("tool.v1: details %v", st.Details())
	}
	var code int
	_, _ = fmt.Sscan(info.GetMetadata()["jsonrpc_code"], &code)
	return code, data
}

// mcpToolCall calls strict through the MCP face; the client library reports the error's
// code only.
func mcpToolCall(t *testing.T, cli interface {
	CallTool(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error)
}, in string) (int, map[string]any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = "strict"
	req.Params.Arguments = json.RawMessage(in)
	res, err := cli.CallTool(ctx, req)
	switch {
	case errors.Is(err, mcp.ErrInvalidParams):
		return -32602, nil
	case err != nil:
		t.Fatalf("tools/call: %v", err)
	case res.IsError:
		t.Fatalf("tools/call: %+v", res.Content)
	}
	return 0, nil
}
