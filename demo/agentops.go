package demo

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"time"

	agentlinkv1 "github.com/gatehouse-dev/gatehouse/schemas/gen/agentlink/v1"
)

// AgentOperator is one operator of the reference agent.
type AgentOperator struct {
	// ID, Description, Input and Output (JSON Schemas as text) are what the agent
	// advertises; TypicalMs its cost hint.
	ID, Description, Input, Output string
	TypicalMs                      uint32
	// Run runs one task and returns its output as JSON text.
	Run func(ctx context.Context, t AgentTask) ([]byte, error)
}

// AgentTask is what an operator is given.
type AgentTask struct {
	// Input is the task's input, JSON text valid against the operator's input schema.
	Input []byte
	// Refs are the task's inputs passed by reference.
	Refs []*agentlinkv1.DataRef
	// Progress reports progress (done of total, with a message).
	Progress func(done, total float64, message string)
	// Upload, when the gateway issued one, is where one output may be PUT (Uri) and the
	// ref it is then known by (Name).
	Upload *agentlinkv1.DataRef
	// AddOutputRef names an output passed by reference in the task's result.
	AddOutputRef func(ref *agentlinkv1.DataRef)
}

// Bounds of the reference agent's operators.
const (
	maxHashBytes = 64 << 20 // bytes sha256 reads from a URL or a DataRef
	maxMatrixDim = 64       // rows and columns of a matmul operand
	maxSleepMs   = 600000
)

// AgentOperators returns the reference agent's operators: sha256 (of inline text or base64
// bytes, or of a DataRef's or URL's content fetched over HTTP), matmul (small matrices) and
// sleep (with a progress report per step, stopping when cancelled).
func AgentOperators() []AgentOperator {
	return []AgentOperator{
		{ID: "sha256", Description: "SHA-256 of text, base64 bytes, a URL's content or the task's first DataRef.",
			Input: `{"type":"object","properties":{"text":{"type":"string"},"base64":{"type":"string","contentEncoding":"base64"},` +
				`"url":{"type":"string","pattern":"^https?://"}},"additionalProperties":false}`,
			Output:    `{"type":"object","properties":{"sha256":{"type":"string","pattern":"^[0-9a-f]{64}$"},"bytes":{"type":"integer"}},"required":["sha256","bytes"]}`,
			TypicalMs: 5, Run: runSHA256},
		{ID: "matmul", Description: "Multiplies two matrices (at most 64×64) given as arrays of rows.",
			Input: `{"type":"object","properties":{"a":{"$ref":"#/$defs/m"},"b":{"$ref":"#/$defs/m"}},"required":["a","b"],"additionalProperties":false,` +
				`"$defs":{"m":{"type":"array","minItems":1,"maxItems":64,"items":{"type":"array","minItems":1,"maxItems":64,"items":{"type":"number"}}}}}`,
			Output:    `{"type":"object","properties":{"c":{"type":"array","items":{"type":"array","items":{"type":"number"}}}},"required":["c"]}`,
			TypicalMs: 1, Run: runMatmul},
		{ID: "sleep", Description: "Sleeps ms milliseconds in steps, reporting progress after each; stops when cancelled.",
			Input: `{"type":"object","properties":{"ms":{"type":"integer","minimum":0,"maximum":600000},` +
				`"steps":{"type":"integer","minimum":1,"maximum":100}},"required":["ms"],"additionalProperties":false}`,
			Output: `{"type":"object","properties":{"slept_ms":{"type":"integer"}},"required":["slept_ms"]}`, Run: runSleep},
	}
}

func runSHA256(ctx context.Context, t AgentTask) ([]byte, error) {
	var in struct {
		Text   *string `json:"text"`
		Base64 *string `json:"base64"`
		URL    string  `json:"url"`
	}
	if err := json.Unmarshal(t.Input, &in); err != nil {
		return nil, err
	}
	h := sha256.New()
	var n int64
	switch {
	case in.Text != nil:
		h.Write([]byte(*in.Text))
		n = int64(len(*in.Text))
	case in.Base64 != nil:
		b, err := base64.StdEncoding.DecodeString(*in.Base64)
		if err != nil {
			return nil, errors.New("base64 is not valid standard base64")
		}
		n = int64(len(b))
		h.Write(b)
	case in.URL != "":
		var err error
		if n, err = fetchInto(ctx, h, &agentlinkv1.DataRef{Uri: in.URL}); err != nil {
			return nil, err
		}
	case len(t.Refs) > 0:
		var err error
		if n, err = fetchInto(ctx, h, t.Refs[0]); err != nil {
			return nil, err
		}
	default:
		return nil, errors.New("give text, base64, url or a data ref")
	}
	return json.Marshal(map[string]any{"sha256": hex.EncodeToString(h.Sum(nil)), "bytes": n})
}

// fetchInto GETs a DataRef's content (its range, with its headers) into h, at most
// maxHashBytes.
func fetchInto(ctx context.Context, h hash.Hash, ref *agentlinkv1.DataRef) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ref.GetUri(), nil)
	if err != nil {
		return 0, fmt.Errorf("data ref: %w", err)
	}
	for k, v := range ref.GetHeaders() {
		req.Header.Set(k, v)
	}
	if r := ref.GetRange(); r != nil && r.GetLength() > 0 {
		req.Header.Set("Range", "bytes="+strconv.FormatUint(r.GetOffset(), 10)+"-"+strconv.FormatUint(r.GetOffset()+r.GetLength()-1, 10))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("fetching the data ref: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusPartialContent {
		return 0, fmt.Errorf("fetching the data ref: HTTP %d", resp.StatusCode)
	}
	n, err := io.Copy(h, io.LimitReader(resp.Body, maxHashBytes+1))
	if err != nil {
		return 0, fmt.Errorf("reading the data ref: %w", err)
	}
	if n > maxHashBytes {
		return 0, fmt.Errorf("the data ref is larger than %d bytes", maxHashBytes)
	}
	return n, nil
}

func runMatmul(_ context.Context, t AgentTask) ([]byte, error) {
	var in struct{ A, B [][]float64 }
	if err := json.Unmarshal(t.Input, &in); err != nil {
		return nil, err
	}
	inner := len(in.A[0])
	for _, row := range in.A {
		if len(row) != inner {
			return nil, errors.New("a's rows differ in length")
		}
	}
	if len(in.B) != inner {
		return nil, fmt.Errorf("a has %d columns but b has %d rows", inner, len(in.B))
	}
	cols := len(in.B[0])
	for _, row := range in.B {
		if len(row) != cols {
			return nil, errors.New("b's rows differ in length")
		}
	}
	c := make([][]float64, len(in.A))
	for i, row := range in.A {
		c[i] = make([]float64, cols)
		for j := range cols {
			for k, v := range row {
				c[i][j] += v * in.B[k][j]
			}
		}
	}
	return json.Marshal(map[string]any{"c": c})
}

func runSleep(ctx context.Context, t AgentTask) ([]byte, error) {
	var in struct{ Ms, Steps int }
	if err := json.Unmarshal(t.Input, &in); err != nil {
		return nil, err
	}
	in.Ms, in.Steps = min(max(in.Ms, 0), maxSleepMs), max(in.Steps, 1)
	step := time.Duration(in.Ms) * time.Millisecond / time.Duration(in.Steps)
	for i := 1; i <= in.Steps; i++ {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("stopped after %d of %d steps: %w", i-1, in.Steps, ctx.Err())
		case <-time.After(step):
		}
		t.Progress(float64(i), float64(in.Steps), fmt.Sprintf("step %d of %d", i, in.Steps))
	}
	return json.Marshal(map[string]int{"slept_ms": in.Ms})
}

func goArch() string { return runtime.GOARCH }
func goOS() string   { return runtime.GOOS }
func numCPU() int    { return runtime.NumCPU() }
