package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"golang.org/x/tools/txtar"

	"github.com/gatehouse-dev/gatehouse/codecs/msgpack"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/capability"
	"github.com/gatehouse-dev/gatehouse/routing/nekte"
)

// nekteGoldenDir holds the NEKTE wire goldens. They are not in testdata/*/ itself, where
// TestGolden and TestGoldenMsgpack replay every file on one stateless server: NEKTE
// exchanges create tasks and envelopes, so each face replays them on a server of its own.
const nekteGoldenDir = "testdata/gatehouse/nekte"

// nekteGoldenConfig is added to baseConfig with the demo MCP fixtures (withDemoMCP) for
// the NEKTE goldens: a fixed receipt key (so kid and the source check are stable) and a
// short poll interval.
const nekteGoldenConfig = `nekte:
  receipts: {key_file: ` + nekteGoldenDir + `/receipt-key.pem}
  tasks: {poll_interval: 50ms}
`

// goldenFace is one way the NEKTE goldens are replayed.
type goldenFace struct {
	name    string
	ws      bool // over WebSocket (one connection per exchange), else HTTP POST /rpc
	msgpack bool // the request in MessagePack (a binary message on WebSocket)
}

var goldenFaces = []goldenFace{
	{name: "http"},
	{name: "websocket", ws: true},
	{name: "msgpack-http", msgpack: true},
	{name: "msgpack-websocket", ws: true, msgpack: true},
}

// TestGoldenNEKTE replays testdata/gatehouse/nekte/*.txtar — every NEKTE primitive and
// every NEKTE error code the gateway can raise — over HTTP (named-event results as SSE,
// compared byte for byte), over WebSocket (the same events as $/event notifications, then
// the count), and both again with the requests in MessagePack. Each face has a server of
// its own, which replays the files in order. Sections per exchange N:
//
//	N.send     the request (JSON; sent as MessagePack on the msgpack faces)
//	N.spec     optional: members the response must have (a subset check)
//	N.golden   the exact response: a JSON-RPC response, or the SSE body of a stream
//	N.detach   optional: once the stream has sent a frame containing this text, the next
//	           exchange goes ahead; the stream is read to its end after the last exchange
//	N.sleep    optional: a duration to wait before N is sent (to let a lifetime run out)
//
// Trace ids, timings (meta.ms, cost.avg_ms, sample.ms), epoch timestamps and receipts vary
// from run to run and are normalized (nekteNormalize). -update rewrites the goldens from
// the HTTP face.
func TestGoldenNEKTE(t *testing.T) {
	files, _ := filepath.Glob(nekteGoldenDir + "/*.txtar")
	if len(files) < 6 {
		t.Fatalf("found only %d NEKTE golden files", len(files))
	}
	for _, face := range goldenFaces {
		t.Run(face.name, func(t *testing.T) {
			g := startNekteGolden(t)
			for _, file := range files {
				t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
					g.replay(t, face, file)
				})
			}
		})
	}
}

// nekteGolden is a server the goldens of one face run on.
type nekteGolden struct {
	ts *testServer
}

func startNekteGolden(t *testing.T) *nekteGolden {
	t.Helper()
	cfg, err := Parse("golden.yaml", []byte(withDemoMCP(t, baseConfig, "")+nekteGoldenConfig))
	if err != nil {
		t.Fatal(err)
	}
	return &nekteGolden{ts: startOptions(t, cfg, Options{Targets: map[string]gateway.Target{"test.hold": holdTarget{}}}, nil)}
}

// nekteExchange is one exchange of a NEKTE golden file.
type nekteExchange struct {
	goldenExchange
	detach, sleep string
}

func (g *nekteGolden) replay(t *testing.T, face goldenFace, file string) {
	ar, err := txtar.ParseFile(file)
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]string{}
	for _, f := range ar.Files {
		sections[f.Name] = string(f.Data)
	}
	type detached struct {
		ex nekteExchange
		r  *goldenReply
	}
	var open []detached
	for _, base := range parseExchanges(t, ar) {
		n := strconv.Itoa(base.n)
		ex := nekteExchange{goldenExchange: base, detach: strings.TrimSpace(sections[n+".detach"]), sleep: strings.TrimSpace(sections[n+".sleep"])}
		if ex.sleep != "" {
			d, err := time.ParseDuration(ex.sleep)
			if err != nil {
				t.Fatalf("exchange %s: sleep: %v", n, err)
			}
			time.Sleep(d)
		}
		r := g.send(t, face, ex.send)
		if ex.detach != "" {
			r.waitFor(t, ex.detach)
			open = append(open, detached{ex, r})
			continue
		}
		g.check(t, face, ar, ex, r.wait(t))
	}
	for _, d := range open {
		g.check(t, face, ar, d.ex, d.r.wait(t))
	}
	if *update && face.name == goldenFaces[0].name {
		if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// check compares what exchange ex received on face with its golden (and spec), or, with
// -update on the first face, records it.
func (g *nekteGolden) check(t *testing.T, face goldenFace, ar *txtar.Archive, ex nekteExchange, got goldenResult) {
	t.Helper()
	body := nekteNormalize(got.body)
	if got.stream {
		body = strings.TrimSuffix(body, "\n") // normalize ended it with one more
	}
	if *update && face.name == goldenFaces[0].name {
		setExchangeSection(ar, ex.n, "golden", body)
		return
	}
	if strings.TrimSpace(ex.spec) != "" && !got.stream && !jsonSubset(t, ex.spec, got.json) {
		t.Errorf("exchange %d over %s: got %s, want (as a subset) %s", ex.n, face.name, got.json, ex.spec)
	}
	want := ex.golden
	if face.ws && strings.HasPrefix(want, "event: ") {
		want = wsEvents(t, ex.send, want)
	}
	if body != want {
		t.Errorf("exchange %d over %s differs from golden:\n got %s\nwant %s(run go test -update to accept)", ex.n, face.name, body, want)
	}
}

// setExchangeSection sets section N.name of ar, adding it after exchange N's other
// sections when it is new, so each exchange's sections stay together.
func setExchangeSection(ar *txtar.Archive, n int, name, data string) {
	full, prefix := strconv.Itoa(n)+"."+name, strconv.Itoa(n)+"."
	at := len(ar.Files)
	for i, f := range ar.Files {
		if f.Name == full {
			ar.Files[i].Data = []byte(data)
			return
		}
		if strings.HasPrefix(f.Name, prefix) {
			at = i + 1
		}
	}
	ar.Files = append(ar.Files[:at], append([]txtar.File{{Name: full, Data: []byte(data)}}, ar.Files[at:]...)...)
}

// goldenResult is what one exchange received: a JSON-RPC response (json), or a stream —
// the SSE body over HTTP, the messages (one per line) over WebSocket.
type goldenResult struct {
	body   string
	json   string // the response, when it is one JSON text
	stream bool
}

// goldenReply reads one exchange's answer in the background, so a detached stream can go
// on while later exchanges run.
type goldenReply struct {
	mu      sync.Mutex
	buf     strings.Builder
	changed chan struct{} // signalled on every append
	done    chan struct{}
	stream  bool
	err     error
}

func newGoldenReply(stream bool) *goldenReply {
	return &goldenReply{changed: make(chan struct{}, 1), done: make(chan struct{}), stream: stream}
}

func (r *goldenReply) add(s string) {
	r.mu.Lock()
	r.buf.WriteString(s)
	r.mu.Unlock()
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

func (r *goldenReply) finish(err error) {
	r.mu.Lock()
	r.err = err
	r.mu.Unlock()
	close(r.done)
}

func (r *goldenReply) text() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.buf.String()
}

// waitFor waits until the reply contains s.
func (r *goldenReply) waitFor(t *testing.T, s string) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for !strings.Contains(r.text(), s) {
		select {
		case <-r.changed:
		case <-r.done:
			if !strings.Contains(r.text(), s) {
				t.Fatalf("the reply ended without %q: %s", s, r.text())
			}
		case <-deadline:
			t.Fatalf("no %q within 20s: %s", s, r.text())
		}
	}
}

// wait waits for the reply's end and returns it.
func (r *goldenReply) wait(t *testing.T) goldenResult {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the reply did not end within 30s: %s", r.text())
	}
	if r.err != nil {
		t.Fatalf("reading the reply: %v (so far %s)", r.err, r.text())
	}
	body := r.text()
	res := goldenResult{body: body, stream: r.stream}
	if !r.stream {
		res.json = body
	}
	return res
}

// send sends a request on face and returns its reply, being read.
func (g *nekteGolden) send(t *testing.T, face goldenFace, send string) *goldenReply {
	t.Helper()
	if face.ws {
		return g.sendWS(t, face, send)
	}
	return g.sendHTTP(t, face, send)
}

func (g *nekteGolden) sendHTTP(t *testing.T, face goldenFace, send string) *goldenReply {
	t.Helper()
	body, ct := []byte(send), "application/json"
	if face.msgpack {
		body, ct = mpFromJSON(t, send), msgpack.ContentType
	}
	req, err := http.NewRequest(http.MethodPost, g.ts.base+"/rpc", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", ct)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		_ = resp.Body.Close()
		t.Fatalf("status %d", resp.StatusCode)
	}
	stream := resp.Header.Get("Content-Type") == "text/event-stream"
	if stream {
		checkSSEHeaders(t, resp.Header)
	} else if want := map[bool]string{false: "application/json", true: msgpack.ContentType}[face.msgpack]; resp.Header.Get("Content-Type") != want {
		t.Errorf("Content-Type %q, want %q", resp.Header.Get("Content-Type"), want)
	}
	r := newGoldenReply(stream)
	go func() {
		defer func() { _ = resp.Body.Close() }()
		if !stream {
			b, err := io.ReadAll(resp.Body)
			if err == nil && face.msgpack {
				b, err = msgpackToJSON(b)
			}
			r.add(string(b))
			r.finish(err)
			return
		}
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			r.add(string(buf[:n]))
			if err != nil {
				if errors.Is(err, io.EOF) {
					err = nil
				}
				r.finish(err)
				return
			}
		}
	}()
	return r
}

// checkSSEHeaders checks the headers an event stream must carry (nekte-wire.md).
func checkSSEHeaders(t *testing.T, h http.Header) {
	t.Helper()
	for k, v := range map[string]string{"Cache-Control": "no-cache", "Connection": "keep-alive", "X-Accel-Buffering": "no"} {
		if h.Get(k) != v {
			t.Errorf("event stream header %s: %q, want %q", k, h.Get(k), v)
		}
	}
}

func (g *nekteGolden) sendWS(t *testing.T, face goldenFace, send string) *goldenReply {
	t.Helper()
	c := dialWS(t, g.ts, nil)
	kind, msg := websocket.TextMessage, []byte(send)
	if face.msgpack {
		kind, msg = websocket.BinaryMessage, mpFromJSON(t, send)
	}
	if err := c.WriteMessage(kind, msg); err != nil {
		t.Fatal(err)
	}
	r := newGoldenReply(strings.Contains(send, `"nekte.delegate"`) || strings.Contains(send, `"nekte.task.stream"`))
	id := requestID(t, send)
	go func() {
		for {
			_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
			mt, b, err := c.ReadMessage()
			if err == nil && mt != kind {
				err = fmt.Errorf("a message of type %d answered one of type %d", mt, kind)
			}
			if err == nil && face.msgpack {
				b, err = msgpackToJSON(b)
			}
			if err != nil {
				r.finish(err)
				return
			}
			line := string(bytes.TrimSpace(b))
			var m struct {
				Method string          `json:"method"`
				ID     json.RawMessage `json:"id"`
			}
			_ = json.Unmarshal(b, &m)
			if !r.stream {
				r.add(line)
			} else {
				r.add(line + "\n")
			}
			if m.Method == "" && string(m.ID) == id {
				r.finish(nil)
				return
			}
		}
	}()
	return r
}

// msgpackToJSON reads a MessagePack answer back as JSON.
func msgpackToJSON(b []byte) ([]byte, error) {
	if len(b) == 0 {
		return b, nil
	}
	return msgpack.ToJSON(b, msgpack.Limits{})
}

// requestID returns the raw id of a JSON-RPC request.
func requestID(t *testing.T, send string) string {
	t.Helper()
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if err := json.Unmarshal([]byte(send), &m); err != nil || len(m.ID) == 0 {
		t.Fatalf("a golden request needs an id: %s", send)
	}
	return string(m.ID)
}

// wsEvents turns the SSE body of a golden into what WebSocket delivers for the same
// stream: each event as a $/event notification tied to the request id, then the count.
func wsEvents(t *testing.T, send, sse string) string {
	t.Helper()
	id := requestID(t, send)
	var b strings.Builder
	frames := strings.Split(strings.TrimSuffix(sse, "\n\n"), "\n\n")
	for _, f := range frames {
		name, data, ok := strings.Cut(f, "\ndata: ")
		if !ok || !strings.HasPrefix(name, "event: ") {
			t.Fatalf("golden frame %q is not event: X\\ndata: Y", f)
		}
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","method":"$/event","params":{"id":%s,"event":%q,"data":%s}}`+"\n", id, strings.TrimPrefix(name, "event: "), data)
	}
	fmt.Fprintf(&b, `{"jsonrpc":"2.0","result":{"events":%d},"id":%s}`+"\n", len(frames), id)
	return b.String()
}

// nekteVolatile are the parts of NEKTE answers that vary from run to run, with what they
// are replaced by: timings are left out (a zero one is absent anyway), epoch timestamps
// and receipts are replaced by placeholders.
var nekteVolatile = []struct {
	re   *regexp.Regexp
	with string
}{
	{traceRE, `"trace_id":"TRACE"`},
	{regexp.MustCompile(`,"(ms|avg_ms)":\d+`), ``},
	{regexp.MustCompile(`"(ms|avg_ms)":\d+,`), ``},
	{regexp.MustCompile(`\{"(ms|avg_ms)":\d+\}`), `{}`},
	{regexp.MustCompile(`"(created_at|updated_at|completed_at)":\d+`), `"$1":TIME`},
	{regexp.MustCompile(`"receipt":"[A-Za-z0-9_.-]+"`), `"receipt":"RECEIPT"`},
}

// nekteNormalize applies nekteVolatile and ends the text with a newline (as a txtar
// section does).
func nekteNormalize(body string) string {
	if body == "" {
		return ""
	}
	for _, v := range nekteVolatile {
		body = v.re.ReplaceAllString(body, v.with)
	}
	return body + "\n"
}

// holdTarget serves the built-in capability "hold" of the NEKTE lifecycle tests: it
// reports progress 1 of 2, then waits until its call ends (a cancel, a suspend, a
// timeout). Run from a checkpoint (nekte.task.resume), it reports 2 of 2 and answers
// {"resumed_from": <the checkpoint's progress>}.
type holdTarget struct{}

var _ capability.Provider = holdTarget{}

func (holdTarget) Name() string { return "hold" }

func (holdTarget) Capabilities() []capability.Capability {
	return []capability.Capability{{
		ID:          "hold",
		Description: "Holds until cancelled or suspended; resumed, completes from its checkpoint.",
		Input:       json.RawMessage(`{"type":"object"}`),
		Output:      json.RawMessage(`{"type":"object","properties":{"resumed_from":{"type":"integer"}}}`),
		Method:      "test.hold",
		Kind:        capability.KindBuiltin,
		Source:      "test",
	}}
}

func (holdTarget) Invoke(ctx context.Context, _ *gateway.Call) (*gateway.Result, error) {
	total := 2.0
	report := gateway.ProgressFrom(ctx)
	if report == nil {
		report = func(gateway.Progress) {}
	}
	if cp, ok := nekte.CheckpointFrom(ctx); ok {
		report(gateway.Progress{Progress: 2, Total: &total})
		return gateway.NewResult(fmt.Appendf(nil, `{"resumed_from":%d}`, cp.Progress.Processed)), nil
	}
	report(gateway.Progress{Progress: 1, Total: &total})
	<-ctx.Done()
	return nil, gateway.AsError(ctx.Err())
}
