package server

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/gatehouse-dev/gatehouse/demo"
)

// TestMCPFaceLegacySSE lists and calls the bridged tools with mcp-go's client of the
// legacy HTTP+SSE transport.
func TestMCPFaceLegacySSE(t *testing.T) {
	ts := startWith(t, faceConfig("127.0.0.1:0", demoUpstream(t, demo.MCPOptions{}), ""), Options{})
	waitForTools(t, ts)
	c, err := client.NewSSEMCPClient(ts.base+"/sse", transport.WithHTTPClient(httpClient(t)),
		transport.WithSSELogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "test", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	callSimpleText(t, c)
}

// TestMCPFaceHTTPAdmission: /sse, /message and /mcp refuse before reading anything what
// they must — a disabled transport, a foreign Host or Origin, a missing credential, a body
// too large, a message that is not JSON — and the event stream carries no CORS header.
func TestMCPFaceHTTPAdmission(t *testing.T) {
	on := startWith(t, faceConfig("127.0.0.1:0", "", ""), Options{})
	sseOff := startWith(t, faceConfig("127.0.0.1:0", "", "sse: false"), Options{})
	faceOff := startWith(t, baseConfig, Options{})
	noAuth := startWith(t, strings.Replace(faceConfig("127.0.0.1:0", "", ""), "auth:\n  anonymous: {}\n", "", 1), Options{})
	small := startWith(t, faceConfig("127.0.0.1:0", "", "")+"jsonrpc: {max_body_bytes: 256}\n", Options{})
	unprotected := startWith(t, faceConfig("127.0.0.1:0", "", "localhost_protection: false"), Options{})
	message := `{"jsonrpc":"2.0","method":"ping","id":1}`
	for _, tt := range []struct {
		name         string
		ts           *testServer
		method, path string
		header       []string // name, value pairs; "Host" sets the request's Host
		body         string
		want         int
	}{
		{"sse off: stream", sseOff, http.MethodGet, "/sse", nil, "", http.StatusNotFound},
		{"sse off: message", sseOff, http.MethodPost, "/message?sessionId=x", nil, message, http.StatusNotFound},
		{"face off: stream", faceOff, http.MethodGet, "/sse", nil, "", http.StatusNotFound},
		{"no credential: stream", noAuth, http.MethodGet, "/sse", nil, "", http.StatusUnauthorized},
		{"no credential: message", noAuth, http.MethodPost, "/message?sessionId=x", nil, message, http.StatusUnauthorized},
		{"foreign host: stream", on, http.MethodGet, "/sse", []string{"Host", "evil.example:8080"}, "", http.StatusForbidden},
		{"foreign host: message", on, http.MethodPost, "/message?sessionId=x", []string{"Host", "evil.example"}, message, http.StatusForbidden},
		{"foreign host: mcp", on, http.MethodPost, "/mcp", []string{"Host", "evil.example"}, initializeBody, http.StatusForbidden},
		{"foreign origin: stream", on, http.MethodGet, "/sse", []string{"Origin", "https://evil.example"}, "", http.StatusForbidden},
		{"foreign origin: message", on, http.MethodPost, "/message?sessionId=x", []string{"Origin", "http://evil.example"}, message, http.StatusForbidden},
		{"foreign origin: mcp", on, http.MethodPost, "/mcp", []string{"Origin", "null"}, initializeBody, http.StatusForbidden},
		{"loopback origin: mcp", on, http.MethodPost, "/mcp", []string{"Origin", "http://localhost:3000"}, initializeBody, http.StatusOK},
		{"protection off: foreign host", unprotected, http.MethodPost, "/mcp", []string{"Host", "evil.example", "Origin", "https://evil.example"}, initializeBody, http.StatusOK},
		{"message not json", on, http.MethodPost, "/message?sessionId=x", []string{"Content-Type", "text/plain"}, message, http.StatusUnsupportedMediaType},
		{"message too large", small, http.MethodPost, "/message?sessionId=x", nil, `{"jsonrpc":"2.0","method":"ping","params":{"pad":"` + strings.Repeat("x", 300) + `"},"id":1}`, http.StatusRequestEntityTooLarge},
		{"mcp body too large", small, http.MethodPost, "/mcp", nil, strings.Replace(initializeBody, `"agent"`, `"`+strings.Repeat("x", 300)+`"`, 1), http.StatusRequestEntityTooLarge},
		{"message to no session", on, http.MethodPost, "/message?sessionId=x", nil, message, http.StatusBadRequest},
		{"stream method", on, http.MethodPost, "/sse", nil, message, http.StatusMethodNotAllowed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, tt.ts.base+tt.path, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			for i := 0; i+1 < len(tt.header); i += 2 {
				if tt.header[i] == "Host" {
					req.Host = tt.header[i+1]
				} else {
					req.Header.Set(tt.header[i], tt.header[i+1])
				}
			}
			resp, err := httpClient(t).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.want, body)
			}
		})
	}
	t.Run("stream has no CORS header", func(t *testing.T) {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, on.base+"/sse", nil)
		req.Header.Set("Origin", "http://127.0.0.1:3000")
		resp, err := httpClient(t).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("stream: %d %v", resp.StatusCode, resp.Header)
		}
		if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "" {
			t.Fatalf("Access-Control-Allow-Origin: %q", got)
		}
		line := make([]byte, len("event: endpoint"))
		if _, err := io.ReadFull(resp.Body, line); err != nil || string(line) != "event: endpoint" {
			t.Fatalf("first event %q, %v", line, err)
		}
	})
}
