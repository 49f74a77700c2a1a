package jsonrpc_test

import (
	"testing"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// specExamples are the requests of the Examples section of the JSON-RPC 2.0
// specification (https://www.jsonrpc.org/specification#examples), verbatim, with what the
// codec makes of them. Whether a method exists is not the codec's business.
var specExamples = []struct {
	name string
	body string
	want want
}{
	{
		name: "positional parameters",
		body: `{"jsonrpc": "2.0", "method": "subtract", "params": [42, 23], "id": 1}`,
		want: single(req("subtract", `[42, 23]`, `1`)),
	},
	{
		name: "positional parameters reversed",
		body: `{"jsonrpc": "2.0", "method": "subtract", "params": [23, 42], "id": 2}`,
		want: single(req("subtract", `[23, 42]`, `2`)),
	},
	{
		name: "named parameters",
		body: `{"jsonrpc": "2.0", "method": "subtract", "params": {"subtrahend": 23, "minuend": 42}, "id": 3}`,
		want: single(req("subtract", `{"subtrahend": 23, "minuend": 42}`, `3`)),
	},
	{
		name: "named parameters reordered",
		body: `{"jsonrpc": "2.0", "method": "subtract", "params": {"minuend": 42, "subtrahend": 23}, "id": 4}`,
		want: single(req("subtract", `{"minuend": 42, "subtrahend": 23}`, `4`)),
	},
	{
		name: "notification",
		body: `{"jsonrpc": "2.0", "method": "update", "params": [1,2,3,4,5]}`,
		want: single(req("update", `[1,2,3,4,5]`, ``)),
	},
	{
		name: "notification without params",
		body: `{"jsonrpc": "2.0", "method": "foobar"}`,
		want: single(req("foobar", ``, ``)),
	},
	{
		name: "non-existent method",
		body: `{"jsonrpc": "2.0", "method": "foobar", "id": "1"}`,
		want: single(req("foobar", ``, `"1"`)),
	},
	{
		name: "invalid JSON",
		body: `{"jsonrpc": "2.0", "method": "foobar, "params": "bar", "baz]`,
		want: topErr(schemas.CodeParseError),
	},
	{
		name: "invalid Request object",
		body: `{"jsonrpc": "2.0", "method": 1, "params": "bar"}`,
		want: single(bad(schemas.CodeInvalidRequest, ``)),
	},
	{
		name: "batch with invalid JSON",
		body: `[
  {"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"},
  {"jsonrpc": "2.0", "method"
]`,
		want: topErr(schemas.CodeParseError),
	},
	{
		name: "empty array",
		body: `[]`,
		want: topErr(schemas.CodeInvalidRequest),
	},
	{
		name: "invalid batch of one",
		body: `[1]`,
		want: batchOf(bad(schemas.CodeInvalidRequest, ``)),
	},
	{
		name: "invalid batch",
		body: `[1,2,3]`,
		want: batchOf(
			bad(schemas.CodeInvalidRequest, ``),
			bad(schemas.CodeInvalidRequest, ``),
			bad(schemas.CodeInvalidRequest, ``),
		),
	},
	{
		name: "mixed batch",
		body: `[
        {"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"},
        {"jsonrpc": "2.0", "method": "notify_hello", "params": [7]},
        {"jsonrpc": "2.0", "method": "subtract", "params": [42,23], "id": "2"},
        {"foo": "boo"},
        {"jsonrpc": "2.0", "method": "foo.get", "params": {"name": "myself"}, "id": "5"},
        {"jsonrpc": "2.0", "method": "get_data", "id": "9"} 
    ]`,
		want: batchOf(
			req("sum", `[1,2,4]`, `"1"`),
			req("notify_hello", `[7]`, ``),
			req("subtract", `[42,23]`, `"2"`),
			bad(schemas.CodeInvalidRequest, ``),
			req("foo.get", `{"name": "myself"}`, `"5"`),
			req("get_data", ``, `"9"`),
		),
	},
	{
		name: "batch of notifications",
		body: `[
        {"jsonrpc": "2.0", "method": "notify_sum", "params": [1,2,4]},
        {"jsonrpc": "2.0", "method": "notify_hello", "params": [7]}
    ]`,
		want: batchOf(req("notify_sum", `[1,2,4]`, ``), req("notify_hello", `[7]`, ``)),
	},
}

func TestDecodeSpecExamples(t *testing.T) {
	t.Parallel()
	for _, tc := range specExamples {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			check(t, tc.body, jsonrpc.Limits{}, tc.want)
		})
	}
}
