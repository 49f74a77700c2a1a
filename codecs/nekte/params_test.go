package nekte_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/fuzzseed"

	"github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// paramTypes makes an empty params value per method.
var paramTypes = map[string]func() nekte.Params{
	nekte.MethodDiscover:   func() nekte.Params { return new(nekte.DiscoverParams) },
	nekte.MethodInvoke:     func() nekte.Params { return new(nekte.InvokeParams) },
	nekte.MethodDelegate:   func() nekte.Params { return new(nekte.DelegateParams) },
	nekte.MethodContext:    func() nekte.Params { return new(nekte.ContextParams) },
	nekte.MethodVerify:     func() nekte.Params { return new(nekte.VerifyParams) },
	nekte.MethodTaskCancel: func() nekte.Params { return new(nekte.TaskCancelParams) },
	nekte.MethodTaskResume: func() nekte.Params { return new(nekte.TaskResumeParams) },
	nekte.MethodTaskStatus: func() nekte.Params { return new(nekte.TaskStatusParams) },
	nekte.MethodIntrospect: func() nekte.Params { return new(nekte.IntrospectParams) },
}

var (
	id64  = strings.Repeat("i", 64)
	id65  = strings.Repeat("i", 65)
	emoji = strings.Repeat("😀", 33) // 33 characters, 66 UTF-16 code units
)

var paramCases = []struct {
	name, method, params string
	field, reason        string // the expected *ParamError; empty field and reason: valid
}{
	// discover
	{"discover L0", nekte.MethodDiscover, `{"level":0}`, "", ""},
	{"discover absent params", nekte.MethodDiscover, ``, "", ""},
	{"discover null params", nekte.MethodDiscover, `null`, "", ""},
	{"discover L2 filtered", nekte.MethodDiscover, `{"level":2,"filter":{"category":"nlp","query":"sentiment","id":"sentiment","top_k":3,"threshold":0.5}}`, "", ""},
	{"discover level 3", nekte.MethodDiscover, `{"level":3}`, "level", "must be 0, 1 or 2"},
	{"discover level -1", nekte.MethodDiscover, `{"level":-1}`, "level", "must be 0, 1 or 2"},
	{"discover level string", nekte.MethodDiscover, `{"level":"1"}`, "level", "must be an integer within range"},
	{"discover level fraction", nekte.MethodDiscover, `{"level":1.5}`, "level", "must be an integer within range"},
	{"discover filter id 64", nekte.MethodDiscover, `{"level":0,"filter":{"id":"` + id64 + `"}}`, "", ""},
	{"discover filter id 65", nekte.MethodDiscover, `{"level":0,"filter":{"id":"` + id65 + `"}}`, "filter.id", "must be at most 64 characters"},
	{"discover filter id in UTF-16 units", nekte.MethodDiscover, `{"level":0,"filter":{"id":"` + emoji + `"}}`, "filter.id", "must be at most 64 characters"},
	{"discover category 33", nekte.MethodDiscover, `{"level":0,"filter":{"category":"` + strings.Repeat("c", 33) + `"}}`, "filter.category", "must be at most 32 characters"},
	{"discover top_k negative", nekte.MethodDiscover, `{"level":0,"filter":{"top_k":-1}}`, "filter.top_k", "must not be negative"},
	{"discover threshold", nekte.MethodDiscover, `{"level":0,"filter":{"threshold":1.5}}`, "filter.threshold", "must be between 0 and 1"},
	{"discover filter not object", nekte.MethodDiscover, `{"level":0,"filter":[]}`, "filter", "must be an object"},
	{"discover unknown member ignored", nekte.MethodDiscover, `{"level":1,"extra":{"Level":5}}`, "", ""},
	{"discover case-folded name", nekte.MethodDiscover, `{"Level":2}`, "level", "member name must be spelled with this exact case"},
	{"discover nested case-folded name", nekte.MethodDiscover, `{"level":0,"filter":{"ID":"x"}}`, "filter.id", "member name must be spelled with this exact case"},
	{"discover duplicate", nekte.MethodDiscover, `{"level":0,"level":2}`, "level", "given twice"},
	{"discover duplicate unknown", nekte.MethodDiscover, `{"x":0,"x":2}`, "", "has a member name given twice"},
	{"discover array params", nekte.MethodDiscover, `[0]`, "", "must be an object"},
	{"discover broken JSON", nekte.MethodDiscover, `{"level":`, "", "must be valid JSON"},
	// invoke
	{"invoke", nekte.MethodInvoke, `{"cap":"sentiment","h":"a1b2c3d4","in":{"text":"x"},"budget":{"max_tokens":100,"detail_level":"compact"}}`, "", ""},
	{"invoke without h or budget", nekte.MethodInvoke, `{"cap":"sentiment","in":{}}`, "", ""},
	{"invoke without cap", nekte.MethodInvoke, `{"in":{}}`, "cap", "is required"},
	{"invoke cap too long", nekte.MethodInvoke, `{"cap":"` + id65 + `"}`, "cap", "must be at most 64 characters"},
	{"invoke h too long", nekte.MethodInvoke, `{"cap":"c","h":"` + id65 + `"}`, "h", "must be at most 64 characters"},
	{"invoke bad detail level", nekte.MethodInvoke, `{"cap":"c","budget":{"max_tokens":1,"detail_level":"verbose"}}`, "budget.detail_level", `must be "full", "compact" or "minimal"`},
	{"invoke negative budget", nekte.MethodInvoke, `{"cap":"c","budget":{"max_tokens":-5,"detail_level":"full"}}`, "budget.max_tokens", "must not be negative"},
	{"invoke budget tokens string", nekte.MethodInvoke, `{"cap":"c","budget":{"max_tokens":"5"}}`, "budget.max_tokens", "must be an integer within range"},
	{"invoke budget case-folded", nekte.MethodInvoke, `{"cap":"c","budget":{"Max_Tokens":5}}`, "budget.max_tokens", "member name must be spelled with this exact case"},
	// delegate
	{"delegate", nekte.MethodDelegate, `{"task":{"id":"task-001","desc":"Analyze sentiment of 500 reviews","timeout_ms":30000,"budget":{"max_tokens":500,"detail_level":"compact"}},"context":{"data":{"u":"s3://b/r.jsonl"},"permissions":{"forward":false,"persist":false,"derive":true},"ttl_s":3600}}`, "", ""},
	{"delegate without task id", nekte.MethodDelegate, `{"task":{"desc":"x"}}`, "task.id", "is required"},
	{"delegate desc too long", nekte.MethodDelegate, `{"task":{"id":"t","desc":"` + strings.Repeat("d", 4097) + `"}}`, "task.desc", "must be at most 4096 characters"},
	{"delegate negative timeout", nekte.MethodDelegate, `{"task":{"id":"t","timeout_ms":-1}}`, "task.timeout_ms", "must not be negative"},
	{"delegate bad budget", nekte.MethodDelegate, `{"task":{"id":"t","budget":{"max_tokens":1,"detail_level":"x"}}}`, "task.budget.detail_level", `must be "full", "compact" or "minimal"`},
	{"delegate bad context", nekte.MethodDelegate, `{"task":{"id":"t"},"context":{"compression":"zip"}}`, "context.compression", `must be "none", "semantic" or "reference"`},
	{"delegate permission case-folded", nekte.MethodDelegate, `{"task":{"id":"t"},"context":{"permissions":{"Forward":true}}}`, "context.permissions.forward", "member name must be spelled with this exact case"},
	{"delegate permission not boolean", nekte.MethodDelegate, `{"task":{"id":"t"},"context":{"permissions":{"forward":"yes"}}}`, "context.permissions.forward", "must be a boolean"},
	// context
	{"context share", nekte.MethodContext, `{"action":"share","envelope":{"id":"ctx-1","data":{"lang":"en"},"compression":"none","permissions":{"forward":false,"persist":true,"derive":true},"ttl_s":3600,"budget_hint":200}}`, "", ""},
	{"context request", nekte.MethodContext, `{"action":"request","envelope":{"id":"ctx-1"}}`, "", ""},
	{"context revoke", nekte.MethodContext, `{"action":"revoke","envelope":{"id":"ctx-1"}}`, "", ""},
	{"context bad action", nekte.MethodContext, `{"action":"delete","envelope":{"id":"ctx-1"}}`, "action", `must be "share", "request" or "revoke"`},
	{"context share without id", nekte.MethodContext, `{"action":"share","envelope":{"data":1}}`, "envelope.id", "is required"},
	{"context request without id", nekte.MethodContext, `{"action":"request","envelope":{}}`, "envelope.id", "is required"},
	{"context negative ttl", nekte.MethodContext, `{"action":"share","envelope":{"id":"c","ttl_s":-1}}`, "envelope.ttl_s", "must not be negative"},
	{"context negative budget hint", nekte.MethodContext, `{"action":"share","envelope":{"id":"c","budget_hint":-1}}`, "envelope.budget_hint", "must not be negative"},
	// verify
	{"verify", nekte.MethodVerify, `{"task_id":"t","checks":["hash","sample","source"],"budget":{"max_tokens":50,"detail_level":"minimal"}}`, "", ""},
	{"verify no checks", nekte.MethodVerify, `{"task_id":"t","checks":[]}`, "checks", "must name at least one check"},
	{"verify bad check", nekte.MethodVerify, `{"task_id":"t","checks":["hash","proof"]}`, "checks[1]", `must be "hash", "sample" or "source"`},
	{"verify no task", nekte.MethodVerify, `{"checks":["hash"]}`, "task_id", "is required"},
	// tasks
	{"cancel", nekte.MethodTaskCancel, `{"task_id":"t","reason":"user requested"}`, "", ""},
	{"cancel without task", nekte.MethodTaskCancel, `{}`, "task_id", "is required"},
	{"resume", nekte.MethodTaskResume, `{"task_id":"t","budget":{"max_tokens":500,"detail_level":"compact"}}`, "", ""},
	{"resume bad budget", nekte.MethodTaskResume, `{"task_id":"t","budget":{"max_tokens":-1}}`, "budget.max_tokens", "must not be negative"},
	{"status", nekte.MethodTaskStatus, `{"task_id":"t"}`, "", ""},
	{"status id too long", nekte.MethodTaskStatus, `{"task_id":"` + id65 + `"}`, "task_id", "must be at most 64 characters"},
	// introspect
	{"introspect", nekte.MethodIntrospect, `{"topic":"budget"}`, "", ""},
	{"introspect all topics", nekte.MethodIntrospect, `{}`, "", ""},
	{"introspect bad topic", nekte.MethodIntrospect, `{"topic":"secrets"}`, "topic", `must be "budget", "discovery", "errors", "tasks" or "all"`},
}

func TestDecode(t *testing.T) {
	for _, tt := range paramCases {
		t.Run(tt.name, func(t *testing.T) {
			err := nekte.Decode([]byte(tt.params), paramTypes[tt.method]())
			if tt.field == "" && tt.reason == "" {
				if err != nil {
					t.Fatalf("Decode: %v", err)
				}
				return
			}
			pe, ok := errors.AsType[*nekte.ParamError](err)
			if !ok {
				t.Fatalf("Decode error %v, want a *ParamError", err)
			}
			if pe.Field != tt.field || pe.Reason != tt.reason {
				t.Errorf("got %q: %q, want %q: %q", pe.Field, pe.Reason, tt.field, tt.reason)
			}
			if pe.Code() != schemas.CodeInvalidParams {
				t.Errorf("code %d", pe.Code())
			}
		})
	}
}

func TestDecodeValues(t *testing.T) {
	var p nekte.DelegateParams
	err := nekte.Decode([]byte(`{"task":{"id":"t-1","desc":"d","timeout_ms":30000,"budget":{"max_tokens":500,"detail_level":"compact"}},"context":{"id":"c","data":{"a":1},"permissions":{"derive":true},"ttl_s":60}}`), &p)
	if err != nil {
		t.Fatal(err)
	}
	want := nekte.DelegateParams{
		Task: nekte.Task{ID: "t-1", Desc: "d", TimeoutMs: 30000, Budget: &nekte.Budget{MaxTokens: 500, DetailLevel: nekte.Compact}},
		Context: &nekte.Envelope{
			ID: "c", Data: json.RawMessage(`{"a":1}`), Permissions: nekte.Permissions{Derive: true}, TTLSeconds: 60,
		},
	}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("got %+v, want %+v", p, want)
	}
}

func TestParamErrorMessage(t *testing.T) {
	tests := []struct {
		err  nekte.ParamError
		want string
	}{
		{nekte.ParamError{Field: "task.id", Reason: "is required"}, "task.id: is required"},
		{nekte.ParamError{Reason: "must be an object"}, "params: must be an object"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
}

func TestCapSchemaValidate(t *testing.T) {
	valid := func() nekte.CapSchema {
		return nekte.CapSchema{
			ID: "sentiment", Cat: "nlp", H: "a1b2c3d4", Desc: "Analyzes sentiment.",
			Input: json.RawMessage(`{"type":"object"}`), Output: json.RawMessage(`{"type":"object"}`),
			Examples: []nekte.Example{{In: json.RawMessage(`{}`), Out: json.RawMessage(`{}`)}},
		}
	}
	tests := []struct {
		name          string
		edit          func(*nekte.CapSchema)
		field, reason string
	}{
		{"valid", func(*nekte.CapSchema) {}, "", ""},
		{"no id", func(c *nekte.CapSchema) { c.ID = "" }, "id", "is required"},
		{"long id", func(c *nekte.CapSchema) { c.ID = id65 }, "id", "must be at most 64 characters"},
		{"long cat", func(c *nekte.CapSchema) { c.Cat = strings.Repeat("c", 33) }, "cat", "must be at most 32 characters"},
		{"no hash", func(c *nekte.CapSchema) { c.H = "" }, "h", "is required"},
		{"long desc", func(c *nekte.CapSchema) { c.Desc = strings.Repeat("d", 257) }, "desc", "must be at most 256 characters"},
		{"negative cost", func(c *nekte.CapSchema) { c.Cost = &nekte.Cost{AvgMs: -1} }, "cost", "must not be negative"},
		{"no input", func(c *nekte.CapSchema) { c.Input = nil }, "input", "is required"},
		{"bad output", func(c *nekte.CapSchema) { c.Output = json.RawMessage(`{`) }, "output", "must be valid JSON"},
		{"bad example", func(c *nekte.CapSchema) { c.Examples[0].Out = json.RawMessage(`x`) }, "examples[0].out", "must be valid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := valid()
			tt.edit(&c)
			err := c.Validate()
			if tt.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			pe, ok := errors.AsType[*nekte.ParamError](err)
			if !ok || pe.Field != tt.field || pe.Reason != tt.reason {
				t.Errorf("got %v, want %s: %s", err, tt.field, tt.reason)
			}
		})
	}
}

func FuzzDecode(f *testing.F) {
	methods := make([]string, 0, len(paramTypes))
	for m := range paramTypes {
		methods = append(methods, m)
	}
	slices.Sort(methods)
	// Seeds from real traffic: the golden files' and the recorded peers' frames (internal/fuzzseed).
	for _, c := range fuzzseed.Calls(f, fuzzseed.NEKTERequest) {
		if i, ok := slices.BinarySearch(methods, c.Method); ok && c.Params != nil {
			f.Add(uint8(i), c.Params)
		}
	}
	for _, tt := range paramCases {
		for i, m := range methods {
			if m == tt.method {
				f.Add(uint8(i), []byte(tt.params))
			}
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, raw []byte) {
		m := methods[int(which)%len(methods)]
		p := paramTypes[m]()
		err := nekte.Decode(raw, p)
		if err != nil {
			if _, ok := errors.AsType[*nekte.ParamError](err); !ok {
				t.Fatalf("Decode(%s, %q) error %T %v is not a *ParamError", m, raw, err, err)
			}
			return
		}
		// What was accepted encodes to params that decode to the same value.
		again, err := json.Marshal(p)
		if err != nil {
			t.Fatalf("Marshal(%+v): %v", p, err)
		}
		q := paramTypes[m]()
		if err := nekte.Decode(again, q); err != nil {
			t.Fatalf("re-decoding %s: %v", again, err)
		}
		if !reflect.DeepEqual(normalize(t, p), normalize(t, q)) {
			t.Fatalf("round trip of %q: %+v became %+v", raw, p, q)
		}
	})
}

// normalize marshals p, so that raw JSON members compare by their compacted text.
func normalize(t *testing.T, p nekte.Params) string {
	t.Helper()
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func BenchmarkDecode(b *testing.B) {
	raw := []byte(`{"cap":"sentiment","h":"a1b2c3d4","in":{"text":"The product is excellent but shipping was slow"},"budget":{"max_tokens":100,"detail_level":"compact"}}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		var p nekte.InvokeParams
		if err := nekte.Decode(raw, &p); err != nil {
			b.Fatal(err)
		}
	}
}
