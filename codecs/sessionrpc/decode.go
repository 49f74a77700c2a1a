package sessionrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Limits bound what the decoders accept; every field must be positive.
type Limits struct {
	// MaxBytes bounds one message.
	MaxBytes int64
	// MaxDepth is the deepest nesting of objects and arrays allowed (the envelope is 1).
	MaxDepth int
	// MaxStringBytes bounds every string, member names included (raw bytes between quotes).
	MaxStringBytes int
}

// DefaultLimits are those of a face configured with no limits of its own.
var DefaultLimits = Limits{MaxBytes: 1 << 20, MaxDepth: 64, MaxStringBytes: 256 << 10}

// MaxIDBytes bounds a request id and a task id.
const MaxIDBytes = 128

// Reasons of a DecodeError: what a client is told in the error message's errorId.
const (
	ReasonParse       = "parse_error"       // not JSON, or not an object
	ReasonTooLarge    = "message_too_large" // past MaxBytes
	ReasonTooDeep     = "too_deep"          // past MaxDepth
	ReasonLongString  = "string_too_long"   // past MaxStringBytes
	ReasonDuplicate   = "duplicate_member"  // a member name twice in one object
	ReasonMissingID   = "invalid_id"        // id missing, not a string, empty or too long
	ReasonUnknownType = "unknown_type"      // type missing, not a string, or not a known message
	ReasonPayload     = "invalid_payload"   // payload present but not an object
	ReasonFrame       = "invalid_frame"     // a frame whose type is not chat.event, chat.done or chat.error
)

// DecodeError is why a message was refused. ID is the envelope's id when it could be read
// (so the error message can name the request), else "".
type DecodeError struct {
	Reason string
	Detail string
	ID     string
}

func (e *DecodeError) Error() string {
	if e.Detail == "" {
		return e.Reason
	}
	return e.Reason + ": " + e.Detail
}

// clientTypes are the message types a client may send.
var clientTypes = map[string]bool{TypeStatusGet: true, TypeChatStart: true, TypeChatAbort: true, TypeTaskStatus: true}

// serverTypes are the message types the gateway sends.
var serverTypes = map[string]bool{
	TypeStatusResult: true, TypeChatAccepted: true, TypeChatQueued: true, TypeChatStarted: true,
	TypeChatEvent: true, TypeChatDone: true, TypeChatError: true, TypeChatAbortResult: true,
	TypeTaskStatusResult: true, TypeError: true,
}

// IsClientType reports whether t is a message a client sends.
func IsClientType(t string) bool { return clientTypes[t] }

// IsServerType reports whether t is a message the gateway sends.
func IsServerType(t string) bool { return serverTypes[t] }

// DecodeRequest decodes a client's envelope strictly: one JSON object within lim, no
// member name twice in any object, id a non-empty string of at most MaxIDBytes, type a
// client message type, payload absent, null or an object. Unknown envelope members are
// ignored (additive changes within a version); the payload is kept as it came.
func DecodeRequest(data []byte, lim Limits) (Envelope, *DecodeError) {
	env, err := decodeObject(data, lim, "id", "type", "payload")
	if err != nil {
		return Envelope{}, err
	}
	id, ok := stringMember(env["id"])
	if !ok || id == "" || len(id) > MaxIDBytes {
		return Envelope{}, &DecodeError{Reason: ReasonMissingID, Detail: "id must be a non-empty string of at most 128 bytes"}
	}
	typ, ok := stringMember(env["type"])
	if !ok || !clientTypes[typ] {
		return Envelope{}, &DecodeError{Reason: ReasonUnknownType, Detail: "type must be one of status.get, chat.start, chat.abort, task.status", ID: id}
	}
	payload, perr := objectPayload(env["payload"])
	if perr != nil {
		perr.ID = id
		return Envelope{}, perr
	}
	return Envelope{ID: id, Type: typ, Payload: payload}, nil
}

// DecodeServer decodes an envelope the gateway (or an upstream speaking the contract)
// sent, as strictly as DecodeRequest but with a server message type.
func DecodeServer(data []byte, lim Limits) (Envelope, *DecodeError) {
	env, err := decodeObject(data, lim, "id", "type", "payload")
	if err != nil {
		return Envelope{}, err
	}
	id, ok := stringMember(env["id"])
	if !ok || id == "" || len(id) > MaxIDBytes {
		return Envelope{}, &DecodeError{Reason: ReasonMissingID, Detail: "id must be a non-empty string of at most 128 bytes"}
	}
	typ, ok := stringMember(env["type"])
	if !ok || !serverTypes[typ] {
		return Envelope{}, &DecodeError{Reason: ReasonUnknownType, ID: id}
	}
	payload, perr := objectPayload(env["payload"])
	if perr != nil {
		perr.ID = id
		return Envelope{}, perr
	}
	return Envelope{ID: id, Type: typ, Payload: payload}, nil
}

// DecodeFrame decodes one message of a session target's stream strictly: an object with a
// type (chat.event, chat.done or chat.error) and an object payload. The payload's content
// is the Checker's business.
func DecodeFrame(data []byte, lim Limits) (Frame, *DecodeError) {
	m, err := decodeObject(data, lim, "type", "payload")
	if err != nil {
		return Frame{}, err
	}
	typ, ok := stringMember(m["type"])
	if !ok || (typ != TypeChatEvent && typ != TypeChatDone && typ != TypeChatError) {
		return Frame{}, &DecodeError{Reason: ReasonFrame, Detail: "type must be chat.event, chat.done or chat.error"}
	}
	payload, perr := objectPayload(m["payload"])
	if perr != nil {
		return Frame{}, perr
	}
	if payload == nil {
		payload = json.RawMessage(`{}`)
	}
	return Frame{Type: typ, Payload: payload}, nil
}

// stringMember returns the string raw holds, false when it is absent or not a string.
func stringMember(raw []byte) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// objectPayload returns raw when it is an object, nil when absent or null.
func objectPayload(raw []byte) (json.RawMessage, *DecodeError) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] != '{' {
		return nil, &DecodeError{Reason: ReasonPayload, Detail: "payload must be an object"}
	}
	return json.RawMessage(raw), nil
}

// decodeObject checks data (one JSON object within lim, no duplicate member names at any
// depth) and returns the raw values of the top-level members named in keep.
func decodeObject(data []byte, lim Limits, keep ...string) (map[string][]byte, *DecodeError) {
	if int64(len(data)) > lim.MaxBytes {
		return nil, &DecodeError{Reason: ReasonTooLarge, Detail: fmt.Sprintf("at most %d bytes", lim.MaxBytes)}
	}
	if !utf8.Valid(data) {
		return nil, &DecodeError{Reason: ReasonParse, Detail: "not UTF-8"}
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return nil, &DecodeError{Reason: ReasonParse, Detail: "a message is a JSON object"}
	}
	w := walker{d: json.NewDecoder(bytes.NewReader(data)), data: data, lim: lim, keep: keep, out: make(map[string][]byte, len(keep))}
	w.d.UseNumber()
	tok, err := w.d.Token()
	if err != nil {
		return nil, parseError(err)
	}
	if derr := w.object(tok, 1); derr != nil {
		return nil, derr
	}
	if _, err := w.d.Token(); !errors.Is(err, io.EOF) {
		return nil, &DecodeError{Reason: ReasonParse, Detail: "data after the object"}
	}
	return w.out, nil
}

// walker walks the tokens of one message.
type walker struct {
	d    *json.Decoder
	data []byte
	lim  Limits
	keep []string
	out  map[string][]byte
}

func parseError(err error) *DecodeError {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return &DecodeError{Reason: ReasonParse, Detail: fmt.Sprintf("at byte %d", se.Offset)}
	}
	return &DecodeError{Reason: ReasonParse}
}

// value walks the value that starts with tok at depth (the depth it would open).
func (w *walker) value(tok json.Token, depth int) *DecodeError {
	switch t := tok.(type) {
	case json.Delim:
		if depth > w.lim.MaxDepth {
			return &DecodeError{Reason: ReasonTooDeep, Detail: fmt.Sprintf("at most %d levels", w.lim.MaxDepth)}
		}
		if t == '{' {
			return w.object(t, depth)
		}
		return w.array(depth)
	case string:
		if len(t) > w.lim.MaxStringBytes {
			return &DecodeError{Reason: ReasonLongString, Detail: fmt.Sprintf("at most %d bytes", w.lim.MaxStringBytes)}
		}
	}
	return nil
}

func (w *walker) array(depth int) *DecodeError {
	for {
		tok, err := w.d.Token()
		if err != nil {
			return parseError(err)
		}
		if tok == json.Delim(']') {
			return nil
		}
		if derr := w.value(tok, depth+1); derr != nil {
			return derr
		}
	}
}

func (w *walker) object(tok json.Token, depth int) *DecodeError {
	if tok != json.Delim('{') {
		return &DecodeError{Reason: ReasonParse, Detail: "a message is a JSON object"}
	}
	if depth > w.lim.MaxDepth {
		return &DecodeError{Reason: ReasonTooDeep, Detail: fmt.Sprintf("at most %d levels", w.lim.MaxDepth)}
	}
	var seen map[string]struct{}
	for {
		tok, err := w.d.Token()
		if err != nil {
			return parseError(err)
		}
		if tok == json.Delim('}') {
			return nil
		}
		key, ok := tok.(string)
		if !ok {
			return &DecodeError{Reason: ReasonParse}
		}
		if len(key) > w.lim.MaxStringBytes {
			return &DecodeError{Reason: ReasonLongString, Detail: fmt.Sprintf("at most %d bytes", w.lim.MaxStringBytes)}
		}
		if seen == nil {
			seen = make(map[string]struct{}, 4)
		}
		if _, dup := seen[key]; dup {
			return &DecodeError{Reason: ReasonDuplicate, Detail: fmt.Sprintf("member %q twice", truncate(key))}
		}
		seen[key] = struct{}{}
		start := w.d.InputOffset()
		tok, err = w.d.Token()
		if err != nil {
			return parseError(err)
		}
		if derr := w.value(tok, depth+1); derr != nil {
			return derr
		}
		if depth == 1 && wanted(w.keep, key) {
			raw := w.data[start:w.d.InputOffset()]
			w.out[key] = bytes.TrimLeft(raw, " \t\r\n:")
		}
	}
}

func wanted(keep []string, key string) bool {
	for _, k := range keep {
		if k == key {
			return true
		}
	}
	return false
}

func truncate(s string) string {
	if len(s) > 32 {
		s = s[:32] + "…"
	}
	return strings.ToValidUTF8(s, "")
}
