package measure

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"sync/atomic"
)

// MCPProtocolVersion is the MCP revision the benchmark's client asks for.
const MCPProtocolVersion = "2025-06-18"

// ErrRPC is wrapped by MCPSession.Call for a JSON-RPC error answer.
var ErrRPC = errors.New("measure: JSON-RPC error")

// MCPSession is one client session of the MCP streamable-HTTP transport: initialize, then
// requests carrying its Mcp-Session-Id. It answers both a JSON body and an SSE stream. It
// is safe for concurrent calls.
type MCPSession struct {
	client    *http.Client
	url       string
	sessionID string
	version   string
	nextID    atomic.Int64
}

// NewMCPSession initializes a session with the server at url.
func NewMCPSession(ctx context.Context, client *http.Client, url string) (*MCPSession, error) {
	s := &MCPSession{client: client, url: url}
	params := map[string]any{
		"protocolVersion": MCPProtocolVersion,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "gatehouse-bench-peers", "version": "1"},
	}
	res, hdr, err := s.do(ctx, "initialize", params, true)
	if err != nil {
		return nil, fmt.Errorf("initialize %s: %w", url, err)
	}
	var init struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if err := json.Unmarshal(res, &init); err != nil {
		return nil, fmt.Errorf("initialize %s: %w", url, err)
	}
	s.sessionID = hdr.Get("Mcp-Session-Id")
	s.version = init.ProtocolVersion
	if _, _, err := s.do(ctx, "notifications/initialized", nil, false); err != nil {
		return nil, fmt.Errorf("notifications/initialized %s: %w", url, err)
	}
	return s, nil
}

// Call sends one request and returns its result.
func (s *MCPSession) Call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	res, _, err := s.do(ctx, method, params, true)
	return res, err
}

// Close ends the session (DELETE), when the server gave one.
func (s *MCPSession) Close(ctx context.Context) {
	if s.sessionID == "" {
		return
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, s.url, nil)
	if err != nil {
		return
	}
	req.Header.Set("Mcp-Session-Id", s.sessionID)
	if resp, err := s.client.Do(req); err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
}

type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (s *MCPSession) do(ctx context.Context, method string, params any, request bool) (json.RawMessage, http.Header, error) {
	msg := map[string]any{"jsonrpc": "2.0", "method": method}
	var id string
	if request {
		n := s.nextID.Add(1)
		msg["id"] = n
		id = strconv.FormatInt(n, 10)
	}
	if params != nil {
		msg["params"] = params
	}
	body, err := json.Marshal(msg)
	if err != nil {
		return nil, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if s.sessionID != "" {
		req.Header.Set("Mcp-Session-Id", s.sessionID)
	}
	if s.version != "" {
		req.Header.Set("Mcp-Protocol-Version", s.version)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, nil, fmt.Errorf("%s: HTTP %d: %s", method, resp.StatusCode, bytes.TrimSpace(b))
	}
	if !request {
		return nil, resp.Header, nil
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	var m rpcMessage
	switch ct {
	case "application/json":
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", method, err)
		}
	case "text/event-stream":
		if m, err = readSSEResponse(resp.Body, id); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", method, err)
		}
	default:
		return nil, nil, fmt.Errorf("%s: unexpected Content-Type %q", method, ct)
	}
	if m.Error != nil {
		return nil, nil, fmt.Errorf("%s: %w %d: %s", method, ErrRPC, m.Error.Code, m.Error.Message)
	}
	return m.Result, resp.Header, nil
}

// readSSEResponse reads events until the JSON-RPC response whose id is id; notifications and
// other events before it are skipped.
func readSSEResponse(r io.Reader, id string) (rpcMessage, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	var data []byte
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 { // end of an event
			if len(data) > 0 {
				var m rpcMessage
				if err := json.Unmarshal(data, &m); err == nil && string(m.ID) == id && (m.Result != nil || m.Error != nil) {
					return m, nil
				}
			}
			data = data[:0]
			continue
		}
		if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, bytes.TrimPrefix(v, []byte(" "))...)
		}
	}
	if err := sc.Err(); err != nil {
		return rpcMessage{}, err
	}
	if len(data) > 0 { // a last event without its blank line
		var m rpcMessage
		if err := json.Unmarshal(data, &m); err == nil && string(m.ID) == id {
			return m, nil
		}
	}
	return rpcMessage{}, errors.New("event stream ended without the response")
}
