package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strconv"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing"
	"github.com/gatehouse-dev/gatehouse/routing/capability"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// Spec is the built-in target serving the JSON-RPC 2.0 specification's example methods:
//
//	subtract      [minuend, subtrahend] or {"minuend", "subtrahend"} → minuend − subtrahend
//	sum           [n, …] → the sum
//	update        [n, …] → null (the specification sends it as a notification)
//	notify_hello  [n] → null (likewise)
//	get_data      no params → ["hello", 5]
type Spec struct {
	delay time.Duration
}

var _ gateway.Target = (*Spec)(nil)

// The demo methods.
const (
	demoSubtract    = "subtract"
	demoSum         = "sum"
	demoUpdate      = "update"
	demoNotifyHello = "notify_hello"
	demoGetData     = "get_data"
)

// NewSpec returns the demo target serving the specification's example methods.
func NewSpec(cfg routing.DemoConfig) *Spec { return &Spec{delay: cfg.Delay} }

// Name implements gateway.Target.
func (*Spec) Name() string { return "demo" }

var _ gateway.Backended = (*Spec)(nil)

// Backend implements gateway.Backended: the demo runs in the process, it has no backend
// (no breaker, retry budget or admission queue of its own).
func (*Spec) Backend(*gateway.Call) string { return "" }

// Methods returns the methods the demo target serves.
func (*Spec) Methods() []string {
	return []string{demoSubtract, demoSum, demoUpdate, demoNotifyHello, demoGetData}
}

var _ capability.Provider = (*Spec)(nil)

// Capabilities describes the demo methods as capabilities, in the order of Methods: each
// with a description, JSON Schemas of its params and result, and an example. All are
// deterministic. subtract takes its named form ({minuend, subtrahend}) as a capability;
// the others take the arrays the specification sends.
func (*Spec) Capabilities() []capability.Capability {
	numbers := `{"type":"array","items":{"type":"number"}}`
	caps := []struct {
		method, desc, in, out, exIn, exOut string
	}{
		{demoSubtract, "Subtracts subtrahend from minuend and returns the difference (JSON-RPC 2.0 specification example).",
			`{"type":"object","properties":{"minuend":{"type":"number"},"subtrahend":{"type":"number"}},"required":["minuend","subtrahend"],"additionalProperties":false}`,
			`{"type":"number"}`, `{"minuend":42,"subtrahend":23}`, `19`},
		{demoSum, "Adds up a list of numbers and returns the sum (JSON-RPC 2.0 specification example).",
			numbers, `{"type":"number"}`, `[1,2,4]`, `7`},
		{demoUpdate, "Accepts a list of numbers and returns null; the specification sends it as a notification.",
			numbers, `{"type":"null"}`, `[1,2,3,4,5]`, `null`},
		{demoNotifyHello, "Accepts one number and returns null; the specification sends it as a notification.",
			`{"type":"array","items":{"type":"number"},"minItems":1,"maxItems":1}`, `{"type":"null"}`, `[7]`, `null`},
		{demoGetData, "Takes no params and returns the fixed list [\"hello\", 5] (JSON-RPC 2.0 specification example).",
			`{"type":["object","array"],"maxProperties":0,"maxItems":0}`,
			`{"type":"array","prefixItems":[{"const":"hello"},{"const":5}],"items":false}`, `{}`, `["hello",5]`},
	}
	out := make([]capability.Capability, len(caps))
	for i, c := range caps {
		out[i] = capability.Capability{
			ID: c.method, Description: c.desc, Method: c.method,
			Input: json.RawMessage(c.in), Output: json.RawMessage(c.out),
			Examples: []capability.Example{{In: json.RawMessage(c.exIn), Out: json.RawMessage(c.exOut)}},
			Kind:     capability.KindBuiltin, Source: "demo", Deterministic: true,
		}
	}
	return out
}

// Invoke implements gateway.Target.
func (d *Spec) Invoke(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
	if err := d.wait(ctx); err != nil {
		return nil, err
	}
	switch call.Method {
	case demoSubtract:
		return subtract(call.Params)
	case demoSum:
		return sum(call.Params)
	case demoUpdate, demoNotifyHello:
		return anyParams(call.Params)
	case demoGetData:
		if len(call.Params) != 0 && !isEmptyContainer(call.Params) {
			return nil, invalidParams("get_data takes no params")
		}
		return gateway.NewResult(getDataResult), nil
	default:
		return nil, gateway.NewError(schemas.CodeMethodNotFound)
	}
}

var getDataResult = []byte(`["hello",5]`)

func (d *Spec) wait(ctx context.Context) error {
	if d.delay <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d.delay)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return gateway.AsError(ctx.Err()).With("layer", "demo")
	}
}

func invalidParams(reason string) *gateway.Error {
	return gateway.NewError(schemas.CodeInvalidParams).With("reason", reason)
}

func subtract(params []byte) (*gateway.Result, error) {
	var pair []json.Number
	if len(params) > 0 && params[0] == '{' {
		var named struct {
			Minuend    *json.Number `json:"minuend"`
			Subtrahend *json.Number `json:"subtrahend"`
		}
		if err := decodeStrict(params, &named); err != nil || named.Minuend == nil || named.Subtrahend == nil {
			return nil, invalidParams("subtract takes {minuend: number, subtrahend: number}")
		}
		pair = []json.Number{*named.Minuend, *named.Subtrahend}
	} else if err := decodeStrict(params, &pair); err != nil || len(pair) != 2 {
		return nil, invalidParams("subtract takes [minuend, subtrahend]")
	}
	r, err := combine(pair[0], pair[1], '-')
	if err != nil {
		return nil, err
	}
	return gateway.NewResult([]byte(r)), nil
}

func sum(params []byte) (*gateway.Result, error) {
	var nums []json.Number
	if len(params) == 0 || decodeStrict(params, &nums) != nil {
		return nil, invalidParams("sum takes [number, …]")
	}
	total := json.Number("0")
	for _, n := range nums {
		var err error
		if total, err = combine(total, n, '+'); err != nil {
			return nil, err
		}
	}
	return gateway.NewResult([]byte(total)), nil
}

// combine adds or subtracts two numbers: exactly in int64 when both are integers and the
// result does not overflow, in float64 otherwise.
func combine(x, y json.Number, op byte) (json.Number, error) {
	a, aerr := x.Int64()
	b, berr := y.Int64()
	if aerr == nil && berr == nil {
		if r, ok := addInt(a, b, op); ok {
			return json.Number(strconv.FormatInt(r, 10)), nil
		}
	}
	f, ferr := x.Float64()
	g, gerr := y.Float64()
	if ferr != nil || gerr != nil {
		return "", invalidParams("number out of range")
	}
	if op == '-' {
		g = -g
	}
	r := f + g
	if math.IsInf(r, 0) || math.IsNaN(r) {
		return "", invalidParams("result out of range")
	}
	return json.Number(strconv.FormatFloat(r, 'g', -1, 64)), nil
}

func anyParams([]byte) (*gateway.Result, error) {
	return gateway.NewResult([]byte("null")), nil
}

func isEmptyContainer(p []byte) bool {
	p = bytes.TrimSpace(p)
	return len(p) == 2 && (p[0] == '[' && p[1] == ']' || p[0] == '{' && p[1] == '}')
}

// decodeStrict decodes params into v with numbers kept exact and unknown fields refused.
func decodeStrict(params []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(params))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// addInt computes a+b or a−b, reporting false on int64 overflow.
func addInt(a, b int64, op byte) (int64, bool) {
	if op == '-' {
		if b == math.MinInt64 {
			return 0, false
		}
		b = -b
	}
	r := a + b
	if (a >= 0) == (b >= 0) && (r >= 0) != (a >= 0) {
		return 0, false
	}
	return r, true
}
