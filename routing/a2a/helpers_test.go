package a2a_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/gatehouse-dev/gatehouse/routing/a2a"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// request is one JSON-RPC request the fake agent received, with its headers.
type request struct {
	Method string
	Params json.RawMessage
	Header http.Header
}

// agent is a fake A2A agent: a card and a JSON-RPC endpoint answering by a handler.
type agent struct {
	srv *httptest.Server

	mu       sync.Mutex
	card     []byte
	requests []request
	// answer returns the result of a non-streaming request (or an error object as
	// {"error":…} when it starts with {"error").
	answer func(r request) string
	// events are the results a streaming request is answered with, one SSE event each;
	// hold, when set, is waited on after them (a slow skill).
	events []string
	hold   chan struct{}
}

func newAgent(t *testing.T) *agent {
	t.Helper()
	a := &agent{}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/agent-card.json", func(w http.ResponseWriter, _ *http.Request) {
		a.mu.Lock()
		c := a.card
		a.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(c)
	})
	mux.HandleFunc("/rpc", a.rpc)
	a.srv = httptest.NewServer(mux)
	t.Cleanup(a.srv.Close)
	return a
}

func (a *agent) setCard(c []byte) {
	a.mu.Lock()
	a.card = c
	a.mu.Unlock()
}

func (a *agent) seen() []request {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]request(nil), a.requests...)
}

func (a *agent) rpc(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	_ = json.Unmarshal(body, &req)
	rq := request{Method: req.Method, Params: req.Params, Header: r.Header.Clone()}
	a.mu.Lock()
	a.requests = append(a.requests, rq)
	answer, events, hold := a.answer, a.events, a.hold
	a.mu.Unlock()
	if r.Header.Get("Accept") == "text/event-stream" {
		w.Header().Set("Content-Type", "text/event-stream")
		bw := bufio.NewWriter(w)
		for _, e := range events {
			fmt.Fprintf(bw, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":%s}\n\n", req.ID, e)
			_ = bw.Flush()
			w.(http.Flusher).Flush()
		}
		if hold != nil {
			select {
			case <-hold:
			case <-r.Context().Done():
			}
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	res := answer(rq)
	if strings.HasPrefix(res, `{"error"`) {
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,%s`, req.ID, res[1:])
		return
	}
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, req.ID, res)
}

// card10 is a 1.0 card whose JSON-RPC interface is the agent's /rpc.
func (a *agent) card10(streaming bool, skills ...string) []byte {
	return cardJSON(a.srv.URL+"/rpc", "1.0", streaming, skills...)
}

func cardJSON(url, version string, streaming bool, skills ...string) []byte {
	var sk []map[string]any
	for _, s := range skills {
		sk = append(sk, map[string]any{"id": s, "name": s, "description": "Skill " + s, "tags": []string{"test"}})
	}
	c := map[string]any{
		"name": "fake", "description": "a fake agent", "version": "1",
		"supportedInterfaces": []map[string]any{{"url": url, "protocolBinding": "JSONRPC", "protocolVersion": version}},
		"capabilities":        map[string]any{"streaming": streaming},
		"defaultInputModes":   []string{"text/plain"}, "defaultOutputModes": []string{"text/plain"},
		"skills": sk,
	}
	b, _ := json.Marshal(c)
	return b
}

// start returns the target of an agent section for a, with its card loaded.
func start(t *testing.T, a *agent, mut func(*a2a.Config)) *a2a.Target {
	t.Helper()
	cfg := a2a.Config{Name: "fake", CardURL: a.srv.URL}
	if mut != nil {
		mut(&cfg)
	}
	tg, err := a2a.New(cfg, a2a.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tg.Close() })
	waitCard(t, tg)
	return tg
}

func waitCard(t *testing.T, tg *a2a.Target) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for tg.Ready(ctx) != nil {
		if ctx.Err() != nil {
			t.Fatalf("the card did not load: %v", tg.Ready(context.Background()))
		}
		time.Sleep(5 * time.Millisecond)
	}
}
