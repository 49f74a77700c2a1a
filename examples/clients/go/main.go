// Command go is a Gatehouse client in Go, standard library only.
//
// It calls the gateway's JSON-RPC boundary (POST /rpc) four ways: a single call, a batch, a
// delegated task whose events it reads as they stream (nekte.delegate answers with
// Server-Sent Events), and the same call without and with a bearer token.
//
//	GATEHOUSE_URL    the gateway (default http://127.0.0.1:8080, where `make run` listens)
//	GATEHOUSE_TOKEN  a JWT sent as "Authorization: Bearer ..." (optional; see README.md)
//
// It prints one line per step (the same lines as the Python and TypeScript clients beside
// it) and exits 1 when a step does not go as a client would expect.
//
//	go run ./examples/clients/go
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// timeout bounds one HTTP exchange, a delegated task's whole stream included.
const timeout = 60 * time.Second

func main() {
	c := &client{
		url:   strings.TrimSuffix(envOr("GATEHOUSE_URL", "http://127.0.0.1:8080"), "/"),
		token: os.Getenv("GATEHOUSE_TOKEN"),
		http:  &http.Client{Timeout: timeout},
		out:   os.Stdout,
	}
	ctx := context.Background()
	for _, step := range []func(context.Context) error{c.call, c.batch, c.delegate, c.auth} {
		if err := step(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "gatehouse client:", err)
			os.Exit(1)
		}
	}
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// client is the gateway's JSON-RPC boundary as one caller sees it.
type client struct {
	url   string
	token string
	http  *http.Client
	out   io.Writer
}

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    struct {
		Reason string `json:"reason"`
	} `json:"data"`
}

// response is a JSON-RPC response object; Result stays as the gateway wrote it.
type response struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *rpcError       `json:"error"`
}

// post sends body to /rpc with token (none when "") and returns the response, whatever
// its HTTP status; the caller closes its body.
func (c *client) post(ctx context.Context, body any, token, accept string) (*http.Response, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url+"/rpc", bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", accept)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return c.http.Do(req)
}

// answer is the HTTP side of a JSON-RPC answer.
type answer struct {
	status int
	header http.Header
}

// roundTrip posts body and decodes the JSON answer into v.
func (c *client) roundTrip(ctx context.Context, body any, token string, v any) (answer, error) {
	resp, err := c.post(ctx, body, token, "application/json")
	if err != nil {
		return answer{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	a := answer{status: resp.StatusCode, header: resp.Header}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return a, fmt.Errorf("HTTP %d, not a JSON-RPC answer: %w", resp.StatusCode, err)
	}
	return a, nil
}

// compact is JSON without spaces, in the order the gateway wrote it.
func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

func request(method string, params any, id int) map[string]any {
	r := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		r["params"] = params
	}
	if id != 0 {
		r["id"] = id
	}
	return r
}

// call is a single call: calc.subtract with named params.
func (c *client) call(ctx context.Context) error {
	params := json.RawMessage(`{"minuend":42,"subtrahend":23}`)
	var r response
	if _, err := c.roundTrip(ctx, request("calc.subtract", params, 1), c.token, &r); err != nil {
		return fmt.Errorf("call calc.subtract: %w", err)
	}
	if r.Error != nil {
		return fmt.Errorf("call calc.subtract: error %d %s", r.Error.Code, r.Error.Message)
	}
	_, err := fmt.Fprintf(c.out, "call calc.subtract %s = %s\n", params, compact(r.Result))
	return err
}

// batch sends three requests at once: members run concurrently, the answers come in
// request order, a notification gets none, and one member failing does not fail the others.
func (c *client) batch(ctx context.Context) error {
	requests := []map[string]any{
		request("calc.subtract", []int{10, 4}, 1),
		request("no.such_method", nil, 2),
		request("notify_hello", []int{7}, 0),
	}
	var answers []response
	if _, err := c.roundTrip(ctx, requests, c.token, &answers); err != nil {
		return fmt.Errorf("batch: %w", err)
	}
	fmt.Fprintf(c.out, "batch of %d requests (one a notification): %d answers\n", len(requests), len(answers))
	for _, a := range answers {
		if a.Error != nil {
			fmt.Fprintf(c.out, "  id %s: error %d %s\n", compact(a.ID), a.Error.Code, a.Error.Message)
		} else {
			fmt.Fprintf(c.out, "  id %s: %s\n", compact(a.ID), compact(a.Result))
		}
	}
	return nil
}

// event is one Server-Sent Event.
type event struct {
	name string
	data json.RawMessage
}

// readEvents hands each Server-Sent Event of r to fn as it arrives, until the stream ends
// or fn returns done or an error.
func readEvents(r io.Reader, fn func(event) (done bool, err error)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	var name string
	var data []string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if name == "" && data == nil {
				continue
			}
			if name == "" {
				name = "message"
			}
			done, err := fn(event{name: name, data: json.RawMessage(strings.Join(data, "\n"))})
			if done || err != nil {
				return err
			}
			name, data = "", nil
		case strings.HasPrefix(line, ":"): // a comment: keep-alive
		case strings.HasPrefix(line, "event:"):
			name = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return errors.New("the stream ended before the task did")
}

// delegate runs a task with nekte.delegate, which streams the task's life as events until
// it ends.
func (c *client) delegate(ctx context.Context) error {
	const capability = "test_tool_with_progress"
	id := make([]byte, 6)
	_, _ = rand.Read(id)
	task := map[string]any{
		"id": "go-" + hex.EncodeToString(id), "desc": "the Go example", "cap": capability, "in": map[string]any{},
		"budget": map[string]any{"max_tokens": 4096, "detail_level": "minimal"},
	}
	fmt.Fprintln(c.out, "delegate "+capability)
	resp, err := c.post(ctx, request("nekte.delegate", map[string]any{"task": task}, 1), c.token, "text/event-stream")
	if err != nil {
		return fmt.Errorf("delegate %s: %w", capability, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var r response // refused before it started: a JSON-RPC error
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || r.Error == nil {
			return fmt.Errorf("delegate %s: HTTP %d, no event stream", capability, resp.StatusCode)
		}
		return fmt.Errorf("delegate %s: error %d %s", capability, r.Error.Code, r.Error.Message)
	}
	err = readEvents(resp.Body, func(e event) (bool, error) {
		var d struct {
			To        string          `json:"to"`
			Processed json.Number     `json:"processed"`
			Total     json.Number     `json:"total"`
			Message   string          `json:"message"`
			Code      int             `json:"code"`
			Out       json.RawMessage `json:"out"`
		}
		if err := json.Unmarshal(e.data, &d); err != nil {
			return false, fmt.Errorf("event %s: %w", e.name, err)
		}
		switch e.name {
		case "status_change":
			fmt.Fprintln(c.out, "  status "+d.To)
		case "progress":
			fmt.Fprintf(c.out, "  progress %s/%s %s\n", d.Processed, d.Total, d.Message)
		case "partial":
			fmt.Fprintln(c.out, "  partial "+compact(d.Out))
		case "complete":
			var out struct {
				Minimal any `json:"minimal"`
			}
			_ = json.Unmarshal(d.Out, &out)
			if s, ok := out.Minimal.(string); ok {
				fmt.Fprintln(c.out, "  complete "+s)
			} else {
				fmt.Fprintln(c.out, "  complete "+compact(d.Out))
			}
			return true, nil
		case "error":
			return true, fmt.Errorf("error %d %s", d.Code, d.Message)
		case "cancelled":
			return true, fmt.Errorf("cancelled %s", compact(e.data))
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("delegate %s: %w", capability, err)
	}
	return nil
}

// auth makes the same call without a token, then with GATEHOUSE_TOKEN.
func (c *client) auth(ctx context.Context) error {
	body := request("calc.subtract", json.RawMessage(`{"minuend":42,"subtrahend":23}`), 1)
	var r response
	a, err := c.roundTrip(ctx, body, "", &r)
	if err != nil {
		return fmt.Errorf("auth without a token: %w", err)
	}
	if a.status == http.StatusOK {
		fmt.Fprintln(c.out, "auth without a token: HTTP 200 (this gateway admits callers without a token)")
	} else if r.Error != nil {
		fmt.Fprintf(c.out, "auth without a token: HTTP %d (WWW-Authenticate: %s), error %d %s (%s)\n",
			a.status, a.header.Get("WWW-Authenticate"), r.Error.Code, r.Error.Message, r.Error.Data.Reason)
	}
	if c.token == "" {
		fmt.Fprintln(c.out, "auth with the token: skipped (set GATEHOUSE_TOKEN)")
		return nil
	}
	r = response{}
	if a, err = c.roundTrip(ctx, body, c.token, &r); err != nil {
		return fmt.Errorf("auth with the token: %w", err)
	}
	if r.Error != nil {
		return fmt.Errorf("auth with the token: error %d %s", r.Error.Code, r.Error.Message)
	}
	_, err = fmt.Fprintf(c.out, "auth with the token: HTTP %d, calc.subtract = %s\n", a.status, compact(r.Result))
	return err
}
