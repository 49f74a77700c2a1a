package grpcface

import (
	"context"
	"encoding/json"
	"net"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

func TestCredentials(t *testing.T) {
	tests := []struct {
		md             metadata.MD
		bearer, apiKey string
	}{
		{metadata.Pairs("authorization", "Bearer  tok "), "tok", ""},
		{metadata.Pairs("authorization", "bearer tok"), "tok", ""},
		{metadata.Pairs("authorization", "tok"), "tok", ""},
		{metadata.Pairs("x-api-key", "k"), "", "k"},
		{metadata.MD{}, "", ""},
	}
	for _, tt := range tests {
		ctx := metadata.NewIncomingContext(context.Background(), tt.md)
		ctx = peer.NewContext(ctx, &peer.Peer{Addr: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 7), Port: 4000}})
		c := credentials(ctx)
		if c.Bearer != tt.bearer || c.APIKey != tt.apiKey || c.Zone != gateway.ZoneInternal || c.Remote.String() != "10.0.0.7:4000" {
			t.Errorf("%v: %+v, want bearer %q, api key %q, zone internal, remote 10.0.0.7:4000", tt.md, c, tt.bearer, tt.apiKey)
		}
	}
}

func TestToStatus(t *testing.T) {
	err := gateway.NewError(schemas.CodeInvalidParams).With("field", "x")
	st := status.Convert(toStatus(err, "t1"))
	if st.Code() != codes.InvalidArgument || st.Message() != err.Message() {
		t.Fatalf("status %v %q", st.Code(), st.Message())
	}
	if len(st.Details()) != 1 {
		t.Fatalf("details %v", st.Details())
	}
	info, ok := st.Details()[0].(*errdetails.ErrorInfo)
	if !ok || info.GetDomain() != "gatehouse" || info.GetMetadata()["jsonrpc_code"] != "-32602" {
		t.Fatalf("detail %v", st.Details()[0])
	}
	var data map[string]any
	if e := json.Unmarshal([]byte(info.GetMetadata()["data"]), &data); e != nil || data["trace_id"] != "t1" || data["field"] != "x" {
		t.Fatalf("data %s: %v", info.GetMetadata()["data"], e)
	}
}
