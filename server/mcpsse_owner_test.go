package server

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestMCPLegacySessionBoundToItsOpener: a legacy SSE session (GET /sse, POST /message) takes
// messages only from the caller that opened it; another caller presenting its session ID is
// answered as for a session that does not exist, and nothing reaches the owner's stream.
func TestMCPLegacySessionBoundToItsOpener(t *testing.T) {
	const aliceKey, bobKey = "alice-key-0123456789abcdef012345678", "bob-key-0123456789abcdef0123456789ab"
	cfg := strings.Replace(faceConfig("127.0.0.1:0", "", ""), "auth:\n  anonymous: {}\n",
		"auth:\n  api_keys:\n    - {name: alice, hash: \""+apiKeyHash(aliceKey)+"\"}\n    - {name: bob, hash: \""+apiKeyHash(bobKey)+"\"}\n", 1)
	ts := startWith(t, cfg, Options{})

	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, ts.base+"/sse", nil)
	req.Header.Set("X-API-Key", aliceKey)
	stream, err := httpClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stream.Body.Close() }()
	events := bufio.NewReader(stream.Body)
	endpoint := ""
	for endpoint == "" {
		line, err := events.ReadString('\n')
		if err != nil {
			t.Fatalf("no endpoint event: %v", err)
		}
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok {
			endpoint = rest
		}
	}
	post := func(key, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, ts.base+endpoint, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-API-Key", key)
		resp, err := httpClient(t).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		return resp.StatusCode, string(b)
	}
	_, unknown := post(bobKey, `{"jsonrpc":"2.0","method":"ping","id":1}`) // shape of "no such session" below
	code, body := post(bobKey, `{"jsonrpc":"2.0","method":"ping","id":"from-bob"}`)
	if code != http.StatusBadRequest || !strings.Contains(body, "Invalid session ID") || body != unknown {
		t.Fatalf("another caller's message: %d %s, want 400 Invalid session ID", code, body)
	}
	wrongID := strings.Replace(endpoint, "sessionId=", "sessionId=0", 1)
	req, _ = http.NewRequest(http.MethodPost, ts.base+wrongID, strings.NewReader(`{"jsonrpc":"2.0","method":"ping","id":2}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-API-Key", aliceKey)
	resp, err := httpClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	noSuch, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if string(noSuch) != body {
		t.Errorf("a session that does not exist answers %q, another caller's %q: they must not differ", noSuch, body)
	}
	if code, body := post(aliceKey, `{"jsonrpc":"2.0","method":"ping","id":"from-alice"}`); code != http.StatusAccepted {
		t.Fatalf("the owner's message: %d %s", code, body)
	}
	for {
		line, err := events.ReadString('\n')
		if err != nil {
			t.Fatalf("the owner's answer never came: %v", err)
		}
		if strings.Contains(line, "from-bob") {
			t.Fatalf("another caller's message reached the owner's stream: %s", line)
		}
		if strings.Contains(line, "from-alice") {
			return
		}
	}
}
