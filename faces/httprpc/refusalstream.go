package httprpc

import (
	"encoding/json"
	"net/http"

	"github.com/gatehouse-dev/gatehouse/codecs/msgpack"
	"github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// methodDelegate is the NEKTE method whose answer is a stream of named events.
const methodDelegate = "nekte.delegate"

// delegateRefusal returns the frame of the one-event stream that answers a nekte.delegate
// refused before its stream started (an unknown capability, a task id already used, a
// denied context, the task limit, invalid params): a streaming NEKTE client reads only
// event-stream frames, and would not see a JSON-RPC error response. The event is the
// delegate stream's own "error" event, {task_id?, code, message}, with the task id the
// request (body, in enc) named. ok is false when out, the JSON response, is not an error.
func delegateRefusal(out, body []byte, enc faces.Encoding) (frame []byte, ok bool) {
	if enc == faces.EncodingMsgpack { // the request; responses are JSON until written
		var err error
		if body, err = msgpack.ToJSON(body, msgpack.Limits{}); err != nil {
			body = nil
		}
	}
	var resp struct {
		Error *struct {
			Code    schemas.Code `json:"code"`
			Message string       `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(out, &resp) != nil || resp.Error == nil {
		return nil, false
	}
	var req struct {
		Params struct {
			Task struct {
				ID any `json:"id"`
			} `json:"task"`
		} `json:"params"`
	}
	_ = json.Unmarshal(body, &req) // the task id is named when the request had a string one
	taskID, _ := req.Params.Task.ID.(string)
	frame, err := nekte.AppendEvent(nil, nekte.ErrorEvent{TaskID: taskID, Code: resp.Error.Code, Message: resp.Error.Message})
	return frame, err == nil
}

// writeRefusalStream answers with frame as the whole event stream, with the headers and
// the status (200) a delegate stream has.
func writeRefusalStream(w http.ResponseWriter, frame []byte) {
	h := w.Header()
	for _, kv := range nekte.SSEHeaders {
		h.Set(kv[0], kv[1])
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(frame)
}
