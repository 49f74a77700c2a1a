package mcpface

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/schemas"
	"github.com/gatehouse-dev/gatehouse/state"
)

// Requests from the server (sampling/createMessage, elicitation/create relayed from an
// upstream whose policy is "client") to a 2025-11-25 client of the streamable HTTP
// transport, across replicas.
//
// mcp-go keeps such a request in the memory of the process running the call, numbered by
// a counter of that process, and takes the client's answer only on that process: an answer
// the load balancer sends to another replica is dropped there (and the client told its
// session is unknown). The face therefore issues these requests itself:
//
//   - The request's id is a string naming the issuing process and 8 random bytes:
//     relayIDPrefix + hex(process id) + "-" + hex(random).
//   - It is written on the event stream of the POST whose call caused it, upgrading that
//     response to a stream if it is not one yet (the streamable HTTP transport lets a
//     server send requests related to a POST on its stream); mcp-go's own writes of that
//     response go on around it, its final JSON response as the stream's last event. A
//     client that does not accept an event stream there has it on its session's GET
//     stream: this process's, or, through the state store's bus, the process's that holds
//     it (recorded in the store while it is open, under sessionStreamPrefix).
//   - The client's answer, a POST of the session carrying JSON-RPC responses whose ids
//     are the face's, is taken before mcp-go sees it: handed to the waiting call when this
//     process issued the request, else sent over the bus to the process that did (bounded
//     by mcp_face.mrtr.forward_timeout), and answered 202. Only the session the request
//     was sent to may answer it: the session ID is bound to its caller (session.go), and
//     an answer from another session is refused (403).
//
// Stdio and legacy SSE sessions live with their one connection: mcp-go relays their
// requests as before.

const (
	relayIDPrefix       = "gatehouse-relay-"
	sessionStreamPrefix = "mcp-session-stream:" // + the session token's name → the process id holding its GET stream
)

// relay25 is the face's relayed requests: those waiting for their answer, and the GET
// streams this process holds.
type relay25 struct {
	m        *mrtr // the bus, this process's id, and the face's life
	kv       state.KV
	sessions *mcpSessions
	log      *slog.Logger

	mu      sync.Mutex
	pending map[string]*relayPending  // request id → the call waiting for its answer
	streams map[string][]*relayWriter // session ID → its GET streams open on this process
}

// relayPending is a request waiting for its client's answer.
type relayPending struct {
	session string               // the session ID it was sent to
	answer  chan json.RawMessage // the client's JSON-RPC response (capacity 1)
}

func newRelay25(m *mrtr, kv state.KV, sessions *mcpSessions, log *slog.Logger) *relay25 {
	r := &relay25{m: m, kv: kv, sessions: sessions, log: log,
		pending: map[string]*relayPending{}, streams: map[string][]*relayWriter{}}
	m.relay = r.serveBus
	return r
}

// handles reports the session ID of the peer's session when the face relays its
// requests itself: a signed session of the streamable HTTP transport.
func (r *relay25) handles(p *mcpPeer) (string, bool) {
	if r == nil {
		return "", false
	}
	id := sessionID(p.ctx)
	if id == "" {
		return "", false
	}
	if _, err := r.sessions.signer.verify(id); err != nil {
		return "", false
	}
	return id, true
}

// request sends the JSON-RPC request method/params to the client of session sid and
// waits for its answer: the result, or an error. ctx is the call's.
func (r *relay25) request(ctx context.Context, sid string, fr *faceRequest, method string, params json.RawMessage) (json.RawMessage, error) {
	if r.m.bus != nil {
		if err := r.m.listen(); err != nil { // the answer may come through another replica
			return nil, gateway.Errorf(schemas.CodeUnavailable, "The state store's bus did not answer").Wrap(err)
		}
	}
	var rb [8]byte
	_, _ = rand.Read(rb[:])
	id := relayIDPrefix + r.m.self.String() + "-" + hex.EncodeToString(rb[:])
	p := &relayPending{session: sid, answer: make(chan json.RawMessage, 1)}
	r.mu.Lock()
	r.pending[id] = p
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.pending, id)
		r.mu.Unlock()
	}()
	msg, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      string          `json:"id"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params,omitempty"`
	}{mcp.JSONRPC_VERSION, id, method, params})
	if err != nil {
		return nil, gateway.Errorf(schemas.CodeInvalidParams, "The upstream's %s params are malformed", method).Wrap(err)
	}
	if err := r.deliver(ctx, sid, fr, msg); err != nil {
		return nil, err
	}
	select {
	case raw := <-p.answer:
		var resp struct {
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(raw, &resp); err != nil {
			return nil, fmt.Errorf("malformed %s response: %w", method, err)
		}
		if resp.Error != nil { // as mcp-go words it
			return nil, fmt.Errorf("%s error %d: %s", method, resp.Error.Code, resp.Error.Message)
		}
		return resp.Result, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// deliver writes the request msg to the client of session sid: on the stream of the POST
// whose call caused it, else on the session's GET stream here or on another process.
func (r *relay25) deliver(ctx context.Context, sid string, fr *faceRequest, msg []byte) error {
	if fr != nil && fr.relay != nil && fr.relay.inject(msg) {
		return nil
	}
	if r.injectLocal(sid, msg) {
		return nil
	}
	t, err := r.sessions.signer.verify(sid)
	if err != nil {
		return gateway.Errorf(schemas.CodeInvalidRequest, "The calling MCP session is unknown")
	}
	noStream := gateway.Errorf(schemas.CodeUnavailable,
		"The calling MCP client has no event stream open to receive the request: neither the call's response accepts one nor is a GET stream open")
	if r.kv == nil || r.m.bus == nil {
		return noStream
	}
	holder, ok, err := r.kv.Get(ctx, sessionStreamPrefix+t.name)
	switch {
	case err != nil:
		return gateway.Errorf(schemas.CodeUnavailable, "The session store is unavailable").Wrap(err)
	case !ok || string(holder) == r.m.self.String():
		return noStream
	}
	out := r.m.ask(ctx, string(holder), mrtrWire{Kind: relayKindDeliver, Session: sid, Responses: map[string]json.RawMessage{"request": msg}},
		relayLost("the client's GET stream"))
	if out.Err != nil {
		return out.Err
	}
	if out.WireErr != nil {
		return out.WireErr.toError()
	}
	return nil
}

// injectLocal writes msg on a GET stream of session sid this process holds.
func (r *relay25) injectLocal(sid string, msg []byte) bool {
	r.mu.Lock()
	ws := append([]*relayWriter(nil), r.streams[sid]...)
	r.mu.Unlock()
	for _, w := range slices.Backward(ws) { // the newest first
		if w.inject(msg) {
			return true
		}
	}
	return false
}

// serveBus answers a relayed message another process sent this one.
func (r *relay25) serveBus(w mrtrWire) mrtrOutcome {
	switch w.Kind {
	case relayKindAnswer:
		return r.accept(w.Session, w.Responses)
	case relayKindDeliver:
		if r.injectLocal(w.Session, w.Responses["request"]) {
			return mrtrOutcome{}
		}
		return mrtrOutcome{Err: gateway.Errorf(schemas.CodeUnavailable, "The calling MCP client's GET stream is closed")}
	}
	return mrtrOutcome{Err: gateway.NewError(schemas.CodeInvalidRequest)}
}

// accept hands answers (request id → JSON-RPC response) posted on session sid to the
// calls waiting for them: an answer to a request sent to another session is refused; one
// to a request no call waits for any more is reported as such.
func (r *relay25) accept(sid string, answers map[string]json.RawMessage) mrtrOutcome {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id := range answers {
		if p := r.pending[id]; p != nil && p.session != sid {
			return mrtrOutcome{Err: gateway.Errorf(schemas.CodeAuthorization, "The request %s was not sent to this MCP session", id)}
		}
	}
	var gone []string
	for id, raw := range answers {
		p := r.pending[id]
		if p == nil {
			gone = append(gone, id)
			continue
		}
		select {
		case p.answer <- raw:
		default: // answered already
		}
	}
	if len(gone) > 0 {
		return mrtrOutcome{Err: gateway.Errorf(schemas.CodeInvalidRequest, "No call waits for the answer to %s any more", strings.Join(gone, ", "))}
	}
	return mrtrOutcome{}
}

// relayAnswers parses body as a JSON-RPC response, or a batch of them, to requests the
// face relayed; ok is false when it is anything else (mcp-go's to handle).
func relayAnswers(body []byte) (map[string]json.RawMessage, bool) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || !bytes.Contains(body, []byte(`"`+relayIDPrefix)) {
		return nil, false
	}
	var items []json.RawMessage
	if body[0] == '[' {
		if json.Unmarshal(body, &items) != nil || len(items) == 0 {
			return nil, false
		}
	} else {
		items = []json.RawMessage{body}
	}
	out := make(map[string]json.RawMessage, len(items))
	for _, it := range items {
		var m struct {
			ID     any             `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal(it, &m) != nil || m.Method != "" || (m.Result == nil && m.Error == nil) {
			return nil, false
		}
		id, ok := m.ID.(string)
		if !ok || relayOwner(id) == "" {
			return nil, false
		}
		out[id] = it
	}
	return out, true
}

// relayOwner is the process id a relayed request's id names; "" if it names none.
func relayOwner(id string) string {
	rest, ok := strings.CutPrefix(id, relayIDPrefix)
	if !ok || len(rest) != 2*mrtrIDBytes+1+16 || rest[2*mrtrIDBytes] != '-' {
		return ""
	}
	if _, err := hex.DecodeString(rest[:2*mrtrIDBytes]); err != nil {
		return ""
	}
	return rest[:2*mrtrIDBytes]
}

// serveAnswer takes r, a POST of a checked 2025-11-25 session, when its body answers
// requests the face relayed (relayAnswers): each answer goes to the process that issued
// its request. It reports whether it answered r.
func (r *relay25) serveAnswer(w http.ResponseWriter, req *http.Request, fr *faceRequest) bool {
	if r == nil {
		return false
	}
	answers, ok := relayAnswers(fr.body)
	if !ok {
		return false
	}
	sid := req.Header.Get(mcpserver.HeaderKeySessionID)
	byOwner := map[string]map[string]json.RawMessage{}
	for id, raw := range answers {
		o := relayOwner(id)
		if byOwner[o] == nil {
			byOwner[o] = map[string]json.RawMessage{}
		}
		byOwner[o][id] = raw
	}
	var failed *gateway.Error
	for owner, batch := range byOwner {
		var out mrtrOutcome
		switch {
		case owner == r.m.self.String():
			out = r.accept(sid, batch)
		case r.m.bus == nil:
			out.Err = gateway.Errorf(schemas.CodeUnavailable, "Another gateway process issued the request, and the state store has no bus to reach it")
		default:
			if err := r.m.listen(); err != nil {
				out.Err = gateway.Errorf(schemas.CodeUnavailable, "The state store's bus did not answer").Wrap(err)
				break
			}
			out = r.m.ask(req.Context(), owner, mrtrWire{Kind: relayKindAnswer, Session: sid, Responses: batch}, relayLost("the request"))
			if out.Err == nil && out.WireErr != nil {
				out.Err = out.WireErr.toError()
			}
		}
		if out.Err != nil && (failed == nil || out.Err.Code() == schemas.CodeAuthorization) {
			failed = out.Err
		}
	}
	if failed == nil {
		w.WriteHeader(http.StatusAccepted)
		return true
	}
	r.log.DebugContext(req.Context(), "MCP relay: a client's answer was not delivered", "err", failed)
	status := http.StatusBadRequest // as mcp-go answers an answer no request waits for: the session lives on
	switch failed.Code() {
	case schemas.CodeAuthorization:
		status = http.StatusForbidden
	case schemas.CodeUnavailable, schemas.CodeShuttingDown:
		status = http.StatusServiceUnavailable
	}
	faces.WriteHTTPError(w, status, failed, observability.NewTraceID(), faces.EncodingJSON)
	return true
}

// openStream registers the GET stream w of session sid while it is open, and records in
// the state store that this process holds it; the returned func closes it.
func (r *relay25) openStream(ctx context.Context, sid string, w *relayWriter) func() {
	if r == nil || sid == "" {
		return func() {}
	}
	t, err := r.sessions.signer.verify(sid)
	if err != nil {
		return func() {}
	}
	r.mu.Lock()
	r.streams[sid] = append(r.streams[sid], w)
	r.mu.Unlock()
	key := sessionStreamPrefix + t.name
	recorded := false
	if r.kv != nil && r.m.bus != nil {
		if err := r.m.listen(); err != nil {
			r.log.Warn("MCP relay: the state store's bus did not answer; the session's GET stream takes requests of this process only", "err", err)
		} else if err := r.kv.Set(ctx, key, []byte(r.m.self.String()), max(r.sessions.remaining(t), time.Millisecond)); err != nil {
			r.log.Warn("MCP relay: recording the session's GET stream", "err", err)
		} else {
			recorded = true
		}
	}
	return func() {
		w.close()
		r.mu.Lock()
		ws := r.streams[sid]
		for i, x := range ws {
			if x == w {
				ws = append(ws[:i], ws[i+1:]...)
				break
			}
		}
		if len(ws) == 0 {
			delete(r.streams, sid)
		} else {
			r.streams[sid] = ws
		}
		r.mu.Unlock()
		if !recorded || len(ws) > 0 {
			return
		}
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.m.cfg.forwardTimeout())
		defer cancel()
		if v, ok, err := r.kv.Get(dctx, key); err == nil && ok && string(v) == r.m.self.String() {
			_, _ = r.kv.Delete(dctx, key)
		}
	}
}

// relayWriter is the response writer mcp-go writes a session's event stream to (a POST's
// response, or the GET stream), into which the face writes its own relayed requests as
// whole events between mcp-go's writes. A POST response that is not a stream yet becomes
// one for the request; mcp-go's later JSON response is then written as the stream's last
// event.
type relayWriter struct {
	http.ResponseWriter
	mu       sync.Mutex
	get      bool // the GET stream: mcp-go opens it
	accepts  bool // the client accepts an event stream here
	sent     bool // the header is written
	stream   bool // … as an event stream
	ours     bool // the face made the POST's response a stream
	jsonBody bool // mcp-go then wrote a JSON response's header: its body becomes an event
	closed   bool
	// hdr is the header mcp-go sets, copied to the response's when it writes it: the face
	// may write the response's header (inject) while mcp-go sets its own.
	hdr http.Header
}

func newRelayWriter(w http.ResponseWriter, r *http.Request, get bool) *relayWriter {
	accepts := false
	for _, v := range r.Header.Values("Accept") {
		if strings.Contains(v, "text/event-stream") {
			accepts = true
		}
	}
	return &relayWriter{ResponseWriter: w, get: get, accepts: accepts, hdr: w.Header().Clone()}
}

// Header is the header mcp-go sets.
func (w *relayWriter) Header() http.Header { return w.hdr }

// sendHeader copies mcp-go's header to the response's, as its header is written.
func (w *relayWriter) sendHeader() {
	w.sent = true
	w.stream = strings.HasPrefix(w.hdr.Get("Content-Type"), "text/event-stream")
	maps.Copy(w.ResponseWriter.Header(), w.hdr)
}

func (w *relayWriter) WriteHeader(status int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ours {
		w.jsonBody = faces.IsJSON(w.hdr.Get("Content-Type"))
		return
	}
	if !w.sent {
		w.sendHeader()
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *relayWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ours && w.jsonBody {
		if _, err := w.writeEvent(bytes.TrimSpace(b)); err != nil {
			return 0, err
		}
		return len(b), nil
	}
	if !w.sent {
		w.sendHeader()
	}
	return w.ResponseWriter.Write(b)
}

// Flush implements http.Flusher, which mcp-go needs to stream.
func (w *relayWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.flush()
}

func (w *relayWriter) flush() {
	if fl, ok := w.ResponseWriter.(http.Flusher); ok {
		fl.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *relayWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *relayWriter) writeEvent(data []byte) (int, error) {
	ev := make([]byte, 0, len(data)+24)
	ev = append(ev, "event: message\ndata: "...)
	ev = append(ev, data...)
	ev = append(ev, "\n\n"...)
	return w.ResponseWriter.Write(ev)
}

// inject writes msg as an event of the stream; false when it cannot: the response is
// over, is not a stream and cannot become one, or the write failed.
func (w *relayWriter) inject(msg []byte) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.closed || !w.accepts:
		return false
	case !w.sent && w.get: // mcp-go has not opened the stream yet
		return false
	case !w.sent:
		h := w.ResponseWriter.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Connection", "keep-alive")
		h.Set("Cache-Control", "no-cache")
		w.ResponseWriter.WriteHeader(http.StatusOK)
		w.sent, w.stream, w.ours = true, true, true
	case !w.stream:
		return false
	}
	if _, err := w.writeEvent(msg); err != nil {
		return false
	}
	w.flush()
	return true
}

// close ends injection: the handler is through with the response.
func (w *relayWriter) close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
}
