package sessionrpc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
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

// DecodePeer decodes a message a peer speaking the contract sent (an upstream agent
// server, read by a relay), with DecodeServer's strict syntax — limits, no member name
// twice — but forward-compatible content: the id may be absent (a message about no
// request) and the type is any non-empty string (a newer peer's additions, which a relay
// skips). The payload is absent, null or an object.
func DecodePeer(data []byte, lim Limits) (Envelope, *DecodeError) {
	env, err := decodeObject(data, lim, "id", "type", "payload")
	if err != nil {
		return Envelope{}, err
	}
	var id string
	if raw := env["id"]; len(raw) > 0 && string(raw) != "null" {
		var ok bool
		if id, ok = stringMember(raw); !ok || len(id) > MaxIDBytes {
			return Envelope{}, &DecodeError{Reason: ReasonMissingID, Detail: "id must be a string of at most 128 bytes"}
		}
	}
	typ, ok := stringMember(env["type"])
	if !ok || typ == "" {
		return Envelope{}, &DecodeError{Reason: ReasonUnknownType, Detail: "type must be a non-empty string", ID: id}
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
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	if body := raw[1 : len(raw)-1]; bytes.IndexByte(body, '\\') < 0 {
		return string(body), true // checked by the scanner: no escapes, valid UTF-8
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
	sc := scanner{data: data, lim: lim, keep: keep}
	sc.ws()
	if sc.pos >= len(data) || data[sc.pos] != '{' {
		return nil, &DecodeError{Reason: ReasonParse, Detail: "a message is a JSON object"}
	}
	if err := sc.object(1); err != nil {
		return nil, err
	}
	sc.ws()
	if sc.pos != len(data) {
		return nil, &DecodeError{Reason: ReasonParse, Detail: "data after the object"}
	}
	return sc.out, nil
}

// scanner checks one JSON text in place: syntax (RFC 8259, UTF-8), depth, string lengths
// and duplicate member names, without building values.
type scanner struct {
	data []byte
	pos  int
	lim  Limits
	keep []string
	out  map[string][]byte
}

func (s *scanner) syntax() *DecodeError {
	return &DecodeError{Reason: ReasonParse, Detail: fmt.Sprintf("at byte %d", s.pos)}
}

func (s *scanner) ws() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// value checks the value at pos, at depth (the depth an object or array there opens).
func (s *scanner) value(depth int) *DecodeError {
	s.ws()
	if s.pos >= len(s.data) {
		return s.syntax()
	}
	switch c := s.data[s.pos]; {
	case c == '{':
		return s.object(depth)
	case c == '[':
		return s.array(depth)
	case c == '"':
		_, err := s.str()
		return err
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	}
	return s.syntax()
}

func (s *scanner) literal(lit string) *DecodeError {
	if len(s.data)-s.pos < len(lit) || string(s.data[s.pos:s.pos+len(lit)]) != lit {
		return s.syntax()
	}
	s.pos += len(lit)
	return nil
}

func (s *scanner) digits() int {
	n := 0
	for s.pos < len(s.data) && s.data[s.pos] >= '0' && s.data[s.pos] <= '9' {
		s.pos++
		n++
	}
	return n
}

func (s *scanner) number() *DecodeError {
	if s.data[s.pos] == '-' {
		s.pos++
	}
	if s.pos < len(s.data) && s.data[s.pos] == '0' {
		s.pos++
	} else if s.digits() == 0 {
		return s.syntax()
	}
	if s.pos < len(s.data) && s.data[s.pos] == '.' {
		s.pos++
		if s.digits() == 0 {
			return s.syntax()
		}
	}
	if s.pos < len(s.data) && (s.data[s.pos] == 'e' || s.data[s.pos] == 'E') {
		s.pos++
		if s.pos < len(s.data) && (s.data[s.pos] == '+' || s.data[s.pos] == '-') {
			s.pos++
		}
		if s.digits() == 0 {
			return s.syntax()
		}
	}
	return nil
}

// str checks the string at pos and returns its raw bytes between the quotes.
func (s *scanner) str() ([]byte, *DecodeError) {
	s.pos++ // the opening quote
	start := s.pos
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		switch {
		case c == '"':
			raw := s.data[start:s.pos]
			s.pos++
			if len(raw) > s.lim.MaxStringBytes {
				return nil, &DecodeError{Reason: ReasonLongString, Detail: fmt.Sprintf("at most %d bytes", s.lim.MaxStringBytes)}
			}
			return raw, nil
		case c == '\\':
			s.pos++
			if s.pos >= len(s.data) {
				return nil, s.syntax()
			}
			switch s.data[s.pos] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.pos++
			case 'u':
				if len(s.data)-s.pos < 5 {
					return nil, s.syntax()
				}
				for _, h := range s.data[s.pos+1 : s.pos+5] {
					if !isHex(h) {
						return nil, s.syntax()
					}
				}
				s.pos += 5
			default:
				return nil, s.syntax()
			}
		case c < 0x20:
			return nil, s.syntax()
		case c < utf8.RuneSelf:
			s.pos++
		default:
			r, n := utf8.DecodeRune(s.data[s.pos:])
			if r == utf8.RuneError && n == 1 {
				return nil, &DecodeError{Reason: ReasonParse, Detail: "not UTF-8"}
			}
			s.pos += n
		}
	}
	return nil, s.syntax()
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func (s *scanner) tooDeep() *DecodeError {
	return &DecodeError{Reason: ReasonTooDeep, Detail: fmt.Sprintf("at most %d levels", s.lim.MaxDepth)}
}

func (s *scanner) array(depth int) *DecodeError {
	if depth > s.lim.MaxDepth {
		return s.tooDeep()
	}
	s.pos++ // [
	s.ws()
	if s.pos < len(s.data) && s.data[s.pos] == ']' {
		s.pos++
		return nil
	}
	for {
		if err := s.value(depth + 1); err != nil {
			return err
		}
		s.ws()
		if s.pos >= len(s.data) {
			return s.syntax()
		}
		switch s.data[s.pos] {
		case ',':
			s.pos++
		case ']':
			s.pos++
			return nil
		default:
			return s.syntax()
		}
	}
}

// keyName is a member name as compared for duplicates: its raw bytes, or its decoded
// text when it has escapes ("a" and "\u0061" are the same name).
func keyName(raw []byte) string {
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw)
	}
	var s string
	if json.Unmarshal(append(append([]byte{'"'}, raw...), '"'), &s) != nil {
		return string(raw)
	}
	return s
}

func (s *scanner) object(depth int) *DecodeError {
	if depth > s.lim.MaxDepth {
		return s.tooDeep()
	}
	s.pos++ // {
	s.ws()
	if s.pos < len(s.data) && s.data[s.pos] == '}' {
		s.pos++
		return nil
	}
	var small [8]string
	names := small[:0]
	var many map[string]struct{}
	for {
		s.ws()
		if s.pos >= len(s.data) || s.data[s.pos] != '"' {
			return s.syntax()
		}
		raw, err := s.str()
		if err != nil {
			return err
		}
		name := keyName(raw)
		var dup bool
		if many != nil {
			_, dup = many[name]
			many[name] = struct{}{}
		} else {
			dup = slices.Contains(names, name)
			names = append(names, name)
			if len(names) > len(small) {
				many = make(map[string]struct{}, 2*len(names))
				for _, n := range names {
					many[n] = struct{}{}
				}
			}
		}
		if dup {
			return &DecodeError{Reason: ReasonDuplicate, Detail: fmt.Sprintf("member %q twice", truncate(name))}
		}
		s.ws()
		if s.pos >= len(s.data) || s.data[s.pos] != ':' {
			return s.syntax()
		}
		s.pos++
		s.ws()
		start := s.pos
		if err := s.value(depth + 1); err != nil {
			return err
		}
		if depth == 1 && slices.Contains(s.keep, name) {
			if s.out == nil {
				s.out = make(map[string][]byte, len(s.keep))
			}
			s.out[name] = s.data[start:s.pos]
		}
		s.ws()
		if s.pos >= len(s.data) {
			return s.syntax()
		}
		switch s.data[s.pos] {
		case ',':
			s.pos++
		case '}':
			s.pos++
			return nil
		default:
			return s.syntax()
		}
	}
}

func truncate(s string) string {
	if len(s) > 32 {
		s = s[:32] + "…"
	}
	return strings.ToValidUTF8(s, "")
}
