package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/schemas"
)

// Defaults of the connection flags: the addresses `make run` serves (configs/gatehouse.yaml).
const (
	DefaultURL      = "http://127.0.0.1:8080"
	DefaultAdminURL = "http://127.0.0.1:9901"
	// maxResponseBytes bounds what is read of one answer that is not a stream.
	maxResponseBytes = 64 << 20
)

// Options says where and as whom the client calls.
type Options struct {
	// URL is the gateway's boundary (scheme, host and port; a trailing /rpc is dropped).
	URL string
	// Token is sent as Authorization: Bearer (a JWT or an API key).
	Token string
	// APIKey is sent as X-API-Key.
	APIKey string
	// Timeout bounds a call that is not a stream (0: none); it is also sent as the call's
	// deadline (X-Deadline-Ms), so the gateway gives up when the client does.
	Timeout time.Duration
}

// Client calls one gateway.
type Client struct {
	base *url.URL
	opts Options
	http *http.Client
	now  func() time.Time
}

// New returns a client for opts.URL.
func New(opts Options) (*Client, error) {
	raw := strings.TrimSpace(opts.URL)
	if raw == "" {
		raw = DefaultURL
	}
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, Usagef("bad gateway URL %q: want http://host:port or https://host:port", opts.URL)
	}
	u.Path = strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/rpc")
	u.RawQuery, u.Fragment = "", ""
	return &Client{base: u, opts: opts, http: &http.Client{}, now: time.Now}, nil
}

// Endpoint is the URL of path on the gateway.
func (c *Client) Endpoint(path string) string {
	u := *c.base
	path, u.RawQuery, _ = strings.Cut(path, "?")
	u.Path += path
	return u.String()
}

// wsEndpoint is the ws:// or wss:// URL of path on the gateway.
func (c *Client) wsEndpoint(path string) string {
	u := *c.base
	u.Path += path
	if u.Scheme == "https" {
		u.Scheme = "wss"
	} else {
		u.Scheme = "ws"
	}
	return u.String()
}

// header returns the credential headers.
func (c *Client) header() http.Header {
	h := http.Header{}
	if c.opts.Token != "" {
		h.Set("Authorization", "Bearer "+c.opts.Token)
	}
	if c.opts.APIKey != "" {
		h.Set("X-API-Key", c.opts.APIKey)
	}
	return h
}

// withTimeout bounds ctx by the client's timeout; the context's cause then says so.
func (c *Client) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if c.opts.Timeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeoutCause(ctx, c.opts.Timeout, &TimeoutError{After: c.opts.Timeout})
}

// TimeoutError is a call that got no answer within the client's --timeout.
type TimeoutError struct{ After time.Duration }

func (e *TimeoutError) Error() string { return fmt.Sprintf("no answer within --timeout %v", e.After) }

// Unwrap makes a timeout a context.DeadlineExceeded.
func (e *TimeoutError) Unwrap() error { return context.DeadlineExceeded }

// ctxErr is ctx's error, with its cause when the cause says more (the client's timeout).
func ctxErr(ctx context.Context) error {
	if te, ok := errors.AsType[*TimeoutError](context.Cause(ctx)); ok {
		return te
	}
	return ctx.Err()
}

// post sends body to path and returns the response, whose body the caller closes.
func (c *Client) post(ctx context.Context, path string, body []byte, accept string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.Endpoint(path), bytes.NewReader(body))
	if err != nil {
		return nil, &TransportError{Err: err}
	}
	req.Header = c.header()
	req.Header.Set("Content-Type", "application/json")
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if dl, ok := ctx.Deadline(); ok {
		req.Header.Set("X-Deadline-Ms", strconv.FormatInt(dl.UnixMilli(), 10))
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctxErr(ctx)
		}
		return nil, &TransportError{Err: err}
	}
	return resp, nil
}

// RPCError is a JSON-RPC error the gateway answered with.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *RPCError) Error() string {
	name := ""
	if e.Code >= math.MinInt32 && e.Code <= math.MaxInt32 {
		if k, ok := schemas.Lookup(schemas.Code(e.Code)); ok {
			name = " " + k.Name
		}
	}
	s := fmt.Sprintf("%d%s: %s", e.Code, name, e.Message)
	var d struct {
		Reason     string `json:"reason"`
		ApprovalID string `json:"approval_id"`
		TraceID    string `json:"trace_id"`
	}
	if json.Unmarshal(e.Data, &d) == nil {
		if d.Reason != "" {
			s += " (" + d.Reason + ")"
		}
		if d.ApprovalID != "" {
			s += " (approval " + d.ApprovalID + ")"
		}
		if d.TraceID != "" {
			s += " [trace " + d.TraceID + "]"
		}
	}
	return s
}

// TransportError is a failure to reach the gateway or to read its answer.
type TransportError struct {
	Err    error
	Status int    // the HTTP status, when an answer came
	Body   string // the start of an answer that is not JSON-RPC
}

func (e *TransportError) Error() string {
	switch {
	case e.Status != 0 && e.Err != nil:
		return fmt.Sprintf("HTTP %d: %v", e.Status, e.Err)
	case e.Status != 0:
		return fmt.Sprintf("HTTP %d: %s", e.Status, e.Body)
	}
	return e.Err.Error()
}

func (e *TransportError) Unwrap() error { return e.Err }

// Response is one JSON-RPC response.
type Response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *RPCError       `json:"error,omitempty"`
}

// Err is the response's error, nil when it succeeded.
func (r *Response) Err() error {
	if r.Error != nil {
		return r.Error
	}
	return nil
}

// request is one JSON-RPC request's body.
func request(id int, method string, params json.RawMessage) []byte {
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      int             `json:"id"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params,omitempty"`
	}{"2.0", id, method, params})
	return b
}

// Call runs one request over HTTP (POST /rpc) and returns its result. A call the gateway
// answers with a stream of named events (nekte.delegate) returns the events as a JSON
// array of {"event", "data"}, or the error the stream ended with.
func (c *Client) Call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	return c.callPath(ctx, "/rpc", method, params)
}

func (c *Client) callPath(ctx context.Context, path, method string, params json.RawMessage) (json.RawMessage, error) {
	resp, err := c.post(ctx, path, request(1, method, params), "")
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	if isEventStream(resp) {
		return collectEvents(ctx, resp.Body)
	}
	body, err := readBody(ctx, resp)
	if err != nil {
		return nil, err
	}
	var r Response
	if err := json.Unmarshal(body, &r); err != nil || (r.Result == nil && r.Error == nil) {
		return nil, notJSONRPC(resp.StatusCode, body)
	}
	return r.Result, r.Err()
}

// Batch sends members (request objects) as one batch over HTTP and returns the responses
// in the order of the members that have an id.
func (c *Client) Batch(ctx context.Context, members []json.RawMessage) ([]Response, error) {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	body, _ := json.Marshal(members)
	resp, err := c.post(ctx, "/rpc", body, "")
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := readBody(ctx, resp)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusNoContent {
		return nil, nil // only notifications
	}
	var rs []Response
	if err := json.Unmarshal(b, &rs); err != nil {
		var one Response // a batch refused as a whole (too large) is one error response
		if json.Unmarshal(b, &one) == nil && one.Error != nil {
			return nil, one.Error
		}
		return nil, notJSONRPC(resp.StatusCode, b)
	}
	return rs, nil
}

func isEventStream(resp *http.Response) bool {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return mt == "text/event-stream"
}

func readBody(ctx context.Context, resp *http.Response) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctxErr(ctx)
		}
		return nil, &TransportError{Err: err, Status: resp.StatusCode}
	}
	return b, nil
}

func notJSONRPC(status int, body []byte) error {
	s := strings.TrimSpace(string(body))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	if s == "" {
		s = "(empty body)"
	}
	return &TransportError{Status: status, Body: "not a JSON-RPC response: " + s}
}

// collectEvents reads a stream of named events into a JSON array; a stream that ends with
// an error event returns that error.
func collectEvents(ctx context.Context, body io.Reader) (json.RawMessage, error) {
	var events []Event
	err := ReadEvents(body, func(e Event) error {
		events = append(events, e)
		return nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctxErr(ctx)
		}
		return nil, &TransportError{Err: err}
	}
	out, _ := json.Marshal(events)
	if n := len(events); n > 0 && events[n-1].Name == EventError {
		return out, events[n-1].AsError()
	}
	return out, nil
}

// errNoResponse is a WebSocket closed before the answer came.
var errNoResponse = errors.New("the connection closed before the response came")
