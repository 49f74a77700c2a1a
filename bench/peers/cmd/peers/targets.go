package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	benchechov1 "github.com/gatehouse-dev/gatehouse/bench/peers/gen/benchecho/v1"
	"github.com/gatehouse-dev/gatehouse/bench/peers/measure"
	calculatorv1 "github.com/gatehouse-dev/gatehouse/schemas/gen/calculator/v1"
)

// echoDoc returns the nested document of the 4 KB call.
func echoDoc() *benchechov1.Document {
	doc := &benchechov1.Document{Title: "quarterly inventory"}
	for s := range 4 {
		sec := &benchechov1.Section{Name: fmt.Sprintf("warehouse-%d", s)}
		for i := range 8 {
			sec.Items = append(sec.Items, &benchechov1.Item{
				Id: int64(s*100 + i), Label: fmt.Sprintf("part-%02d-%02d steel bracket", s, i),
				Value: float64(i) * 12.5, Tags: []string{"metal", "small", "shelf-b"}, Active: i%2 == 0,
			})
		}
		doc.Sections = append(doc.Sections, sec)
	}
	return doc
}

// mcpText is the 100-byte text of the MCP echo.
var mcpText = strings.Repeat("0123456789", 10)

var errMismatch = errors.New("answer differs from the expected one")

// httpTarget posts a fixed body and checks the answer against the first, validated, one.
type httpTarget struct {
	client *http.Client
	url    string
	body   []byte
	want   []byte
}

func newHTTPClient(conns int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		MaxIdleConns: conns, MaxIdleConnsPerHost: conns, IdleConnTimeout: time.Minute,
		DisableCompression: true, ForceAttemptHTTP2: false,
	}}
}

func (t *httpTarget) post(ctx context.Context) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, bytes.NewReader(t.body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := t.client.Do(req)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d: %.200s", resp.StatusCode, b)
	}
	return b, nil
}

// prime makes one call, validates its answer with check, and keeps it as the expected one.
func (t *httpTarget) prime(ctx context.Context, check func([]byte) error) error {
	b, err := t.post(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", t.url, err)
	}
	if err := check(b); err != nil {
		return fmt.Errorf("%s: %w: %.300s", t.url, err, b)
	}
	t.want = b
	return nil
}

func (t *httpTarget) call(ctx context.Context, _ int) error {
	b, err := t.post(ctx)
	if err != nil {
		return err
	}
	if !bytes.Equal(b, t.want) {
		return fmt.Errorf("%w: %.200s", errMismatch, b)
	}
	return nil
}

// checkSubtract accepts an answer whose result (or JSON-RPC result) is 19.
func checkSubtract(jsonrpc bool) func([]byte) error {
	return func(b []byte) error {
		var v struct {
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		res := v.Result
		if !jsonrpc { // grpc-gateway answers the SubtractResponse itself
			res = b
			var r struct {
				Result float64 `json:"result"`
			}
			if err := json.Unmarshal(res, &r); err != nil || r.Result != 19 {
				return errMismatch
			}
			return nil
		}
		if string(res) != "19" {
			return errMismatch
		}
		return nil
	}
}

// checkEcho accepts an answer carrying the document unchanged.
func checkEcho(jsonrpc bool, doc *benchechov1.Document) func([]byte) error {
	return func(b []byte) error {
		res := json.RawMessage(b)
		if jsonrpc {
			var v struct {
				Result json.RawMessage `json:"result"`
			}
			if err := json.Unmarshal(b, &v); err != nil {
				return err
			}
			res = v.Result
		}
		var got benchechov1.EchoResponse
		if err := protojson.Unmarshal(res, &got); err != nil {
			return err
		}
		if !proto.Equal(got.GetDoc(), doc) {
			return errMismatch
		}
		return nil
	}
}

// grpcTargets are the direct calls.
type grpcTargets struct {
	conn *grpc.ClientConn
	calc calculatorv1.CalculatorServiceClient
	echo benchechov1.EchoServiceClient
	doc  *benchechov1.Document
}

func newGRPCTargets(addr string) (*grpcTargets, error) {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	return &grpcTargets{conn: conn, calc: calculatorv1.NewCalculatorServiceClient(conn),
		echo: benchechov1.NewEchoServiceClient(conn), doc: echoDoc()}, nil
}

func (g *grpcTargets) subtract(ctx context.Context, _ int) error {
	r, err := g.calc.Subtract(ctx, &calculatorv1.SubtractRequest{Minuend: 42, Subtrahend: 23})
	if err != nil {
		return err
	}
	if r.GetResult() != 19 {
		return errMismatch
	}
	return nil
}

func (g *grpcTargets) echoCall(ctx context.Context, _ int) error {
	r, err := g.echo.Echo(ctx, &benchechov1.EchoRequest{Doc: g.doc})
	if err != nil {
		return err
	}
	if len(r.GetDoc().GetSections()) != len(g.doc.GetSections()) {
		return errMismatch
	}
	return nil
}

// mcpTarget calls tools/call echo, one session per caller.
type mcpTarget struct {
	sessions []*measure.MCPSession
	tool     string
}

// newMCPTarget opens callers sessions with the MCP server at url and finds its echo tool (the
// upstream's "echo", under whatever name the front gives it).
func newMCPTarget(ctx context.Context, url string, callers int) (*mcpTarget, error) {
	client := newHTTPClient(callers + 4)
	t := &mcpTarget{}
	for range callers {
		s, err := measure.NewMCPSession(ctx, client, url)
		if err != nil {
			t.close(ctx)
			return nil, err
		}
		t.sessions = append(t.sessions, s)
	}
	deadline := time.Now().Add(30 * time.Second)
	for t.tool == "" { // an aggregator may list its backends' tools only once it has reached them
		res, err := t.sessions[0].Call(ctx, "tools/list", map[string]any{})
		if err != nil {
			t.close(ctx)
			return nil, err
		}
		var list struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(res, &list); err != nil {
			t.close(ctx)
			return nil, err
		}
		var names []string
		for _, tl := range list.Tools {
			names = append(names, tl.Name)
			if tl.Name == "echo" || strings.HasSuffix(tl.Name, "echo") && t.tool == "" {
				t.tool = tl.Name
			}
		}
		if t.tool == "" {
			if time.Now().After(deadline) {
				t.close(ctx)
				return nil, fmt.Errorf("%s lists no echo tool: %v", url, names)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	if err := t.call(ctx, 0); err != nil {
		t.close(ctx)
		return nil, fmt.Errorf("%s: tools/call %s: %w", url, t.tool, err)
	}
	return t, nil
}

func (t *mcpTarget) call(ctx context.Context, w int) error {
	res, err := t.sessions[w%len(t.sessions)].Call(ctx, "tools/call", map[string]any{
		"name": t.tool, "arguments": map[string]any{"text": mcpText},
	})
	if err != nil {
		return err
	}
	var r struct {
		IsError bool `json:"isError"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return err
	}
	if r.IsError || len(r.Content) != 1 || r.Content[0].Text != mcpText {
		return fmt.Errorf("%w: %.200s", errMismatch, res)
	}
	return nil
}

func (t *mcpTarget) close(ctx context.Context) {
	for _, s := range t.sessions {
		s.Close(ctx)
	}
}
