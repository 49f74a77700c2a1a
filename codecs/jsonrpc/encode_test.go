package jsonrpc_test

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

func TestAppendString(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{``, `""`},
		{`plain text`, `"plain text"`},
		{`"quoted" \ back`, `"\"quoted\" \\ back"`},
		{"\b\f\n\r\t", `"\b\f\n\r\t"`},
		{"\x00\x01\x1f\x7f", `"\u0000\u0001\u001f` + "\x7f" + `"`},
		{`<a href="x">&amp;</a>`, `"<a href=\"x\">&amp;</a>"`},
		{"é€😀", `"é€😀"`},
		{"\u2028\u2029", `"\u2028\u2029"`},
		{"a\xffb", `"a\ufffdb"`},
		{"\xed\xa0\x80", `"\ufffd\ufffd\ufffd"`},
		{"\xe2\x82", `"\ufffd\ufffd"`},
		{"/", `"/"`},
	}
	for _, tc := range tests {
		got := string(jsonrpc.AppendString([]byte("prefix:"), tc.in))
		if got != "prefix:"+tc.want {
			t.Errorf("AppendString(%q) = %s; want prefix:%s", tc.in, got, tc.want)
		}
		if std := stdString(t, tc.in); std != tc.want {
			t.Errorf("encoding/json writes %q as %s; want %s", tc.in, std, tc.want)
		}
	}
}

// stdString is how encoding/json writes s without HTML escaping.
func stdString(t testing.TB, s string) string {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatalf("encoding %q: %v", s, err)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

func TestAppendResult(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		id     jsonrpc.ID
		result string
		want   string
	}{
		{"number id", jsonrpc.NumberID(1), `{"a":[1,2]}`, `{"jsonrpc":"2.0","result":{"a":[1,2]},"id":1}`},
		{"string id", jsonrpc.StringID("x\"y"), `"ok"`, `{"jsonrpc":"2.0","result":"ok","id":"x\"y"}`},
		{"raw id", raw(`"\u0061"`), `true`, `{"jsonrpc":"2.0","result":true,"id":"\u0061"}`},
		{"empty result", jsonrpc.NumberID(2), ``, `{"jsonrpc":"2.0","result":null,"id":2}`},
		{"zero id", jsonrpc.ID{}, `0`, `{"jsonrpc":"2.0","result":0,"id":null}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := jsonrpc.AppendResult(nil, tc.id, []byte(tc.result))
			if string(got) != tc.want {
				t.Fatalf("AppendResult = %s; want %s", got, tc.want)
			}
			var resp struct {
				JSONRPC string          `json:"jsonrpc"`
				Result  json.RawMessage `json:"result"`
				ID      json.RawMessage `json:"id"`
			}
			if err := json.Unmarshal(got, &resp); err != nil || resp.JSONRPC != "2.0" || string(resp.ID) != tc.id.Raw() {
				t.Fatalf("encoding/json reads %s as %+v, %v", got, resp, err)
			}
		})
	}
}

func TestAppendError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		id      jsonrpc.ID
		code    schemas.Code
		message string
		data    []byte
		want    string
	}{
		{"without data", jsonrpc.NumberID(1), schemas.CodeMethodNotFound, "Method not found", nil,
			`{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"},"id":1}`},
		{"with data", jsonrpc.StringID("a"), schemas.CodeRateLimited, "Rate limit exceeded", []byte(`{"retry_after_ms":100}`),
			`{"jsonrpc":"2.0","error":{"code":5001,"message":"Rate limit exceeded","data":{"retry_after_ms":100}},"id":"a"}`},
		{"escaped message", jsonrpc.ID{}, schemas.CodeInternal, "bad \"thing\"\n<x>", nil,
			`{"jsonrpc":"2.0","error":{"code":-32603,"message":"bad \"thing\"\n<x>"},"id":null}`},
		{"null data", jsonrpc.NullID, schemas.CodeInternal, "", []byte(`null`),
			`{"jsonrpc":"2.0","error":{"code":-32603,"message":"","data":null},"id":null}`},
		{"extreme code", jsonrpc.NumberID(0), math.MinInt32, "m", nil,
			`{"jsonrpc":"2.0","error":{"code":-2147483648,"message":"m"},"id":0}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := jsonrpc.AppendError(nil, tc.id, tc.code, tc.message, tc.data)
			if string(got) != tc.want {
				t.Fatalf("AppendError = %s; want %s", got, tc.want)
			}
			resp := readError(t, got)
			if resp.Error.Code != int64(tc.code) || resp.Error.Message != tc.message {
				t.Fatalf("encoding/json reads %s as %+v", got, resp)
			}
		})
	}
}

// errorResponse is an error response as encoding/json reads it.
type errorResponse struct {
	JSONRPC string `json:"jsonrpc"`
	Error   struct {
		Code    int64          `json:"code"`
		Message string         `json:"message"`
		Data    map[string]any `json:"data"`
	} `json:"error"`
	ID json.RawMessage `json:"id"`
}

// readError decodes an error response with encoding/json.
func readError(t *testing.T, b []byte) errorResponse {
	t.Helper()
	var resp errorResponse
	if err := json.Unmarshal(b, &resp); err != nil || resp.JSONRPC != "2.0" {
		t.Fatalf("encoding/json reads %s as %+v, %v", b, resp, err)
	}
	return resp
}

func TestAppendDecodeError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		body  string
		trace string
		want  string
	}{
		{"parse error", `{`, "t-1",
			`{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error","data":{"reason":"invalid JSON","trace_id":"t-1"}},"id":null}`},
		{"limit", `[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`, "",
			`{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request","data":{"reason":"limit exceeded","limit":"max_depth","max":64}},"id":null}`},
		{"member error", `{"jsonrpc":"2.0","method":"m","params":{"deadline_ms":0},"id":"r\"1"}`, "t\"2",
			`{"jsonrpc":"2.0","error":{"code":-32602,"message":"Invalid params","data":{"reason":"deadline_ms must be a positive integer no greater than 2^53","trace_id":"t\"2"}},"id":"r\"1"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, e := jsonrpc.Decode([]byte(tc.body), jsonrpc.Limits{})
			if e == nil {
				e = p.Members[0].Err
			}
			got := jsonrpc.AppendDecodeError(nil, e, tc.trace)
			if string(got) != tc.want {
				t.Fatalf("AppendDecodeError = %s; want %s", got, tc.want)
			}
			resp := readError(t, got)
			if resp.Error.Data["reason"] != e.Reason || string(resp.ID) != e.ID.Raw() {
				t.Fatalf("encoding/json reads %s as %+v", got, resp)
			}
		})
	}
}

func TestAppendDataObject(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		fields  map[string]any
		trace   string
		want    string
		wantErr bool
	}{
		{"nil fields, no trace", nil, "", `{}`, false},
		{"trace only", nil, "abc", `{"trace_id":"abc"}`, false},
		{"sorted with trace last", map[string]any{"b": 1, "a": "<x>", "c": []int{1}}, "t", `{"a":"<x>","b":1,"c":[1],"trace_id":"t"}`, false},
		{"trace replaces field", map[string]any{"trace_id": "old", "z": nil}, "new", `{"z":null,"trace_id":"new"}`, false},
		{"field kept without trace", map[string]any{"trace_id": "old"}, "", `{"trace_id":"old"}`, false},
		{"escaped names", map[string]any{"a\"b": true}, "", `{"a\"b":true}`, false},
		{"unencodable value", map[string]any{"f": func() {}}, "t", ``, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := jsonrpc.AppendDataObject([]byte("x"), tc.fields, tc.trace)
			if tc.wantErr {
				if err == nil || string(got) != "x" {
					t.Fatalf("AppendDataObject = %s, %v; want x and an error", got, err)
				}
				return
			}
			if err != nil || string(got) != "x"+tc.want {
				t.Fatalf("AppendDataObject = %s, %v; want x%s", got, err, tc.want)
			}
			var m map[string]any
			if err := json.Unmarshal(got[1:], &m); err != nil {
				t.Fatalf("encoding/json cannot read %s: %v", got[1:], err)
			}
			if tc.trace != "" && !reflect.DeepEqual(m["trace_id"], tc.trace) {
				t.Fatalf("trace_id = %v; want %q", m["trace_id"], tc.trace)
			}
		})
	}
}

func TestAppendNoAllocs(t *testing.T) {
	id, e := jsonrpc.NumberID(7), &jsonrpc.DecodeError{Code: schemas.CodeInvalidRequest, Reason: "r", Limit: "max_depth", Max: 3}
	buf := make([]byte, 0, 512)
	allocs := testing.AllocsPerRun(100, func() {
		b := jsonrpc.AppendResult(buf[:0], id, []byte(`{"ok":true}`))
		b = jsonrpc.AppendError(b, id, schemas.CodeInternal, "Internal \"error\"", []byte(`{}`))
		_ = jsonrpc.AppendDecodeError(b, e, "trace")
	})
	if allocs != 0 {
		t.Errorf("encoding allocates %v times; want 0", allocs)
	}
}
