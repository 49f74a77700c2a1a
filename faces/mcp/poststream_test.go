package mcpface

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestPostStream: the face's events and mcp-go's writes share one response. Whichever
// starts it first decides the status and headers; mcp-go's second WriteHeader is dropped;
// the face adds events only to an event stream; notifications a call's callStream took
// before it finished are written before mcp-go's final event, later ones are dropped; mcp-go's
// writes and the face's run concurrently (the race detector checks the serialization).
func TestPostStream(t *testing.T) {
	const final = `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`
	tests := []struct {
		name       string
		mcpGoFirst string // what mcp-go writes before the call's notifications: "", "sse" or "json"
		notes      int
		wantType   string
		wantEvents int // events in the body, the final one included; -1: a JSON body
	}{
		{"the face starts the stream", "", 3, "text/event-stream", 4},
		{"mcp-go started the stream", "sse", 3, "text/event-stream", 5},
		{"mcp-go answered JSON first", "json", 3, "application/json", -1},
		{"no notification", "", 0, "application/json", -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			rec.Header().Set("X-Before", "kept")
			r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
			ps, pr := withPostStream(rec, r)
			sess := &streamSession{ch: make(chan mcp.JSONRPCNotification, 1)}
			st := postCallStream(context.WithValue(pr.Context(), postStreamKey{}, ps))
			st.sess = sess
			sse := func() { // mcp-go's upgrade, as its forwarder writes it
				ps.Header().Set("Content-Type", "text/event-stream")
				ps.WriteHeader(http.StatusOK)
				_, _ = ps.Write([]byte("event: message\ndata: {\"mcp-go\":1}\n\n"))
				ps.Flush()
			}
			switch tt.mcpGoFirst {
			case "sse":
				sse()
			case "json":
				ps.Header().Set("Content-Type", "application/json")
				ps.WriteHeader(http.StatusOK)
			}
			var wg sync.WaitGroup
			for i := range tt.notes {
				wg.Go(func() { st.send(progressNotification(map[string]any{"progressToken": "t", "progress": i})) })
			}
			wg.Wait()
			st.finish()
			st.send(progressNotification(map[string]any{"progressToken": "late", "progress": 9}))
			switch {
			case tt.mcpGoFirst == "json":
				_, _ = ps.Write([]byte(final))
			case sess.upgraded.Load() || tt.mcpGoFirst == "sse": // mcp-go's final event
				ps.Header().Set("Content-Type", "text/event-stream")
				ps.WriteHeader(http.StatusOK)
				_, _ = ps.Write([]byte("event: message\ndata: " + final + "\n\n"))
			default:
				ps.Header().Set("Content-Type", "application/json")
				ps.WriteHeader(http.StatusOK)
				_, _ = ps.Write([]byte(final))
			}
			if got := rec.Header().Get("Content-Type"); got != tt.wantType || rec.Header().Get("X-Before") != "kept" {
				t.Fatalf("headers %v, want Content-Type %s", rec.Header(), tt.wantType)
			}
			body := rec.Body.String()
			if strings.Contains(body, "late") {
				t.Fatalf("a notification after the call was written:\n%s", body)
			}
			if tt.wantEvents < 0 {
				if body != final {
					t.Fatalf("body %q, want %q", body, final)
				}
				return
			}
			events := strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n")
			if len(events) != tt.wantEvents || events[len(events)-1] != "event: message\ndata: "+final {
				t.Fatalf("%d events, want %d ending with the result:\n%s", len(events), tt.wantEvents, body)
			}
			if tt.notes > 0 && !sess.upgraded.Load() {
				t.Fatal("the session is not marked as streaming, so mcp-go would answer JSON")
			}
		})
	}
}
