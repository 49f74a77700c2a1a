package faces

import (
	"encoding/json"
	"maps"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	"github.com/gatehouse-dev/gatehouse/gateway"
)

// Reject answers every request of a decoded body with err without running any
// (notifications stay silent; malformed members get their decode error).
func Reject(payload jsonrpc.Payload, derr *jsonrpc.DecodeError, dst []byte, err *gateway.Error, traceID string) []byte {
	if derr != nil {
		return AppendError(dst, derr.ID, FromDecodeError(derr), traceID)
	}
	outs := make([]Outcome, len(payload.Members))
	for i := range payload.Members {
		m := &payload.Members[i]
		if m.Err != nil {
			outs[i] = Outcome{Err: FromDecodeError(m.Err), ID: m.Err.ID}
		} else {
			outs[i] = Outcome{Err: err, ID: m.Request.ID, Silent: m.Request.IsNotification()}
		}
	}
	if !payload.Batch {
		return AppendOutcome(dst, &outs[0], traceID)
	}
	return AppendBatch(dst, outs, traceID)
}

// AppendBatch appends the array of responses for outs, in order, or nothing when every
// member was a notification.
func AppendBatch(dst []byte, outs []Outcome, traceID string) []byte {
	start, n := len(dst), 0
	dst = append(dst, '[')
	for i := range outs {
		if outs[i].Silent {
			continue
		}
		if n > 0 {
			dst = append(dst, ',')
		}
		dst = AppendOutcome(dst, &outs[i], traceID)
		n++
	}
	if n == 0 {
		return dst[:start]
	}
	return append(dst, ']')
}

// AppendOutcome appends the response for out, or nothing for a notification.
func AppendOutcome(dst []byte, out *Outcome, traceID string) []byte {
	switch {
	case out.Silent:
		return dst
	case out.Err != nil:
		return AppendError(dst, out.ID, out.Err, traceID)
	default:
		return jsonrpc.AppendResult(dst, out.ID, out.Res.Value)
	}
}

// AppendError appends an error response whose data carries trace_id beside the error's own
// client-safe data.
func AppendError(dst []byte, id jsonrpc.ID, err *gateway.Error, traceID string) []byte {
	data := make(map[string]any, len(err.Data())+1)
	maps.Copy(data, err.Data())
	data["trace_id"] = traceID
	raw, mErr := json.Marshal(data)
	if mErr != nil {
		raw = jsonrpc.AppendString([]byte(`{"trace_id":`), traceID)
		raw = append(raw, '}')
	}
	return jsonrpc.AppendError(dst, id, err.Code(), err.Message(), raw)
}

// FromDecodeError turns a decoder error into the gateway's error type.
func FromDecodeError(d *jsonrpc.DecodeError) *gateway.Error {
	e := gateway.NewError(d.Code).With("reason", d.Reason)
	if d.Limit != "" {
		e = e.With("limit", d.Limit).With("max", d.Max)
	}
	return e
}
