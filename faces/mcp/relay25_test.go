package mcpface

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestRelayAnswers(t *testing.T) {
	owner := strings.Repeat("0a", mrtrIDBytes)
	id := relayIDPrefix + owner + "-" + strings.Repeat("11", 8)
	id2 := relayIDPrefix + owner + "-" + strings.Repeat("22", 8)
	tests := []struct {
		name string
		body string
		want []string // the ids taken; nil: left to mcp-go
	}{
		{"a result", `{"jsonrpc":"2.0","id":"` + id + `","result":{"action":"accept"}}`, []string{id}},
		{"an error", `{"jsonrpc":"2.0","id":"` + id + `","error":{"code":-1,"message":"no"}}`, []string{id}},
		{"a batch", `[{"jsonrpc":"2.0","id":"` + id + `","result":{}},{"jsonrpc":"2.0","id":"` + id2 + `","result":{}}]`, []string{id, id2}},
		{"mcp-go's own id", `{"jsonrpc":"2.0","id":3,"result":{}}`, nil},
		{"a request naming the prefix", `{"jsonrpc":"2.0","id":"` + id + `","method":"tools/call"}`, nil},
		{"neither result nor error", `{"jsonrpc":"2.0","id":"` + id + `"}`, nil},
		{"a batch mixing mcp-go's", `[{"jsonrpc":"2.0","id":"` + id + `","result":{}},{"jsonrpc":"2.0","id":4,"result":{}}]`, nil},
		{"a malformed process id", `{"jsonrpc":"2.0","id":"` + relayIDPrefix + "zz-11" + `","result":{}}`, nil},
		{"an empty batch", `[]`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := relayAnswers([]byte(tt.body))
			if ok != (tt.want != nil) || len(got) != len(tt.want) {
				t.Fatalf("relayAnswers = %v, %v; want %v", got, ok, tt.want)
			}
			for _, id := range tt.want {
				if got[id] == nil || relayOwner(id) != owner {
					t.Errorf("answer %s: %s, owner %q", id, got[id], relayOwner(id))
				}
			}
		})
	}
}

// TestRelayWriter: a request injected into a POST's response that is not a stream yet
// makes it one, and mcp-go's JSON response then becomes its last event; a response mcp-go
// already sent as JSON, a client that does not accept a stream, a GET stream not open yet
// and a closed writer take nothing.
func TestRelayWriter(t *testing.T) {
	req := func(accept string) *http.Request {
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		r.Header.Set("Accept", accept)
		return r
	}
	msg := []byte(`{"jsonrpc":"2.0","id":"x","method":"sampling/createMessage"}`)
	t.Run("upgraded", func(t *testing.T) {
		rec := httptest.NewRecorder()
		w := newRelayWriter(rec, req("application/json, text/event-stream"), false)
		if !w.inject(msg) {
			t.Fatal("inject refused")
		}
		w.Header().Set("Content-Type", "application/json") // mcp-go's final response
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}` + "\n"))
		want := "event: message\ndata: " + string(msg) + "\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"
		if rec.Body.String() != want || rec.Header().Get("Content-Type") != "text/event-stream" || rec.Code != http.StatusOK {
			t.Fatalf("%d %q %q", rec.Code, rec.Header().Get("Content-Type"), rec.Body.String())
		}
		var ev map[string]json.RawMessage
		if err := json.Unmarshal([]byte(strings.TrimPrefix(strings.Split(rec.Body.String(), "\n")[1], "data: ")), &ev); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("mcp-go's stream", func(t *testing.T) {
		rec := httptest.NewRecorder()
		w := newRelayWriter(rec, req("text/event-stream"), true)
		if w.inject(msg) {
			t.Fatal("a GET stream not open yet took a request")
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		if !w.inject(msg) {
			t.Fatal("the open stream refused")
		}
		w.close()
		if w.inject(msg) {
			t.Fatal("a closed stream took a request")
		}
	})
	for _, tt := range []struct {
		name, accept string
		sent         bool
	}{
		{"JSON only", "application/json", false},
		{"a JSON response sent", "application/json, text/event-stream", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			w := newRelayWriter(rec, req(tt.accept), false)
			if tt.sent {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusOK)
			}
			if w.inject(msg) || strings.Contains(rec.Body.String(), "sampling") {
				t.Fatalf("took the request: %q", rec.Body.String())
			}
		})
	}
}
