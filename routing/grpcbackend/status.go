package grpcbackend

import (
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// statusError maps a failed RPC to the gateway's error through the one table. A status the
// backend sent (it answered with headers or trailers) is a wire error with its message and
// google.rpc.Status details in error.data; a status the gRPC client made (no connection, a
// deadline reached locally) is the gateway's own error. sent says the request reached a
// connection to the backend: a DEADLINE_EXCEEDED is then the backend's (layer backend,
// the backend ran out of the deadline it was sent), otherwise the gateway's (layer
// gateway: the deadline passed while dialling or waiting for a connection or a stream).
func (b *Backend) statusError(err error, header, trailer metadata.MD, sent bool) *gateway.Error {
	st, ok := status.FromError(err)
	if !ok {
		return gateway.AsError(err).With("backend", b.cfg.Name)
	}
	fromBackend := len(header) > 0 || len(trailer) > 0
	code := schemas.FromGRPC(st.Code())
	data := map[string]any{"backend": b.cfg.Name, "grpc_code": st.Code().String()}
	if details := detailsJSON(st, data); len(details) > 0 {
		data["details"] = details
	}
	if md := b.surfaced(header, trailer); len(md) > 0 {
		data["metadata"] = md
	}
	switch st.Code() {
	case codes.DeadlineExceeded:
		data["layer"] = gateway.LayerGateway
		if sent || fromBackend {
			data["layer"] = gateway.LayerBackend
		}
	case codes.Unavailable, codes.ResourceExhausted, codes.Aborted:
		if _, ok := data["retry_after_ms"]; !ok {
			data["retry_after_ms"] = int64(1000)
		}
		data["recovery_hint"] = "RETRY_WITH_BACKOFF"
	}
	if fromBackend {
		return gateway.WireError(code, st.Message(), data)
	}
	e := gateway.NewError(code)
	for k, v := range data {
		e = e.With(k, v)
	}
	if st.Code() == codes.Unavailable && !sent {
		// No transport stream took the request (no connection was ready, or it was
		// refused): it never reached the backend, so running it again is safe.
		return e.Wrap(err).NotSent()
	}
	return e.Wrap(err)
}

// detailsJSON renders google.rpc.Status details as proto3 JSON; a RetryInfo also sets
// data.retry_after_ms.
func detailsJSON(st *status.Status, data map[string]any) []rawJSON {
	var out []rawJSON
	for _, d := range st.Proto().GetDetails() {
		msg, err := d.UnmarshalNew()
		if err != nil {
			continue // a detail type this gateway does not know is left out
		}
		if ri, ok := msg.(*errdetails.RetryInfo); ok && ri.GetRetryDelay() != nil {
			data["retry_after_ms"] = ri.GetRetryDelay().AsDuration().Milliseconds()
		}
		j, err := protojson.Marshal(d) // an Any: {"@type": …, fields…}
		if err == nil {
			out = append(out, rawJSON(j))
		}
	}
	return out
}

// surfaced copies the configured header and trailer keys.
func (b *Backend) surfaced(header, trailer metadata.MD) map[string][]string {
	if len(b.cfg.SurfaceMetadata) == 0 {
		return nil
	}
	out := map[string][]string{}
	for _, k := range b.cfg.SurfaceMetadata {
		k = strings.ToLower(k)
		if v := append(header.Get(k), trailer.Get(k)...); len(v) > 0 {
			out[k] = v
		}
	}
	return out
}

// rawJSON is JSON written as is by encoding/json.
type rawJSON []byte

// MarshalJSON implements json.Marshaler.
func (r rawJSON) MarshalJSON() ([]byte, error) { return r, nil }
