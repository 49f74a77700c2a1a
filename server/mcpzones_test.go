package server

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/schemas/gen/gatehouse/v1"
)

const simpleText = `{"jsonrpc":"2.0","method":"mcp.test_simple_text","params":{},"id":1}`

// checkZoneRefusal checks the error a direct call from zone gets when zone may not make one.
func checkZoneRefusal(t *testing.T, face string, r response, zone string) {
	t.Helper()
	want := "MCP tools are reachable from the " + zone + " zone only as capabilities (nekte.invoke)"
	if r.Error == nil || r.Error.Code != 4000 || r.Error.Message != want ||
		r.Error.Data["zone"] != zone || r.Error.Data["method"] != "mcp.test_simple_text" || r.Error.Data["trace_id"] == nil {
		t.Fatalf("%s: %+v %s; want 4000 %q with data {zone: %s, method}", face, r.Error, r.Result, want, zone)
	}
}

// TestMCPDirectZones calls a bridged tool directly from each face, under the default direct
// zones (external refused, internal and MCP allowed) and with external listed.
func TestMCPDirectZones(t *testing.T) {
	withInternal := strings.Replace(baseConfig, "  admin: {addr: \"127.0.0.1:0\"}\n",
		"  admin: {addr: \"127.0.0.1:0\"}\n  internal: {addr: \"127.0.0.1:0\"}\n", 1) + "mcp_face: {}\n"
	tests := []struct {
		name           string
		mcpKeys        string
		externalOK     bool
		internalOK     bool
		externalErrors bool // the boundary faces get the typed refusal
	}{
		{"default", "", false, true, true},
		{"external listed", externalMCP, true, false, false},
		{"every zone", "    direct_zones: [external, internal, operator, local]\n", true, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := start(t, withDemoMCP(t, withInternal, tt.mcpKeys), nil)

			_, _, body := ts.post(simpleText)
			checkDirect(t, "http", decodeOne(t, body), tt.externalOK, "external")

			c := dialWS(t, ts, nil)
			wsSend(t, c, simpleText)
			checkDirect(t, "websocket", decodeOne(t, wsRead(t, c, 10*time.Second)), tt.externalOK, "external")

			checkDirect(t, "grpc", invokeInternal(t, ts, "mcp.test_simple_text"), tt.internalOK, "internal")

			callOverMCPFace(t, ts) // always allowed
		})
	}
}

func checkDirect(t *testing.T, face string, r response, allowed bool, zone string) {
	t.Helper()
	if !allowed {
		checkZoneRefusal(t, face, r, zone)
		return
	}
	if r.Error != nil || !strings.Contains(string(r.Result), "This is a simple text response for testing.") {
		t.Fatalf("%s: %+v %s; want the tool's result", face, r.Error, r.Result)
	}
}

// invokeInternal calls method through gatehouse.v1.GatewayService on the internal
// listener and returns the outcome as a JSON-RPC response (the error from the status's
// ErrorInfo).
func invokeInternal(t *testing.T, ts *testServer, method string) response {
	t.Helper()
	conn, err := grpc.NewClient(ts.InternalAddr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := gatehousev1.NewGatewayServiceClient(conn).Invoke(ctx, &gatehousev1.InvokeRequest{Method: method, Params: []byte(`{}`)})
	if err == nil {
		return response{Result: r.GetResult()}
	}
	st := status.Convert(err)
	if st.Code() != codes.PermissionDenied || len(st.Details()) == 0 {
		t.Fatalf("grpc: %v; want PermissionDenied with details", err)
	}
	info, _ := st.Details()[0].(*errdetails.ErrorInfo)
	if info == nil || info.GetMetadata()["jsonrpc_code"] != "4000" {
		t.Fatalf("grpc: details %v", st.Details())
	}
	var data map[string]any
	if err := json.Unmarshal([]byte(info.GetMetadata()["data"]), &data); err != nil {
		t.Fatalf("grpc: error data %q: %v", info.GetMetadata()["data"], err)
	}
	return response{Error: &rpcError{Code: 4000, Message: st.Message(), Data: data}}
}

// callOverMCPFace calls the tool through the MCP face, as an MCP client on the boundary.
func callOverMCPFace(t *testing.T, ts *testServer) {
	t.Helper()
	cli := mcpFaceClient(t, ts)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var err error
	req := mcp.CallToolRequest{}
	req.Params.Name = "test_simple_text"
	var res *mcp.CallToolResult
	waitFor(t, func() bool { // the face publishes the catalog once the upstream's has loaded
		res, err = cli.CallTool(ctx, req)
		return err == nil && !res.IsError
	})
	if text, ok := res.Content[0].(mcp.TextContent); !ok || text.Text != "This is a simple text response for testing." {
		t.Fatalf("mcp face: %+v", res.Content)
	}
}
