package sessionrpc

import (
	"encoding/json"

	"github.com/gatehouse-dev/gatehouse/codecs/sessionrpc"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// relayAction says what to do with one upstream message.
type relayAction uint8

const (
	relaySkip     relayAction = iota // not for the client (queueing, answers to other ids)
	relayFrame                       // an event: yield the frame
	relayTerminal                    // chat.done or chat.error: yield the frame, then end
)

// errMalformed is the failure of an upstream message that is not a session RPC envelope.
var errMalformed = gateway.Errorf(schemas.CodeUnavailable, "the session upstream sent a malformed message")

// peerLimits bound what relay decodes: the message's size is bounded already by the
// reader (max_frame_bytes), so only nesting is bounded here, as the face bounds a client's.
var peerLimits = sessionrpc.Limits{MaxBytes: MaxUpstreamFrameBytes, MaxDepth: sessionrpc.DefaultLimits.MaxDepth, MaxStringBytes: MaxUpstreamFrameBytes}

// relay turns one message the upstream sent about request reqID into the Frame to yield.
// Messages for other ids and the queueing messages (chat.accepted, chat.queued,
// chat.started) and answers (chat.abort.result, status.result, task.status.result) are
// skipped, as are message types this gateway does not know (a newer upstream's additions).
// An envelope-level error concerning the request becomes its chat.error.
func relay(reqID string, data []byte) ([]byte, relayAction, *gateway.Error) {
	env, err := sessionrpc.DecodePeer(data, peerLimits)
	if err != nil {
		return nil, relaySkip, errMalformed.Wrap(err)
	}
	if env.ID != "" && env.ID != reqID {
		return nil, relaySkip, nil
	}
	switch env.Type {
	case sessionrpc.TypeChatEvent:
		if !isObject(env.Payload) {
			return nil, relaySkip, errMalformed
		}
		return frame(sessionrpc.TypeChatEvent, env.Payload), relayFrame, nil
	case sessionrpc.TypeChatDone, sessionrpc.TypeChatError:
		payload := env.Payload
		if len(payload) == 0 || string(payload) == "null" {
			payload = json.RawMessage("{}")
		}
		if !isObject(payload) {
			return nil, relaySkip, errMalformed
		}
		p, err := withoutTaskID(payload)
		if err != nil {
			return nil, relaySkip, errMalformed.Wrap(err)
		}
		return frame(env.Type, p), relayTerminal, nil
	case sessionrpc.TypeError:
		if env.ID == "" { // not about this request
			return nil, relaySkip, nil
		}
		var e struct {
			ErrorID string          `json:"errorId"`
			Message string          `json:"message"`
			Code    json.RawMessage `json:"code"`
		}
		_ = json.Unmarshal(env.Payload, &e)
		if e.ErrorID == "" {
			e.ErrorID = "upstream_error"
		}
		if e.Message == "" {
			e.Message = "the session upstream refused the request"
		}
		m := map[string]any{"errorId": e.ErrorID, "message": e.Message}
		if len(e.Code) > 0 {
			m["code"] = e.Code
		}
		p, _ := json.Marshal(m)
		return frame(sessionrpc.TypeChatError, p), relayTerminal, nil
	default:
		return nil, relaySkip, nil
	}
}

// frame encodes a Frame without reflection.
func frame(typ string, payload []byte) []byte {
	b := make([]byte, 0, len(payload)+len(typ)+24)
	b = append(b, `{"type":"`...)
	b = append(b, typ...)
	b = append(b, `","payload":`...)
	b = append(b, payload...)
	return append(b, '}')
}

// isObject reports whether raw is a JSON object (the decoder has checked it is valid JSON).
func isObject(raw json.RawMessage) bool {
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case '{':
			return true
		default:
			return false
		}
	}
	return false
}

// withoutTaskID returns payload without its taskId member: the upstream's task id means
// nothing to the client, who gets the gateway's.
func withoutTaskID(payload json.RawMessage) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(payload, &m); err != nil {
		return nil, err
	}
	if _, ok := m["taskId"]; !ok {
		return payload, nil
	}
	delete(m, "taskId")
	return json.Marshal(m)
}

// decodeEnvelope decodes one upstream message.
func decodeEnvelope(data []byte) (sessionrpc.Envelope, bool) {
	var env sessionrpc.Envelope
	err := json.Unmarshal(data, &env)
	return env, err == nil
}
