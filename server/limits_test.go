package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/gatehouse-dev/gatehouse/demo"
	gatehousev1 "github.com/gatehouse-dev/gatehouse/schemas/gen/gatehouse/v1"
)

// TestMaxCollectedBytesEdge: calc.count 1..5 collects to
// [{"value":"1"},…,{"value":"5"}], 71 bytes; a limit of 71 passes, 70 refuses.
func TestMaxCollectedBytesEdge(t *testing.T) {
	addr, stop, err := demo.StartCalculator("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stop() })
	for _, tt := range []struct {
		limit int
		ok    bool
	}{{71, true}, {70, false}} {
		ts := start(t, fmt.Sprintf(calcConfig, addr)+fmt.Sprintf("jsonrpc: {max_collected_bytes: %d}\n", tt.limit), nil)
		waitFor(t, func() bool {
			_, _, body := ts.post(`{"jsonrpc":"2.0","method":"calc.get_data","id":0}`)
			return !strings.Contains(body, "-32020")
		})
		_, _, body := ts.post(`{"jsonrpc":"2.0","method":"calc.count","params":{"from":1,"to":5},"id":1}`)
		r := decodeOne(t, body)
		if tt.ok && (r.Error != nil || len(r.Result) != 71) {
			t.Fatalf("limit %d: %s", tt.limit, body)
		}
		if !tt.ok && (r.Error == nil || r.Error.Code != -32027 || r.Error.Data["limit"] != "max_collected_bytes") {
			t.Fatalf("limit %d: %s", tt.limit, body)
		}
	}
}

// TestInternalMaxRecvBytesEdge: the internal listener refuses a message past max_recv_bytes.
func TestInternalMaxRecvBytesEdge(t *testing.T) {
	ts := start(t, strings.Replace(baseConfig, `admin: {addr: "127.0.0.1:0"}`,
		`admin: {addr: "127.0.0.1:0"}`+"\n  internal: {addr: \"127.0.0.1:0\", max_recv_bytes: 1024}", 1), nil)
	conn, err := grpc.NewClient(ts.InternalAddr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	client := gatehousev1.NewGatewayServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// InvokeRequest{method: "update" (field 1, 8 bytes), params (field 2)}: the message is
	// 2+6 + 3+len(params) bytes for params of 128…16383 bytes.
	params := func(size int) []byte { return []byte(`["` + strings.Repeat("a", size-4) + `"]`) }
	if _, err := client.Invoke(ctx, &gatehousev1.InvokeRequest{Method: "update", Params: params(1024 - 11)}); err != nil {
		t.Fatalf("a message of exactly max_recv_bytes: %v", err)
	}
	if _, err := client.Invoke(ctx, &gatehousev1.InvokeRequest{Method: "update", Params: params(1024 - 10)}); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("one byte over: %v", err)
	}
}

// TestMCPFaceBodyLimit: /mcp bodies are bounded by jsonrpc.max_body_bytes too.
func TestMCPFaceBodyLimit(t *testing.T) {
	ts := start(t, baseConfig+"mcp_face: {}\njsonrpc: {max_body_bytes: 256}\n", nil)
	body := `{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"` +
		strings.Repeat("x", 300) + `","version":"1"}},"id":1}`
	req, _ := http.NewRequest(http.MethodPost, ts.base+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode == http.StatusOK || resp.Header.Get("Mcp-Session-Id") != "" {
		t.Fatalf("an oversized body was served: %d", resp.StatusCode)
	}
}
