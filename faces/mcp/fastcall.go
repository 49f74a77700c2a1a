package mcpface

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// The tools/call fast path. mcp-go's streamable HTTP server serves a tools/call by decoding
// the body three times (its envelope, the protocol era, the typed request), running its
// session, hook and cancellation machinery and a notification forwarder goroutine, and the
// face's handler then decodes the relayed result into a typed CallToolResult which mcp-go
// encodes again through a map. On a session this process initialized, the face serves a
// tools/call of a bridged tool itself instead: the envelope is read by the gateway's strict
// codec (fastdecode.go), the call runs through the same pipeline entry as the handler's
// (RunAs as the caller, with the session as the bridge's peer, the progress token relayed
// and params._meta's trace context continued), and the upstream's result is written to the
// client as it came, compacted — with the headers, status and framing mcp-go writes for
// the same request: a JSON response, or an event stream once a notification (progress, a
// log message) is sent during the call, or when the session's earlier notifications made
// mcp-go answer all its POSTs as streams. Refusals are answered as refusalWriter answers
// them, and a notifications/cancelled naming the call cancels it.
//
// What the fast path does not reproduce stays with mcp-go: initialize and every other
// method, batches, bodies the strict codec refuses or mcp-go would read differently
// (decodeToolCall), the 2026-07-28 revision, sessions this process does not hold (after a
// restart, on another replica: mcp-go restores them from the session table first), clients
// with sampling or elicitation (the upstream's requests go on the response of mcp-go's POST,
// relay25.go), sessions with notifications waiting to be delivered (mcp-go writes them on the
// response), and tools that are not the bridge's (an embedder's own).

// liveSession is a streamable HTTP session mcp-go registered in this process.
type liveSession struct {
	sess mcpserver.ClientSession
	// sse is set once mcp-go answers every later POST of the session as an event stream:
	// mcp-go sets its session's flag for that on the first notification sent to the
	// session (a list_changed broadcast when the catalog is published, a resource update,
	// progress, a log message) and never clears it. The face sets sse where it causes such
	// a notification and when mcp-go answered a POST of the session with a stream.
	sse atomic.Bool
}

// fastPath is the state of the tools/call fast path.
type fastPath struct {
	live     sync.Map                          // session id → *liveSession
	tools    atomic.Pointer[map[string]string] // bridged tool name → the method it calls
	inflight sync.Map                          // inflightKey → *inflightCall
	served   atomic.Uint64
	off      atomic.Bool
}

// inflightCall is a fast-path call that notifications/cancelled may cancel.
type inflightCall struct{ cancel context.CancelFunc }

// FastToolCalls returns how many tools/call requests the face served without mcp-go's
// server since it started.
func (f *Face) FastToolCalls() uint64 { return f.fast.served.Load() }

// SetFastToolCalls turns the tools/call fast path on (the default) or off, so that a test
// can compare what a client receives from either path.
func (f *Face) SetFastToolCalls(on bool) { f.fast.off.Store(!on) }

// trackSessions adds the hooks that keep fastPath.live: the streamable HTTP sessions mcp-go
// registered (on initialize, or when a GET opens a session's stream).
func (f *Face) trackSessions(h *mcpserver.Hooks) {
	h.AddOnRegisterSession(func(_ context.Context, s mcpserver.ClientSession) {
		if _, ok := s.(mcpserver.SessionWithStreamableHTTPConfig); ok && s.SessionID() != "" {
			f.fast.live.Store(s.SessionID(), &liveSession{sess: s})
		}
	})
	h.AddOnUnregisterSession(func(_ context.Context, s mcpserver.ClientSession) {
		if v, ok := f.fast.live.Load(s.SessionID()); ok && v.(*liveSession).sess == s {
			f.fast.live.CompareAndDelete(s.SessionID(), v)
		}
	})
}

// publishTools records the bridged tools the fast path serves, and marks every session's
// POSTs sticky event streams: mcp-go's SetTools broadcasts list_changed to them all.
func (f *Face) publishTools(tools map[string]string) {
	f.fast.tools.Store(&tools)
	f.fast.live.Range(func(_, v any) bool {
		v.(*liveSession).sse.Store(true)
		return true
	})
}

// markStream records that mcp-go answered a POST of session id with an event stream.
func (f *Face) markStream(id string) {
	if v, ok := f.fast.live.Load(id); ok {
		v.(*liveSession).sse.Store(true)
	}
}

// inflightKey is how mcp-go keys a request for notifications/cancelled: the session ID and
// the request id as decoded into an any (a string, or a float64) and printed with %v.
func inflightKey(sessionID string, id any) string { return sessionID + ":" + fmt.Sprint(id) }

// idValue is a plain id's value as mcp-go decodes it.
func idValue(raw string) any {
	if raw[0] == '"' {
		return raw[1 : len(raw)-1]
	}
	n, _ := strconv.ParseFloat(raw, 64)
	return n
}

// cancelFast cancels the fast-path call a notifications/cancelled body names, if it is
// running; mcp-go then handles the notification as before (for its own calls).
func (f *Face) cancelFast(sessionID string, body []byte) {
	if !bytes.Contains(body, []byte(mcp.MethodNotificationCancelled)) {
		return
	}
	var n struct {
		Method string `json:"method"`
		Params struct {
			RequestID any `json:"requestId"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &n) != nil || n.Method != string(mcp.MethodNotificationCancelled) || n.Params.RequestID == nil {
		return
	}
	if v, ok := f.fast.inflight.LoadAndDelete(inflightKey(sessionID, n.Params.RequestID)); ok {
		v.(*inflightCall).cancel()
	}
}

// jsonMedia reports whether a Content-Type is application/json, as mcp-go checks it.
func jsonMedia(ct string) bool {
	if ct == "application/json" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}

// serveToolCall serves r, a POST of a session admit checked, if it is a tools/call the
// fast path takes; it reports whether it did (otherwise nothing was written).
func (f *Face) serveToolCall(w http.ResponseWriter, r *http.Request, fr *faceRequest) bool {
	if f.fast.off.Load() || !jsonMedia(r.Header.Get("Content-Type")) {
		return false
	}
	// Verified routing headers (routing.go) say what the body holds without a scan: another
	// method, or a tool the fast path does not serve, is left to mcp-go before any decoding.
	if rh := fr.routed; rh.verified {
		if rh.method != string(mcp.MethodToolsCall) || !rh.hasName || !f.fastTool(rh.name) {
			return false
		}
	} else if !bytes.Contains(fr.body, []byte(`"tools/call"`)) {
		return false
	}
	if v := r.Header.Get(mcp.HeaderProtocolVersion); v != "" && (!mcp.IsValidProtocolVersion(v) || mcp.IsModernProtocol(v)) {
		return false
	}
	sid := r.Header.Get(mcpserver.HeaderKeySessionID)
	v, ok := f.fast.live.Load(sid)
	if !ok {
		return false
	}
	ls := v.(*liveSession)
	if len(ls.sess.NotificationChannel()) > 0 || !plainSession(ls.sess) {
		return false
	}
	tools := f.fast.tools.Load()
	if tools == nil {
		return false
	}
	principal, _ := r.Context().Value(principalKey{}).(gateway.Principal)
	rt := f.gw.Acquire()
	defer rt.Release()
	p := rt.Pipeline()
	call, ok := decodeToolCall(fr.body, p.LimitsFor(principal))
	if !ok {
		return false
	}
	method, ok := (*tools)[call.name]
	if !ok {
		return false // an unknown tool, or one an embedder added: mcp-go answers
	}
	var meta *mcp.Meta
	if call.meta != nil {
		meta = &mcp.Meta{}
		if json.Unmarshal(call.meta, meta) != nil {
			return false
		}
	}
	f.fast.served.Add(1)

	ctx := f.srv.WithContext(r.Context(), ls.sess)
	st := &callStream{w: w, ls: ls, sess: ls.sess, reqCtx: r.Context()}
	ctx = f.peerWith(ctx, st)
	if meta != nil && meta.ProgressToken != nil {
		ctx = f.relayProgress(ctx, meta.ProgressToken, st)
	}
	if meta != nil && p.Tracer != nil {
		ctx = observability.ExtractMeta(ctx, meta.AdditionalFields)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	key := inflightKey(sid, idValue(call.id))
	ic := &inflightCall{cancel: cancel}
	f.fast.inflight.Store(key, ic)
	args := call.args
	if args == nil {
		args = []byte("{}")
	}
	out := p.RunAs(ctx, faces.Caller{Principal: principal, Zone: callerZone(ctx), Protocol: gateway.ProtocolMCP}, method, args, nil)
	f.fast.inflight.CompareAndDelete(key, ic)
	st.finish()
	if r.Context().Err() != nil {
		return true // the client is gone: mcp-go writes nothing either
	}
	stream := st.upgraded || ls.sse.Load()
	var result []byte
	switch {
	case out.Err == nil:
		result = out.Result
	case out.Err.Code() == schemas.CodeToolFailed:
		result, _ = json.Marshal(out.Err.Data()["result"])
	case stream:
		// A refusal after the response became a stream: mcp-go's internal error, untouched
		// by refusalWriter (its status is already sent).
		st.writeFinal(errorResponse(call.id, mcp.INTERNAL_ERROR, out.Err.Error()), r.ProtoMajor == 1 && r.ProtoMinor >= 1)
		return true
	default:
		w.Header().Set("Content-Type", "application/json")
		if !writeRefusal(w, json.RawMessage(call.id), &mcpRefusal{err: out.Err, traceID: out.TraceID}, http.StatusOK, resourceMetadata(r)) {
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(append(errorResponse(call.id, mcp.INTERNAL_ERROR, out.Err.Error()), '\n'))
		}
		return true
	}
	body, perr := resultResponse(call.id, result)
	if perr != nil {
		body = errorResponse(call.id, mcp.INTERNAL_ERROR, perr.Error())
	}
	if stream {
		st.writeFinal(body, r.ProtoMajor == 1 && r.ProtoMinor >= 1)
		return true
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(body, '\n'))
	return true
}

// fastTool reports whether name is a bridged tool the fast path serves.
func (f *Face) fastTool(name string) bool {
	tools := f.fast.tools.Load()
	if tools == nil {
		return false
	}
	_, ok := (*tools)[name]
	return ok
}

// plainSession reports whether the fast path can stand in for mcp-go on the session: it
// negotiated a protocol version (mcp-go restores one first otherwise), and its client has
// neither sampling nor elicitation, whose requests go on the response of mcp-go's POST (relay25.go).
func plainSession(s mcpserver.ClientSession) bool {
	if v, ok := s.(versionedSession); !ok || v.ProtocolVersion() == "" {
		return false
	}
	ci, ok := s.(mcpserver.SessionWithClientInfo)
	if !ok {
		return false
	}
	cc := ci.GetClientCapabilities()
	return cc.Sampling == nil && cc.Elicitation == nil
}

// resultResponse is the JSON-RPC response carrying result, compacted and escaped as
// encoding/json writes it; the error is the one mcp.ParseCallToolResult reports for a
// result mcp-go's server would not have relayed (not JSON, not an object, no content).
func resultResponse(id string, result []byte) ([]byte, error) {
	body := make([]byte, 0, len(result)+len(id)+32)
	body = append(body, `{"jsonrpc":"2.0","id":`...)
	body = append(body, id...)
	body = append(body, `,"result":`...)
	start := len(body)
	buf := bytes.NewBuffer(body)
	if err := json.Compact(buf, result); err != nil {
		_, perr := mcp.ParseCallToolResult((*json.RawMessage)(&result))
		return nil, perr
	}
	body = buf.Bytes()
	if !hasContent(body[start:]) {
		if _, err := mcp.ParseCallToolResult((*json.RawMessage)(&result)); err != nil {
			return nil, err
		}
	}
	if bytes.ContainsAny(body[start:], "<>&\u2028\u2029") {
		var esc bytes.Buffer
		json.HTMLEscape(&esc, body[start:])
		body = append(body[:start], esc.Bytes()...)
	}
	return append(body, '}'), nil
}

// hasContent reports whether a compact JSON result is an object with a content member or
// a resultType of input_required — what mcp.ParseCallToolResult looks for.
func hasContent(result []byte) bool {
	if len(result) == 0 || result[0] != '{' {
		return false
	}
	found := false
	eachMember(result, func(key, val []byte) bool {
		found = string(key) == `"content"` || (string(key) == `"resultType"` && string(val) == `"input_required"`)
		return !found
	})
	return found
}

// errorResponse is mcp-go's JSON-RPC error response for a request of the given plain id.
func errorResponse(id string, code int, message string) []byte {
	b, _ := json.Marshal(mcp.JSONRPCError{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(idValue(id)),
		Error: mcp.NewJSONRPCErrorDetails(code, message, nil)})
	return b
}

// callStream is a fast-path response that may become an event stream: notifications sent
// during the call (progress, log messages) are written as events, in order, by a
// forwarder goroutine started with the first of them — as mcp-go's POST handler does, so
// that the upstream connection's reader, which sends them, never waits on the client.
// Unlike mcp-go's, the forwarder writes a notification it took even when the call ends
// meanwhile, before the response.
type callStream struct {
	w      http.ResponseWriter
	ls     *liveSession            // the fast path's session; nil on mcp-go's path
	sess   mcpserver.ClientSession // the calling session
	shared *postStream             // on mcp-go's path, the response mcp-go writes too (poststream.go)
	reqCtx context.Context

	start  sync.Once
	queue  chan mcp.JSONRPCNotification // nil until the first notification
	done   chan struct{}
	exited chan struct{}

	upgraded bool        // the event-stream headers are written: by the forwarder, then the handler
	over     atomic.Bool // finish was called: later notifications are dropped, unseen
}

// notificationQueue is the notifications a call may have waiting to be written; more are
// dropped, as mcp-go drops them past its session's queue of the same size.
const notificationQueue = 100

// send queues n for the client. It never blocks.
func (s *callStream) send(n mcp.JSONRPCNotification) {
	if s.over.Load() {
		return
	}
	if up, ok := s.sess.(mcpserver.SessionWithStreamableHTTPConfig); ok {
		up.UpgradeToSSEWhenReceiveNotification() // as mcp-go's send would: its later POSTs stream
	}
	if s.ls != nil {
		s.ls.sse.Store(true)
	}
	s.start.Do(func() {
		s.queue = make(chan mcp.JSONRPCNotification, notificationQueue)
		s.done, s.exited = make(chan struct{}), make(chan struct{})
		go s.forward()
	})
	select {
	case s.queue <- n: // a nil queue (the call is over) takes nothing
	default:
	}
}

func (s *callStream) forward() {
	defer close(s.exited)
	for {
		select {
		case n := <-s.queue:
			s.writeEvent(n) // a notification taken is written, even as the call ends
		case <-s.done:
			return
		case <-s.reqCtx.Done():
			return
		}
	}
}

// finish stops the forwarder and writes what is still queued; later notifications are
// dropped. A nil stream has nothing to finish.
func (s *callStream) finish() {
	if s == nil {
		return
	}
	s.over.Store(true)
	s.start.Do(func() {})
	if s.queue == nil {
		return
	}
	close(s.done)
	<-s.exited
	for {
		select {
		case n := <-s.queue:
			s.writeEvent(n)
		default:
			return
		}
	}
}

// upgrade writes the event-stream headers mcp-go writes, once: from the forwarder while
// it runs, from the handler once it has exited.
func (s *callStream) upgrade() {
	if s.upgraded {
		return
	}
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Connection", "keep-alive")
	h.Set("Cache-Control", "no-cache")
	s.w.WriteHeader(http.StatusOK)
	s.upgraded = true
}

func (s *callStream) writeEvent(n mcp.JSONRPCNotification) {
	b, err := json.Marshal(n)
	if err != nil {
		return
	}
	if s.shared != nil {
		s.shared.event(b)
		return
	}
	s.writeEventData(b)
	_ = http.NewResponseController(s.w).Flush()
}

// writeFinal writes the response as the stream's last event. The handler returns right
// after, and net/http then writes it with the end of the body; over HTTP/1.1 (last) the
// flush mcp-go makes here is saved, one write to the socket fewer, with the response
// kept chunked as mcp-go's flush makes it (on HTTP/2 it flushes).
func (s *callStream) writeFinal(data []byte, last bool) {
	if last && !s.upgraded {
		s.w.Header().Set("Transfer-Encoding", "chunked") // net/http writes it, and no Content-Length
	}
	s.writeEventData(data)
	if !last {
		_ = http.NewResponseController(s.w).Flush()
	}
}

// writeEventData writes data as one event of the stream, upgrading the response first.
func (s *callStream) writeEventData(data []byte) {
	s.upgrade()
	ev := make([]byte, 0, len(data)+24)
	ev = append(ev, "event: message\ndata: "...)
	ev = append(ev, data...)
	ev = append(ev, "\n\n"...)
	_, _ = s.w.Write(ev)
}

// progressNotification is the notifications/progress mcp-go's SendNotificationToClient
// builds from these params.
func progressNotification(params map[string]any) mcp.JSONRPCNotification {
	return mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{
		Method: "notifications/progress", Params: mcp.NotificationParams{AdditionalFields: params}}}
}

// logNotification is the notifications/message mcp-go's SendLogMessageToClient builds.
func logNotification(level mcp.LoggingLevel, logger string, data any) mcp.JSONRPCNotification {
	n := mcp.NewLoggingMessageNotification(level, logger, data)
	return mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{
		Method: n.Method, Params: mcp.NotificationParams{AdditionalFields: map[string]any{
			"level": n.Params.Level, "logger": n.Params.Logger, "data": n.Params.Data}}}}
}
