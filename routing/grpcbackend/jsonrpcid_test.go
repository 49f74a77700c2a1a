package grpcbackend_test

import (
	"encoding/json"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/grpcbackend"
)

// TestJSONRPCIDOutsideASCII: an id whose JSON text holds characters outside printable
// ASCII (a raw BOM, bidi override, emoji, DEL) reaches the backend as x-jsonrpc-id written
// with \u escapes — the same JSON string — instead of failing the call: gRPC refuses such
// bytes in a metadata value.
func TestJSONRPCIDOutsideASCII(t *testing.T) {
	seen := make(chan metadata.MD, 8)
	addr := serveScripted(t, func(_ any, stream grpc.ServerStream) error {
		md, _ := metadata.FromIncomingContext(stream.Context())
		seen <- md
		_ = stream.RecvMsg(&emptypb.Empty{})
		return stream.SendMsg(&emptypb.Empty{})
	})
	b := newBackend(t, grpcbackend.Config{Name: "ids", Address: addr, Descriptors: protosSource(),
		Methods: map[string]string{"update": calc + "/Update"}})
	waitLoaded(t, b)
	for _, tt := range []struct{ raw, sent string }{
		{`"plain"`, `"plain"`},
		{"\"\ufeffa\u202eb\"", `"\ufeffa\u202eb"`},
		{"\"\U0001f600\x7f\"", `"\ud83d\ude00\u007f"`},
		{"\"\xc0\xaf\"", `"\ufffd\ufffd"`},
		{`"\ud800"`, `"\ud800"`},
	} {
		_, err := b.Invoke(t.Context(), &gateway.Call{Method: "update", Params: []byte(`{}`), ID: jsonrpc.RawID([]byte(tt.raw)),
			TraceID: "4bf92f3577b34da6a3ce929d0e0e4736"})
		if err != nil {
			t.Fatalf("id %q: %v", tt.raw, err)
		}
		got := (<-seen).Get("x-jsonrpc-id")
		if len(got) != 1 || got[0] != tt.sent {
			t.Fatalf("id %q: x-jsonrpc-id %q, want %q", tt.raw, got, tt.sent)
		}
		var a, b string
		if json.Unmarshal([]byte(tt.raw), &a) != nil || json.Unmarshal([]byte(got[0]), &b) != nil || a != b {
			t.Fatalf("id %q: %q is not the same JSON string", tt.raw, got[0])
		}
	}
}
