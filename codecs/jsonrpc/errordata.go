package jsonrpc

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"

	"github.com/gatehouse-dev/gatehouse/schemas"
)

// traceIDName is the member of error.data that carries the trace id.
const traceIDName = "trace_id"

// AppendData appends the error.data object for e to dst:
// {"reason":...,"limit":...,"max":...,"trace_id":...}, where limit and max are present when
// a limit was exceeded and trace_id when traceID is not empty.
func (e *DecodeError) AppendData(dst []byte, traceID string) []byte {
	dst = append(dst, `{"reason":`...)
	dst = AppendString(dst, e.Reason)
	if e.Limit != "" {
		dst = append(dst, `,"limit":`...)
		dst = AppendString(dst, e.Limit)
		dst = append(dst, `,"max":`...)
		dst = strconv.AppendInt(dst, int64(e.Max), 10)
	}
	return appendTraceID(dst, traceID, true)
}

// appendTraceID appends the trace_id member, if traceID is set, and closes the object.
// more says the object already has a member.
func appendTraceID(dst []byte, traceID string, more bool) []byte {
	if traceID != "" {
		if more {
			dst = append(dst, ',')
		}
		dst = append(dst, `"`+traceIDName+`":`...)
		dst = AppendString(dst, traceID)
	}
	return append(dst, '}')
}

// AppendDecodeError appends the error response for e to dst: its code, the message the
// schemas error table gives for that code, error.data as written by AppendData, and e.ID
// (null when zero).
func AppendDecodeError(dst []byte, e *DecodeError, traceID string) []byte {
	dst = appendErrorHead(dst, e.Code, schemas.KindOf(e.Code).Message)
	dst = append(dst, `,"data":`...)
	dst = e.AppendData(dst, traceID)
	return appendErrorTail(dst, e.ID)
}

// AppendDataObject appends fields to dst as a JSON object with its members in name order,
// followed by trace_id when traceID is set (which then replaces any trace_id in fields).
// Values are written by encoding/json without HTML escaping, so this is for error paths,
// not the hot path. On error dst is returned unchanged.
func AppendDataObject(dst []byte, fields map[string]any, traceID string) ([]byte, error) {
	names := make([]string, 0, len(fields))
	for name := range fields {
		if traceID == "" || name != traceIDName {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	out := append(dst, '{')
	for i, name := range names {
		buf.Reset()
		if err := enc.Encode(fields[name]); err != nil {
			return dst, err
		}
		if i > 0 {
			out = append(out, ',')
		}
		out = AppendString(out, name)
		out = append(out, ':')
		out = append(out, bytes.TrimRight(buf.Bytes(), "\n")...)
	}
	return appendTraceID(out, traceID, len(names) > 0), nil
}
