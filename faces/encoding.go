package faces

import (
	"errors"
	"math"
	"mime"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	"github.com/gatehouse-dev/gatehouse/codecs/msgpack"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// Encoding is how one HTTP body or WebSocket message carries JSON-RPC: JSON text, or
// MessagePack. MessagePack is transcoded to JSON at the face (codecs/msgpack) before the
// strict JSON-RPC decoder reads it, and what goes back is transcoded from JSON, so every
// request is judged by the same decoder whatever its encoding.
type Encoding uint8

const (
	EncodingJSON    Encoding = iota // application/json, WebSocket text frames
	EncodingMsgpack                 // application/x-msgpack, WebSocket binary frames
)

// JSONContentType is the media type of JSON bodies.
const JSONContentType = "application/json"

// limitExceeded is the reason a limit error gives, worded as the JSON-RPC decoder words it,
// so that a limit reads the same in either encoding.
const limitExceeded = "limit exceeded"

// MediaEncoding returns the encoding a request's Content-Type names; ok is false for any
// other media type.
func MediaEncoding(contentType string) (enc Encoding, ok bool) {
	switch {
	case IsJSON(contentType):
		return EncodingJSON, true
	case IsMsgpack(contentType):
		return EncodingMsgpack, true
	default:
		return EncodingJSON, false
	}
}

// IsMsgpack reports whether a Content-Type is application/x-msgpack (parameters allowed).
func IsMsgpack(ct string) bool {
	if ct == msgpack.ContentType {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == msgpack.ContentType
}

// ContentType returns the media type of bodies in e.
func (e Encoding) ContentType() string {
	if e == EncodingMsgpack {
		return msgpack.ContentType
	}
	return JSONContentType
}

// ToJSON returns the JSON text of body. MessagePack is held to the decoder's limits —
// nesting depth and string size, counted as the JSON decoder counts them — and to maxBytes;
// the error then carries the same data as the JSON decoder's for the same limit. Malformed
// MessagePack, or a value JSON cannot hold, is a PARSE_ERROR.
func (e Encoding) ToJSON(body []byte, lim jsonrpc.Limits, maxBytes int64) ([]byte, *gateway.Error) {
	if e != EncodingMsgpack {
		return body, nil
	}
	out, err := msgpack.ToJSON(body, msgpack.Limits{
		MaxBytes:       int(min(maxBytes, math.MaxInt32)),
		MaxDepth:       lim.MaxDepth,
		MaxStringBytes: lim.MaxStringBytes,
	})
	if err != nil {
		return nil, fromMsgpackError(err)
	}
	return out, nil
}

// fromMsgpackError turns a transcoding error into the gateway's error type.
func fromMsgpackError(err error) *gateway.Error {
	me, ok := errors.AsType[*msgpack.Error](err)
	if !ok {
		return gateway.NewError(schemas.CodeParseError).With("reason", "invalid MessagePack")
	}
	if me.Limit != "" {
		return FromDecodeError(&jsonrpc.DecodeError{Code: me.Code(), Reason: limitExceeded, Limit: me.Limit, Max: me.Max})
	}
	return gateway.NewError(schemas.CodeParseError).With("reason", "invalid MessagePack: "+me.Reason).With("offset", me.Offset)
}

// errNoMsgpackForm replaces a response that MessagePack cannot carry: JSON whose number is
// beyond the range of a double (a backend's result passed through as it came).
var errNoMsgpackForm = gateway.NewError(schemas.CodeInternal).With("reason", "the response has no MessagePack form")

// FromJSON returns out, the JSON text of a response or notification, in e. When MessagePack
// cannot carry it (see errNoMsgpackForm), the error response with id null, under traceID,
// replaces it and ok is false.
func (e Encoding) FromJSON(out []byte, traceID string) (enc []byte, ok bool) {
	if e != EncodingMsgpack || len(out) == 0 {
		return out, true
	}
	if b, err := msgpack.FromJSON(out); err == nil {
		return b, true
	}
	b, err := msgpack.FromJSON(AppendError(nil, jsonrpc.ID{}, errNoMsgpackForm, traceID))
	if err != nil { // the error response is plain JSON the gateway wrote: it always transcodes
		return nil, false
	}
	return b, false
}
