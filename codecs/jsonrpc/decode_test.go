package jsonrpc_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

const (
	parseErr   = schemas.CodeParseError
	invalidReq = schemas.CodeInvalidRequest
	invalidPar = schemas.CodeInvalidParams
)

// env wraps members into a request object with the version and method m.
func env(members string) string { return `{"jsonrpc":"2.0","method":"m"` + members + `}` }

func TestDecodeSyntax(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		want want
	}{
		{"empty", ``, topErr(parseErr)},
		{"whitespace only", " \t\r\n ", topErr(parseErr)},
		{"trailing garbage", env(``) + ` x`, topErr(parseErr)},
		{"two values", env(``) + env(``), topErr(parseErr)},
		{"trailing whitespace", " \n" + env(``) + "\r\n\t ", single(req("m", ``, ``))},
		{"byte order mark", "\xef\xbb\xbf" + env(``), topErr(parseErr)},
		{"non-JSON whitespace", "\f" + env(``), topErr(parseErr)},
		{"unterminated object", `{"jsonrpc":"2.0","method":"m"`, topErr(parseErr)},
		{"unterminated string", `{"jsonrpc":"2.0","method":"m`, topErr(parseErr)},
		{"trailing comma in object", env(`,`), topErr(parseErr)},
		{"trailing comma in batch", `[` + env(``) + `,]`, topErr(parseErr)},
		{"trailing comma in params", env(`,"params":[1,]`), topErr(parseErr)},
		{"trailing comma in depends_on", env(`,"params":{"depends_on":[1,]}`), topErr(parseErr)},
		{"missing colon", `{"jsonrpc" "2.0"}`, topErr(parseErr)},
		{"missing comma", `{"jsonrpc":"2.0" "method":"m"}`, topErr(parseErr)},
		{"unquoted name", `{jsonrpc:"2.0"}`, topErr(parseErr)},
		{"single quotes", `{'jsonrpc':'2.0'}`, topErr(parseErr)},
		{"invalid UTF-8 in string", env(`,"params":["a` + "\xff" + `"]`), topErr(parseErr)},
		{"invalid UTF-8 in name", env(`,"params":{"` + "\xc3" + `":1}`), topErr(parseErr)},
		{"UTF-8 encoded surrogate", env(`,"id":"` + "\xed\xa0\x80" + `"`), topErr(parseErr)},
		{"overlong UTF-8", env(`,"id":"` + "\xc0\xaf" + `"`), topErr(parseErr)},
		{"raw control character", env(`,"id":"a` + "\n" + `"`), topErr(parseErr)},
		{"raw tab in string", env(`,"id":"a` + "\t" + `"`), topErr(parseErr)},
		{"bad escape", env(`,"id":"\x41"`), topErr(parseErr)},
		{"short unicode escape", env(`,"id":"\u12"`), topErr(parseErr)},
		{"non-hex unicode escape", env(`,"id":"\u12g4"`), topErr(parseErr)},
		{"escape at end", env(`,"id":"\`), topErr(parseErr)},
		{"leading zero", env(`,"id":01`), topErr(parseErr)},
		{"leading plus", env(`,"id":+1`), topErr(parseErr)},
		{"bare fraction", env(`,"id":.5`), topErr(parseErr)},
		{"empty fraction", env(`,"id":1.`), topErr(parseErr)},
		{"empty exponent", env(`,"id":1e`), topErr(parseErr)},
		{"signed empty exponent", env(`,"id":1e+`), topErr(parseErr)},
		{"lone minus", env(`,"id":-`), topErr(parseErr)},
		{"hex number", env(`,"id":0x10`), topErr(parseErr)},
		{"NaN", env(`,"id":NaN`), topErr(parseErr)},
		{"Infinity", env(`,"id":-Infinity`), topErr(parseErr)},
		{"truncated literal", env(`,"params":[tru]`), topErr(parseErr)},
		{"misspelt literal", env(`,"params":[nul1]`), topErr(parseErr)},
		{"capitalised literal", env(`,"params":[True]`), topErr(parseErr)},
		{"comment", env(``) + `// x`, topErr(parseErr)},
		{"syntax error after a member error", `[1, {"foo":1}, {]`, topErr(parseErr)},
		{"top-level number", `1`, topErr(invalidReq)},
		{"top-level string", `"x"`, topErr(invalidReq)},
		{"top-level null", ` null `, topErr(invalidReq)},
		{"top-level true", `true`, topErr(invalidReq)},
		{"empty batch", `[]`, topErr(invalidReq)},
		{"empty batch with whitespace", " [ \n ] ", topErr(invalidReq)},
		{"valid numbers", env(`,"params":[0,-0,1.5,-1.5e10,1E+2,1e-2,0.0]`), single(req("m", `[0,-0,1.5,-1.5e10,1E+2,1e-2,0.0]`, ``))},
		{"valid escapes", env(`,"params":["\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00"]`), single(req("m", `["\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00"]`, ``))},
		{"lone surrogate escape", env(`,"params":["\ud800"]`), single(req("m", `["\ud800"]`, ``))},
		{"non-ASCII text", env(`,"params":["héllo, 世界 😀"]`), single(req("m", `["héllo, 世界 😀"]`, ``))},
		{"DEL is allowed", env(`,"params":["` + "\x7f" + `"]`), single(req("m", `["`+"\x7f"+`"]`, ``))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			check(t, tc.body, jsonrpc.Limits{}, tc.want)
		})
	}
}

func TestDecodeEnvelope(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		want want
	}{
		{"notification", env(``), single(req("m", ``, ``))},
		{"members in any order", `{"id":7,"params":[],"method":"m","jsonrpc":"2.0"}`, single(req("m", `[]`, `7`))},
		{"whitespace everywhere", "{ \"jsonrpc\" :\t\"2.0\" ,\n\"method\"\r: \"m\" , \"id\" : 1 }", single(req("m", ``, `1`))},
		{"string id", env(`,"id":"abc"`), single(req("m", ``, `"abc"`))},
		{"escaped string id kept raw", env(`,"id":"a\u0062"`), single(req("m", ``, `"a\u0062"`))},
		{"empty string id", env(`,"id":""`), single(req("m", ``, `""`))},
		{"negative id", env(`,"id":-5`), single(req("m", ``, `-5`))},
		{"fractional id", env(`,"id":1.5e3`), single(req("m", ``, `1.5e3`))},
		{"null id", env(`,"id":null`), single(req("m", ``, `null`))},
		{"true id", env(`,"id":true`), single(bad(invalidReq, ``))},
		{"object id", env(`,"id":{}`), single(bad(invalidReq, ``))},
		{"array id", env(`,"id":[1]`), single(bad(invalidReq, ``))},
		{"empty params object", env(`,"params":{}`), single(req("m", `{}`, ``))},
		{"empty params array", env(`,"params":[]`), single(req("m", `[]`, ``))},
		{"null params", env(`,"params":null,"id":1`), single(bad(invalidReq, `1`))},
		{"string params", env(`,"params":"bar","id":1`), single(bad(invalidReq, `1`))},
		{"number params", env(`,"params":1,"id":1`), single(bad(invalidReq, `1`))},
		{"bool params", env(`,"params":false,"id":1`), single(bad(invalidReq, `1`))},
		{"escaped method", `{"jsonrpc":"2.0","method":"tools\/call\u00e9"}`, single(req("tools/call\u00e9", ``, ``))},
		{"method with lone surrogate", `{"jsonrpc":"2.0","method":"a\udc00"}`, single(req("a\ufffd", ``, ``))},
		{"empty method", `{"jsonrpc":"2.0","method":"","id":1}`, single(bad(invalidReq, `1`))},
		{"number method", `{"jsonrpc":"2.0","method":1,"id":1}`, single(bad(invalidReq, `1`))},
		{"null method", `{"jsonrpc":"2.0","method":null,"id":1}`, single(bad(invalidReq, `1`))},
		{"missing method", `{"jsonrpc":"2.0","id":1}`, single(bad(invalidReq, `1`))},
		{"missing jsonrpc", `{"method":"m","id":1}`, single(bad(invalidReq, `1`))},
		{"empty object", `{}`, single(bad(invalidReq, ``))},
		{"jsonrpc 2.1", `{"jsonrpc":"2.1","method":"m","id":1}`, single(bad(invalidReq, `1`))},
		{"jsonrpc number", `{"jsonrpc":2.0,"method":"m","id":1}`, single(bad(invalidReq, `1`))},
		{"jsonrpc padded", `{"jsonrpc":"2.0 ","method":"m","id":1}`, single(bad(invalidReq, `1`))},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","method":"m","id":1}`, single(bad(invalidReq, `1`))},
		{"jsonrpc escaped", `{"jsonrpc":"\u0032.0","method":"m","id":1}`, single(req("m", ``, `1`))},
		{"jsonrpc long escaped", `{"jsonrpc":"\u0032\u002e\u0030","method":"m","id":1}`, single(req("m", ``, `1`))},
		{"jsonrpc too long", `{"jsonrpc":"\u0032\u002e\u0030\u0030","method":"m","id":1}`, single(bad(invalidReq, `1`))},
		{"unknown member", env(`,"foo":1,"id":1`), single(bad(invalidReq, `1`))},
		{"unknown member before id", `{"foo":{"a":1,"a":2},"jsonrpc":"2.0","method":"m","id":"x"}`, single(bad(invalidReq, `"x"`))},
		{"unknown empty name", env(`,"":1,"id":1`), single(bad(invalidReq, `1`))},
		{"result member", env(`,"result":1,"id":1`), single(bad(invalidReq, `1`))},
		{"case-sensitive names", `{"jsonrpc":"2.0","Method":"m","id":1}`, single(bad(invalidReq, `1`))},
		{"upper-case ID", env(`,"ID":1`), single(bad(invalidReq, ``))},
		{"escaped member names", `{"\u006asonrpc":"2.0","\u006dethod":"m","p\u0061rams":[],"\u0069\u0064":1}`, single(req("m", `[]`, `1`))},
		{"duplicate method", `{"jsonrpc":"2.0","method":"a","method":"b","id":1}`, single(bad(invalidReq, `1`))},
		{"escaped duplicate method", `{"jsonrpc":"2.0","method":"a","\u006dethod":"b","id":1}`, single(bad(invalidReq, `1`))},
		{"escaped duplicate jsonrpc", `{"jsonrpc":"2.0","method":"a","jsonrp\u0063":"2.0","id":1}`, single(bad(invalidReq, `1`))},
		{"duplicate params", env(`,"params":[],"params":{},"id":1`), single(bad(invalidReq, `1`))},
		{"duplicate id", env(`,"id":1,"id":2`), single(bad(invalidReq, ``))},
		{"escaped duplicate id", env(`,"id":1,"\u0069d":1`), single(bad(invalidReq, ``))},
		{"error keeps id written first", `{"id":3,"jsonrpc":"2.0","method":7}`, single(bad(invalidReq, `3`))},
		{"error keeps id written last", `{"jsonrpc":"2.0","method":7,"id":3}`, single(bad(invalidReq, `3`))},
		{"error keeps null id", `{"jsonrpc":"2.0","method":7,"id":null}`, single(bad(invalidReq, `null`))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			check(t, tc.body, jsonrpc.Limits{}, tc.want)
		})
	}
}

func TestDecodeDuplicateNames(t *testing.T) {
	t.Parallel()
	many := func(dup bool) string {
		var b strings.Builder
		b.WriteString(`{`)
		for i := range 40 {
			if i > 0 {
				b.WriteString(`,`)
			}
			b.WriteString(`"k` + strings.Repeat("x", i) + `":1`)
		}
		if dup {
			b.WriteString(`,"k\u0078xx":2`)
		}
		b.WriteString(`}`)
		return b.String()
	}
	tests := []struct {
		name   string
		params string
		ok     bool
	}{
		{"distinct names", `{"a":1,"b":{"a":1},"c":[{"a":1},{"a":2}]}`, true},
		{"same name in sibling objects", `[{"a":1},{"a":1}]`, true},
		{"same name at two depths", `{"a":{"a":{"a":1}}}`, true},
		{"names differing in case", `{"user":1,"User":2}`, true},
		{"top of params", `{"a":1,"a":1}`, false},
		{"nested object", `{"a":{"b":1,"b":2}}`, false},
		{"object in array", `[1,[{"x":1,"y":2,"x":3}]]`, false},
		{"deep", `{"a":[{"b":[{"c":{"d":1,"d":1}}]}]}`, false},
		{"escaped", `{"a":1,"\u0061":2}`, false},
		{"escaped solidus", `{"a/b":1,"a\/b":2}`, false},
		{"surrogate pair against raw text", `{"😀":1,"\ud83d\ude00":2}`, false},
		{"lone surrogates become U+FFFD", `{"\ud800":1,"\udc00":2}`, false},
		{"empty names", `{"":1,"":2}`, false},
		{"reserved name", `{"depends_on":[],"depends_on":[]}`, false},
		{"reserved name escaped", `{"deadline_ms":1,"deadline\u005fms":2}`, false},
		{"large object", many(false), true},
		{"large object with duplicate", many(true), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			body := env(`,"params":` + tc.params + `,"id":1`)
			p, err := jsonrpc.Decode([]byte(body), jsonrpc.Limits{})
			if err != nil {
				t.Fatalf("Decode error = %+v; want none", err)
			}
			got := p.Members[0].Err
			if tc.ok && got != nil {
				t.Fatalf("Decode(%s) member error = %+v; want none", body, got)
			}
			if !tc.ok && (got == nil || got.Code != invalidReq || rawID(got.ID) != `1`) {
				t.Fatalf("Decode(%s) member error = %+v; want invalid request with id 1", body, got)
			}
		})
	}
}

func TestDecodeReservedParams(t *testing.T) {
	t.Parallel()
	withParams := func(params string) string { return env(`,"params":` + params + `,"id":1`) }
	ok := func(params string, deps []string, deadline int64) want {
		return single(wantMember{method: "m", params: params, id: `1`, deps: deps, deadline: deadline})
	}
	tests := []struct {
		name string
		body string
		want want
	}{
		{"depends_on", withParams(`{"a":1,"depends_on":["x",2,-3.5e1]}`), ok(`{"a":1}`, []string{`"x"`, `2`, `-3.5e1`}, 0)},
		{"deadline_ms", withParams(`{"deadline_ms":1500,"a":1}`), ok(`{"a":1}`, nil, 1500)},
		{"both between members", withParams(`{"a":1,"depends_on":["x"],"b":[2],"deadline_ms":9,"c":{}}`), ok(`{"a":1,"b":[2],"c":{}}`, []string{`"x"`}, 9)},
		{"whitespace kept inside members", withParams(`{ "a" : 1 , "deadline_ms" : 9 , "b" : 2 }`), ok(`{"a" : 1,"b" : 2}`, nil, 9)},
		{"only reserved", withParams(`{"depends_on":[],"deadline_ms":1}`), ok(`{}`, nil, 1)},
		{"empty depends_on", withParams(`{"depends_on":[ ]}`), ok(`{}`, nil, 0)},
		{"escaped reserved names", withParams(`{"depends\u005fon":[1],"\u0064eadline_ms":2}`), ok(`{}`, []string{`1`}, 2)},
		{"escaped dependency kept raw", withParams(`{"depends_on":["\u0061"]}`), ok(`{}`, []string{`"\u0061"`}, 0)},
		{"deadline 2^53", withParams(`{"deadline_ms":9007199254740992}`), ok(`{}`, nil, 1<<53)},
		{"array params untouched", withParams(`[{"deadline_ms":"x"},{"depends_on":1}]`), ok(`[{"deadline_ms":"x"},{"depends_on":1}]`, nil, 0)},
		{"nested names untouched", withParams(`{"x":{"deadline_ms":"x","depends_on":1}}`), ok(`{"x":{"deadline_ms":"x","depends_on":1}}`, nil, 0)},
		{"case-sensitive reserved names", withParams(`{"Deadline_ms":"x","DEPENDS_ON":1}`), ok(`{"Deadline_ms":"x","DEPENDS_ON":1}`, nil, 0)},
		{"depends_on string", withParams(`{"depends_on":"x"}`), single(bad(invalidPar, `1`))},
		{"depends_on null", withParams(`{"depends_on":null}`), single(bad(invalidPar, `1`))},
		{"depends_on object", withParams(`{"depends_on":{"a":1}}`), single(bad(invalidPar, `1`))},
		{"depends_on null element", withParams(`{"depends_on":[null]}`), single(bad(invalidPar, `1`))},
		{"depends_on bool element", withParams(`{"depends_on":[1,true]}`), single(bad(invalidPar, `1`))},
		{"depends_on nested array", withParams(`{"depends_on":[[1]]}`), single(bad(invalidPar, `1`))},
		{"depends_on object element", withParams(`{"depends_on":[{}]}`), single(bad(invalidPar, `1`))},
		{"deadline zero", withParams(`{"deadline_ms":0}`), single(bad(invalidPar, `1`))},
		{"deadline negative", withParams(`{"deadline_ms":-5}`), single(bad(invalidPar, `1`))},
		{"deadline fraction", withParams(`{"deadline_ms":1.5}`), single(bad(invalidPar, `1`))},
		{"deadline integral fraction", withParams(`{"deadline_ms":1000.0}`), single(bad(invalidPar, `1`))},
		{"deadline exponent", withParams(`{"deadline_ms":1e3}`), single(bad(invalidPar, `1`))},
		{"deadline string", withParams(`{"deadline_ms":"1000"}`), single(bad(invalidPar, `1`))},
		{"deadline null", withParams(`{"deadline_ms":null}`), single(bad(invalidPar, `1`))},
		{"deadline 2^53+1", withParams(`{"deadline_ms":9007199254740993}`), single(bad(invalidPar, `1`))},
		{"deadline huge", withParams(`{"deadline_ms":99999999999999999999999}`), single(bad(invalidPar, `1`))},
		{"invalid params with id first", `{"id":"q","jsonrpc":"2.0","method":"m","params":{"deadline_ms":0}}`, single(bad(invalidPar, `"q"`))},
		{"invalid params of a notification", env(`,"params":{"deadline_ms":0}`), single(bad(invalidPar, ``))},
		{"invalid request outranks invalid params", env(`,"params":{"deadline_ms":0},"x":1,"id":1`), single(bad(invalidReq, `1`))},
		{"duplicate in params outranks invalid params", withParams(`{"deadline_ms":0,"a":1,"a":2}`), single(bad(invalidReq, `1`))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			check(t, tc.body, jsonrpc.Limits{}, tc.want)
		})
	}
}

func TestDecodeBatch(t *testing.T) {
	t.Parallel()
	body := `[
		{"jsonrpc":"2.0","method":"a","params":{"depends_on":["b"],"x":1},"id":"a"},
		{"jsonrpc":"2.0","method":"b","params":{"deadline_ms":5},"id":"b"},
		[],
		{"jsonrpc":"2.0","method":"c","params":{"deadline_ms":-1},"id":3},
		{"jsonrpc":"2.0","method":"d","id":4,"id":5},
		null,
		{"jsonrpc":"2.0","method":"e","params":{"depends_on":[1,2]}},
		{"jsonrpc":"2.0","method":"f","params":[{"k":1,"k":1}],"id":6}
	]`
	w := batchOf(
		wantMember{method: "a", params: `{"x":1}`, id: `"a"`, deps: []string{`"b"`}},
		wantMember{method: "b", params: `{}`, id: `"b"`, deadline: 5},
		bad(invalidReq, ``),
		bad(invalidPar, `3`),
		bad(invalidReq, ``),
		bad(invalidReq, ``),
		wantMember{method: "e", params: `{}`, deps: []string{`1`, `2`}},
		bad(invalidReq, `6`),
	)
	check(t, body, jsonrpc.Limits{}, w)
}

func TestDecodeLimits(t *testing.T) {
	t.Parallel()
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	str := func(n int) string { return strings.Repeat("a", n) }
	const depth, strMax = jsonrpc.LimitMaxDepth, jsonrpc.LimitMaxStringBytes
	tests := []struct {
		name string
		lim  jsonrpc.Limits
		body string
		want want
	}{
		{"depth 1 single", jsonrpc.Limits{MaxDepth: 1}, env(``), single(req("m", ``, ``))},
		{"depth 1 batch", jsonrpc.Limits{MaxDepth: 1}, `[` + env(``) + `]`, limitErr(depth, 1)},
		{"depth 1 params", jsonrpc.Limits{MaxDepth: 1}, env(`,"params":[]`), limitErr(depth, 1)},
		{"depth 1 non-object batch", jsonrpc.Limits{MaxDepth: 1}, `[1]`, batchOf(bad(invalidReq, ``))},
		{"depth 1 nested batch", jsonrpc.Limits{MaxDepth: 1}, `[[]]`, limitErr(depth, 1)},
		{"depth 2 batch", jsonrpc.Limits{MaxDepth: 2}, `[` + env(``) + `]`, batchOf(req("m", ``, ``))},
		{"params at the limit", jsonrpc.Limits{MaxDepth: 4}, env(`,"params":{"a":[{}]}`), single(req("m", `{"a":[{}]}`, ``))},
		{"params past the limit", jsonrpc.Limits{MaxDepth: 4}, env(`,"params":{"a":[{"b":[]}]}`), limitErr(depth, 4)},
		{"params at the limit in a batch", jsonrpc.Limits{MaxDepth: 4}, `[` + env(`,"params":{"a":[]}`) + `]`, batchOf(req("m", `{"a":[]}`, ``))},
		{"params past the limit in a batch", jsonrpc.Limits{MaxDepth: 4}, `[` + env(`,"params":{"a":[{}]}`) + `]`, limitErr(depth, 4)},
		{"depends_on at the limit", jsonrpc.Limits{MaxDepth: 3}, env(`,"params":{"depends_on":[1]}`), single(wantMember{method: "m", params: `{}`, deps: []string{`1`}})},
		{"depends_on past the limit", jsonrpc.Limits{MaxDepth: 2}, env(`,"params":{"depends_on":[1]}`), limitErr(depth, 2)},
		{"params object past the limit", jsonrpc.Limits{MaxDepth: 1}, env(`,"params":{}`), limitErr(depth, 1)},
		{"unknown member past the limit", jsonrpc.Limits{MaxDepth: 2}, env(`,"x":[[]]`), limitErr(depth, 2)},
		{"id past the limit", jsonrpc.Limits{MaxDepth: 2}, env(`,"id":[[]]`), limitErr(depth, 2)},
		{"default depth at the limit", jsonrpc.Limits{}, env(`,"params":` + deep(jsonrpc.DefaultMaxDepth-1)), single(req("m", deep(jsonrpc.DefaultMaxDepth-1), ``))},
		{"default depth past the limit", jsonrpc.Limits{}, env(`,"params":` + deep(jsonrpc.DefaultMaxDepth)), limitErr(depth, jsonrpc.DefaultMaxDepth)},
		{"negative limits take defaults", jsonrpc.Limits{MaxDepth: -1, MaxStringBytes: -1}, env(`,"params":` + deep(jsonrpc.DefaultMaxDepth)), limitErr(depth, jsonrpc.DefaultMaxDepth)},
		{"very deep", jsonrpc.Limits{}, deep(1 << 20), limitErr(depth, jsonrpc.DefaultMaxDepth)},
		{"very deep objects", jsonrpc.Limits{}, strings.Repeat(`{"a":`, 1<<18) + `1` + strings.Repeat(`}`, 1<<18), limitErr(depth, jsonrpc.DefaultMaxDepth)},
		{"very deep unbalanced", jsonrpc.Limits{}, strings.Repeat("[", 1<<20) + strings.Repeat("]", 1<<20-1), topErr(parseErr)},
		{"syntax error past the depth limit", jsonrpc.Limits{MaxDepth: 2}, env(`,"params":[[1,}]]`), topErr(parseErr)},
		{"syntax error after the depth limit", jsonrpc.Limits{MaxDepth: 2}, `[` + env(`,"params":[]`) + `, {"a" 1}]`, topErr(parseErr)},
		{"mismatched brackets past the limit", jsonrpc.Limits{MaxDepth: 1}, env(`,"params":[{"a":[1}]}`), topErr(parseErr)},
		{"skipped value checked fully", jsonrpc.Limits{MaxDepth: 1}, env(`,"params":[{"a":"\x"}]`), topErr(parseErr)},
		{"skipped empty containers", jsonrpc.Limits{MaxDepth: 1}, env(`,"params":[ {} , [ ] , {"a" : [ ] } , "s" , 1 , true ]`), limitErr(depth, 1)},
		{"method at the string limit", jsonrpc.Limits{MaxStringBytes: 7}, `{"jsonrpc":"2.0","method":"abcdefg"}`, single(req("abcdefg", ``, ``))},
		{"method past the string limit", jsonrpc.Limits{MaxStringBytes: 7}, `{"jsonrpc":"2.0","method":"abcdefgh"}`, limitErr(strMax, 7)},
		{"limit counts raw bytes", jsonrpc.Limits{MaxStringBytes: 7}, `{"jsonrpc":"2.0","method":"\u0061bc"}`, limitErr(strMax, 7)},
		{"UTF-8 at the limit", jsonrpc.Limits{MaxStringBytes: 7}, `{"jsonrpc":"2.0","method":"aééé"}`, single(req("aééé", ``, ``))},
		{"limit counts UTF-8 bytes", jsonrpc.Limits{MaxStringBytes: 7}, `{"jsonrpc":"2.0","method":"éééé"}`, limitErr(strMax, 7)},
		{"name at the string limit", jsonrpc.Limits{MaxStringBytes: 7}, `{"jsonrpc":"2.0","method":"m"}`, single(req("m", ``, ``))},
		{"name past the string limit", jsonrpc.Limits{MaxStringBytes: 6}, `{"jsonrpc":"2.0","method":"m"}`, limitErr(strMax, 6)},
		{"params string past the limit", jsonrpc.Limits{MaxStringBytes: 7}, env(`,"params":[{"a":"12345678"}]`), limitErr(strMax, 7)},
		{"depends_on past the limit", jsonrpc.Limits{MaxStringBytes: 7}, env(`,"params":{"depends_on":["12345678"]}`), limitErr(strMax, 7)},
		{"string past the limit in a non-object", jsonrpc.Limits{MaxStringBytes: 7}, `[` + env(``) + `,"12345678"]`, limitErr(strMax, 7)},
		{"top-level string past the limit", jsonrpc.Limits{MaxStringBytes: 7}, `"12345678"`, limitErr(strMax, 7)},
		{"syntax error after the string limit", jsonrpc.Limits{MaxStringBytes: 7}, `[` + env(`,"params":["12345678"]`) + `,]`, topErr(parseErr)},
		{"first limit reported", jsonrpc.Limits{MaxStringBytes: 7, MaxDepth: 2}, env(`,"params":["12345678",[]]`), limitErr(strMax, 7)},
		{"default string limit", jsonrpc.Limits{}, env(`,"params":["` + str(jsonrpc.DefaultMaxStringBytes) + `"]`), single(req("m", `["`+str(jsonrpc.DefaultMaxStringBytes)+`"]`, ``))},
		{"default string limit exceeded", jsonrpc.Limits{}, env(`,"params":["` + str(jsonrpc.DefaultMaxStringBytes+1) + `"]`), limitErr(strMax, jsonrpc.DefaultMaxStringBytes)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			check(t, tc.body, tc.lim, tc.want)
		})
	}
}

func TestDecodeParamsAliasing(t *testing.T) {
	t.Parallel()
	body := []byte(`[{"jsonrpc":"2.0","method":"m","params":{"a":1},"id":1},` +
		`{"jsonrpc":"2.0","method":"m","params":{"a":1,"deadline_ms":5},"id":2}]`)
	p, err := jsonrpc.Decode(body, jsonrpc.Limits{})
	if err != nil {
		t.Fatalf("Decode error = %+v", err)
	}
	plain, rewritten := p.Members[0].Request.Params, p.Members[1].Request.Params
	if !aliases(plain, body) {
		t.Errorf("params without reserved members do not alias the body")
	}
	if cap(plain) != len(plain) {
		t.Errorf("cap(Params) = %d; want %d so that appending cannot overwrite the body", cap(plain), len(plain))
	}
	if aliases(rewritten, body) {
		t.Errorf("rewritten params alias the body")
	}
	if cap(rewritten) != len(rewritten) {
		t.Errorf("cap(rewritten Params) = %d; want %d", cap(rewritten), len(rewritten))
	}
	snapshot := p.Members[0].Request.Method + p.Members[0].Request.ID.Raw()
	for i := range body {
		body[i] = 'x'
	}
	if got := p.Members[0].Request.Method + p.Members[0].Request.ID.Raw(); got != snapshot || string(rewritten) != `{"a":1}` {
		t.Errorf("after overwriting the body: method+id %q, rewritten params %q; want %q and {\"a\":1}", got, rewritten, snapshot)
	}
}

func TestDecodeErrorReasonsDoNotEchoInput(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t-n4me"
	bodies := []string{
		`{"jsonrpc":"2.0","method":"m","` + secret + `":1,"id":1}`,
		`{"jsonrpc":"` + secret + `","method":"m","id":1}`,
		`{"jsonrpc":"2.0","method":"m","params":{"` + secret + `":1,"` + secret + `":2},"id":1}`,
		`{"jsonrpc":"2.0","method":"m","params":{"deadline_ms":"` + secret + `"},"id":1}`,
		`{"jsonrpc":"2.0","method":"m","params":"` + secret + `","id":1}`,
		`{"jsonrpc":"2.0","method":"` + secret + `,"id":1}`,
		`"` + secret + `"`,
	}
	for _, body := range bodies {
		p, err := jsonrpc.Decode([]byte(body), jsonrpc.Limits{})
		if err == nil {
			err = p.Members[0].Err
		}
		if err == nil {
			t.Fatalf("Decode(%s) = no error; want one", body)
		}
		data := string(err.AppendData(nil, ""))
		if strings.Contains(err.Error()+data, secret) {
			t.Errorf("Decode(%s) error %q, data %s echo the input", body, err.Error(), data)
		}
	}
}

func TestDecodeAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool is randomised under the race detector")
	}
	tests := []struct {
		name string
		body []byte
		max  float64
	}{
		{"single", benchSingle, 2},                                           // members, strings
		{"batch of 10", benchBatch, 2},                                       // members, strings
		{"reserved members", benchReserved, 4},                               // members, strings, depends_on ids, params
		{"invalid member", []byte(`{"jsonrpc":"2.0","method":1,"id":1}`), 3}, // members, strings, error
		{"parse error", []byte(`{`), 1},                                      // error
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			jsonrpc.Decode(tc.body, jsonrpc.Limits{}) // warm the pool
			got := testing.AllocsPerRun(100, func() { _, _ = jsonrpc.Decode(tc.body, jsonrpc.Limits{}) })
			if got > tc.max {
				t.Errorf("Decode allocates %v times; want at most %v", got, tc.max)
			}
		})
	}
}

func TestDecodeConcurrent(t *testing.T) {
	t.Parallel()
	bodies := [][]byte{benchSingle, benchBatch, benchReserved, []byte(`{`), []byte(`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`)}
	want := make([]string, len(bodies))
	for i, b := range bodies {
		want[i] = summary(jsonrpc.Decode(b, jsonrpc.Limits{}))
	}
	done := make(chan struct{})
	for g := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for n := range 200 {
				i := (g + n) % len(bodies)
				if got := summary(jsonrpc.Decode(bodies[i], jsonrpc.Limits{})); got != want[i] {
					t.Errorf("concurrent Decode(%q) = %s; want %s", bodies[i], got, want[i])
					return
				}
			}
		}()
	}
	for range 4 {
		<-done
	}
}

// summary renders a Decode result for comparison.
func summary(p jsonrpc.Payload, err *jsonrpc.DecodeError) string {
	if err != nil {
		return fmt.Sprintf("error %+v", *err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "batch %v:", p.Batch)
	for _, m := range p.Members {
		if m.Err != nil {
			fmt.Fprintf(&b, " [error %+v]", *m.Err)
			continue
		}
		r := m.Request
		fmt.Fprintf(&b, " [%q %s %s %v %d]", r.Method, r.Params, r.ID, r.DependsOn, r.DeadlineMs)
	}
	return b.String()
}
