package mcpbackend

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// samplingResult is what the test backends answer a sampling request with.
const samplingResult = `{"role":"assistant","content":{"type":"text","text":"from http"},"model":"m"}`

func TestMCPRouteHTTP(t *testing.T) {
	var mu sync.Mutex
	var seen []*http.Request
	var bodies []string
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen, bodies = append(seen, r), append(bodies, string(body))
		mu.Unlock()
		switch r.URL.Path {
		case "/ok":
			_, _ = io.WriteString(w, samplingResult)
		case "/down":
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
		case "/big":
			_, _ = io.WriteString(w, `{"pad":"`+strings.Repeat("x", 100)+`"}`)
		case "/array":
			_, _ = io.WriteString(w, `[1]`)
		case "/slow":
			<-r.Context().Done()
		}
	}))
	t.Cleanup(hs.Close)
	tests := []struct {
		path    string
		timeout time.Duration
		code    schemas.Code // 0: success
		message string
	}{
		{"/ok", 0, 0, ""},
		{"/down", 0, schemas.CodeUnavailable, "The sampling backend answered HTTP 503"},
		{"/big", 0, schemas.CodePayloadTooLarge, "exceeds 80 bytes"},
		{"/array", 0, schemas.CodeInternal, "not a JSON object"},
		{"/slow", 100 * time.Millisecond, schemas.CodeDeadlineExceeded, ""},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			routes, err := NewRouteBackends(&RouteConfig{HTTP: &RouteHTTPConfig{
				URL: hs.URL + tt.path, Headers: map[string]string{"Authorization": "Bearer t"}, MaxResponseBytes: 80}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if tt.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.timeout)
				t.Cleanup(cancel)
			}
			params := json.RawMessage(`{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":5}`)
			out, err := routes.sampling.CreateMessage(ctx, "demo", params)
			if tt.code == 0 {
				if err != nil || string(out) != samplingResult {
					t.Fatalf("got %s, %v", out, err)
				}
				mu.Lock()
				r, body := seen[len(seen)-1], bodies[len(bodies)-1]
				mu.Unlock()
				if r.Method != http.MethodPost || r.Header.Get(HeaderUpstream) != "demo" || r.Header.Get("Authorization") != "Bearer t" ||
					r.Header.Get("Content-Type") != "application/json" || body != string(params) {
					t.Fatalf("request %s %v %s", r.Method, r.Header, body)
				}
				return
			}
			ge, ok := errors.AsType[*gateway.Error](err)
			if !ok || ge.Code() != tt.code || !strings.Contains(ge.Message(), tt.message) || (tt.code != schemas.CodeDeadlineExceeded && ge.Data()["upstream"] != "demo") {
				t.Fatalf("got %s, %v; want code %d with %q", out, err, tt.code, tt.message)
			}
		})
	}
}
