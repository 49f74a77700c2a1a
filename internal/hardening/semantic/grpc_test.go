package semantic

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/gatehouse-dev/gatehouse/internal/hardening"
	gatehousev1 "github.com/gatehouse-dev/gatehouse/schemas/gen/gatehouse/v1"
)

// grpcCall is one generated call of GatewayService.Invoke on the internal listener: the
// request, the metadata it is sent with (grpc-timeout included, which a gRPC client
// would not let a caller write) and the status it must end with.
type grpcCall struct {
	req  *gatehousev1.InvokeRequest
	md   map[string]string
	want codes.Code
}

// TestGRPC sends hostile Invoke calls to the gRPC face over a bare HTTP/2 client:
// injected and non-UTF-8 method names, hostile params, malformed, tiny and huge
// grpc-timeout values, a bad credential, and messages at server.internal.max_recv_bytes ± 1.
func TestGRPC(t *testing.T) {
	e := newEnv(t)
	g := e.gen
	h2 := &http.Transport{Protocols: new(http.Protocols)}
	h2.Protocols.SetUnencryptedHTTP2(true) // h2c, as gRPC without TLS
	defer h2.CloseIdleConnections()
	hc := &http.Client{Transport: h2, Timeout: 5 * time.Second}
	ok := func(md map[string]string) grpcCall {
		return grpcCall{req: &gatehousev1.InvokeRequest{Method: "calc.subtract", Params: []byte(`{"minuend":5,"subtrahend":3}`)}, md: md, want: codes.OK}
	}
	sized := func(size int) *gatehousev1.InvokeRequest { // an update of exactly size bytes
		r := &gatehousev1.InvokeRequest{Method: "calc.update"}
		for n := 0; ; n++ {
			r.Params = []byte(`{"values":[1]` + strings.Repeat(" ", n) + `}`)
			if proto.Size(r) == size {
				return r
			}
			if proto.Size(r) > size {
				t.Fatalf("no update of %d bytes", size)
			}
		}
	}
	classes := []struct {
		name string
		make func() grpcCall
	}{
		{"valid", func() grpcCall { return ok(nil) }},
		{"method/injection", func() grpcCall {
			return grpcCall{req: &gatehousev1.InvokeRequest{Method: g.Injected("calc.subtract"), Params: []byte(`{}`)}, want: codes.Unimplemented}
		}},
		{"method/not-utf8", func() grpcCall {
			return grpcCall{req: &gatehousev1.InvokeRequest{Method: "calc.subtract" + g.Overlong()}, want: codes.Internal}
		}},
		{"params/unicode-strings", func() grpcCall {
			return grpcCall{req: &gatehousev1.InvokeRequest{Method: "calc.sum", Params: []byte(`{"values":["x` + g.Content(maxString-1) + `"]}`)}, want: codes.InvalidArgument}
		}},
		{"params/not-utf8", func() grpcCall {
			return grpcCall{req: &gatehousev1.InvokeRequest{Method: "calc.sum", Params: []byte(`{"values":["` + g.Overlong() + `"]}`)}, want: codes.InvalidArgument}
		}},
		{"params/deadline-past", func() grpcCall {
			c := ok(nil)
			c.req.Params = []byte(`{"minuend":5,"subtrahend":3,"deadline_ms":` + g.Deadline(DeadlinePast, time.Now().UnixMilli()) + `}`)
			c.want = codes.DeadlineExceeded
			return c
		}},
		{"grpc-timeout/malformed", func() grpcCall {
			c := ok(map[string]string{"grpc-timeout": pick(g, []string{"abc", "-1S", "1", "123456789S", "1X", "S", "1.5S", "0x1S", "+1S"})})
			c.want = codes.Internal // grpc-go refuses the stream before the gateway sees it
			return c
		}},
		{"grpc-timeout/too-short", func() grpcCall {
			c := ok(map[string]string{"grpc-timeout": pick(g, []string{"0n", "1n", "1u", "1m", "0S", "10m", "49m"})})
			c.want = codes.DeadlineExceeded
			return c
		}},
		{"grpc-timeout/huge", func() grpcCall {
			return ok(map[string]string{"grpc-timeout": pick(g, []string{"99999999H", "99999999M", "99999999S", "1H"})})
		}},
		{"metadata/bad-credential", func() grpcCall {
			c := ok(map[string]string{"authorization": "Bearer " + g.HeaderPad(24)})
			c.want = codes.Unauthenticated
			return c
		}},
		{"metadata/hostile-values", func() grpcCall {
			return ok(map[string]string{"x-request-id": g.HeaderPad(64), "x-jsonrpc-id": g.HeaderInjected("1"), "traceparent": g.HeaderPad(55), "x-deadline-ms": "-1"})
		}},
		{"message/at-limit", func() grpcCall { return grpcCall{req: sized(maxRecv), want: codes.OK} }},
		{"message/over-limit", func() grpcCall { return grpcCall{req: sized(maxRecv + 1), want: codes.ResourceExhausted} }},
	}
	n := hardening.Iterations(t, 400)
	for i := range n {
		cl := classes[i%len(classes)]
		c := cl.make()
		before := e.hits.Load()
		got, msg := e.grpcInvoke(hc, c)
		hits := e.hits.Load() - before
		// A deadline that ends while the answer is being written resets the stream.
		reset := got == codes.Canceled && c.want == codes.DeadlineExceeded
		if got != c.want && !reset {
			t.Errorf("%s: status %v %q, want %v (method %q, metadata %v)", cl.name, got, msg, c.want, c.req.Method, c.md)
		}
		if want := int64(0); c.want != codes.OK && hits != want || c.want == codes.OK && got == codes.OK && hits != 1 {
			t.Errorf("%s: %v with %d backend hits", cl.name, got, hits)
		}
		e.count("grpc/"+cl.name, got.String())
		if e.tooMany() {
			break
		}
	}
	e.finish()
}

// grpcInvoke makes one unary Invoke by hand and returns its status and message, after
// checking headers, trailers and message for leaks.
func (e *env) grpcInvoke(hc *http.Client, c grpcCall) (codes.Code, string) {
	e.t.Helper()
	msg, err := proto.Marshal(c.req)
	if err != nil && !strings.Contains(err.Error(), "UTF-8") {
		e.t.Fatal(err)
	}
	if err != nil { // a string that is not UTF-8: written by hand, as a hostile client would
		msg = protowire(c.req)
	}
	frame := make([]byte, 5+len(msg))
	binary.BigEndian.PutUint32(frame[1:], uint32(len(msg)))
	copy(frame[5:], msg)
	req, err := http.NewRequest(http.MethodPost, "http://"+e.g.Internal+"/gatehouse.v1.GatewayService/Invoke", bytes.NewReader(frame))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/grpc")
	req.Header.Set("TE", "trailers")
	for k, v := range c.md {
		req.Header.Set(k, v)
	}
	resp, err := hc.Do(req)
	if err != nil && strings.Contains(err.Error(), "CANCEL; received from peer") {
		return codes.Canceled, "" // the server reset the stream as its deadline passed
	}
	if err != nil {
		e.t.Errorf("Invoke %q %v: %v", c.req.Method, c.md, err)
		return codes.Unknown, ""
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	e.leaks("gRPC headers", fmt.Sprint(resp.Header, resp.Trailer))
	e.leaks("gRPC body", string(body))
	st := resp.Trailer.Get("Grpc-Status")
	m := resp.Trailer.Get("Grpc-Message")
	if st == "" { // trailers-only
		st, m = resp.Header.Get("Grpc-Status"), resp.Header.Get("Grpc-Message")
	}
	var code uint32
	if _, err := fmt.Sscan(st, &code); err != nil {
		e.t.Errorf("no grpc-status: HTTP %d %v %v", resp.StatusCode, resp.Header, resp.Trailer)
		return codes.Unknown, ""
	}
	return codes.Code(code), m
}

// protowire encodes an InvokeRequest field by field, whatever its strings hold.
func protowire(r *gatehousev1.InvokeRequest) []byte {
	var b []byte
	b = append(b, 0x0a)
	b = binary.AppendUvarint(b, uint64(len(r.Method)))
	b = append(b, r.Method...)
	if len(r.Params) > 0 {
		b = append(b, 0x12)
		b = binary.AppendUvarint(b, uint64(len(r.Params)))
		b = append(b, r.Params...)
	}
	return b
}
