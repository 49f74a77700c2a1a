package nekte_test

import (
	"encoding/json"
	"testing"

	"github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

func schemaEntry() nekte.CapSchema {
	return nekte.CapSchema{
		ID: "sentiment", Cat: "nlp", H: "a1b2c3d4", Desc: "Analyzes sentiment.",
		Cost:     &nekte.Cost{AvgMs: 200, AvgTokens: 50},
		Input:    json.RawMessage(`{"type":"object"}`),
		Output:   json.RawMessage(`{"type":"object"}`),
		Examples: []nekte.Example{{In: json.RawMessage(`{"text":"I love it"}`), Out: json.RawMessage(`{"score":0.95}`)}},
	}
}

// TestWireShapes pins the JSON of every result type: member names, optional members left
// out when empty, and timestamps as numbers.
func TestWireShapes(t *testing.T) {
	c := schemaEntry()
	valid := true
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"discover L0", nekte.DiscoverResult[nekte.CapRef]{Agent: "nlp-worker", V: "1.2.0", Caps: []nekte.CapRef{c.Ref()}},
			`{"agent":"nlp-worker","v":"1.2.0","caps":[{"id":"sentiment","cat":"nlp","h":"a1b2c3d4"}]}`},
		{"discover L1", nekte.DiscoverResult[nekte.CapSummary]{Agent: "a", Caps: []nekte.CapSummary{c.Summary()}},
			`{"agent":"a","caps":[{"id":"sentiment","cat":"nlp","h":"a1b2c3d4","desc":"Analyzes sentiment.","cost":{"avg_ms":200,"avg_tokens":50}}]}`},
		{"discover L1 without cost", nekte.CapSummary{ID: "x", Cat: "c", H: "h", Desc: "d"}, `{"id":"x","cat":"c","h":"h","desc":"d"}`},
		{"discover L2", nekte.DiscoverResult[nekte.CapSchema]{Agent: "a", Caps: []nekte.CapSchema{c}},
			`{"agent":"a","caps":[{"id":"sentiment","cat":"nlp","h":"a1b2c3d4","desc":"Analyzes sentiment.","cost":{"avg_ms":200,"avg_tokens":50},"input":{"type":"object"},"output":{"type":"object"},"examples":[{"in":{"text":"I love it"},"out":{"score":0.95}}]}]}`},
		{"discover empty", nekte.DiscoverResult[nekte.CapRef]{Agent: "a", Caps: []nekte.CapRef{}}, `{"agent":"a","caps":[]}`},
		{"invoke result", nekte.InvokeResult{Out: json.RawMessage(`{"label":"mixed"}`), ResolvedLevel: nekte.Compact, Meta: nekte.Meta{Ms: 180, TokensUsed: 45}},
			`{"out":{"label":"mixed"},"resolved_level":"compact","meta":{"ms":180,"tokens_used":45}}`},
		{"invoke minimal", nekte.InvokeResult{Out: json.RawMessage(`"65% positive"`), ResolvedLevel: nekte.Minimal},
			`{"out":"65% positive","resolved_level":"minimal","meta":{}}`},
		{"version mismatch data", nekte.VersionMismatchData{CurrentHash: "m3n4o5p6", Schema: nekte.CapSchema{ID: "s", Cat: "c", H: "m3n4o5p6", Input: json.RawMessage(`{}`), Output: json.RawMessage(`{}`)}},
			`{"current_hash":"m3n4o5p6","schema":{"id":"s","cat":"c","h":"m3n4o5p6","desc":"","input":{},"output":{}}}`},
		{"invoke params", nekte.InvokeParams{Cap: "s", In: json.RawMessage(`{}`), Budget: &nekte.DefaultBudget},
			`{"cap":"s","in":{},"budget":{"max_tokens":500,"detail_level":"compact"}}`},
		{"context stored", nekte.ContextResult{ID: "c", Status: nekte.ContextStored, TTLSeconds: 3600}, `{"id":"c","status":"stored","ttl_s":3600}`},
		{"context revoked", nekte.ContextResult{ID: "c", Status: nekte.ContextRevoked}, `{"id":"c","status":"revoked"}`},
		{"envelope", nekte.Envelope{ID: "c", Data: json.RawMessage(`{"a":1}`), Compression: nekte.CompressionNone, Permissions: nekte.Permissions{Derive: true}, TTLSeconds: 60},
			`{"id":"c","data":{"a":1},"compression":"none","permissions":{"forward":false,"persist":false,"derive":true},"ttl_s":60}`},
		{"verify", nekte.VerifyResult{TaskID: "t", Checks: []nekte.Check{nekte.CheckHash}, Status: nekte.VerifyStatusVerified, Hash: "abc", HashValid: &valid},
			`{"task_id":"t","checks":["hash"],"status":"verified","hash":"abc","hash_valid":true}`},
		{"task lifecycle", nekte.TaskLifecycleResult{TaskID: "t", Status: nekte.TaskCancelled, PreviousStatus: nekte.TaskRunning},
			`{"task_id":"t","status":"cancelled","previous_status":"running"}`},
		{"task status", nekte.TaskStatusResult{TaskID: "t", Status: nekte.TaskCompleted, CreatedAt: 1768473000000, UpdatedAt: 1768473085000},
			`{"task_id":"t","status":"completed","checkpoint_available":false,"created_at":1768473000000,"updated_at":1768473085000}`},
		{"introspect", nekte.IntrospectResult{Guide: "g"}, `{"guide":"g"}`},
		{"agent card", nekte.AgentCard{Nekte: nekte.ProtocolVersion, Agent: "gatehouse", Endpoint: "https://gw/rpc", Caps: []string{"sentiment"}, Auth: nekte.AuthBearer, BudgetSupport: true},
			`{"nekte":"0.2.0","agent":"gatehouse","endpoint":"https://gw/rpc","caps":["sentiment"],"auth":"bearer","budget_support":true}`},
		{"levels", nekte.Levels{Minimal: "65% positive", Compact: json.RawMessage(`{"s":1}`)}, `{"minimal":"65% positive","compact":{"s":1}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(tt.v)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("\n got  %s\n want %s", got, tt.want)
			}
		})
	}
}

func TestTaskStates(t *testing.T) {
	tests := []struct {
		from, to nekte.TaskStatus
		want     bool
	}{
		{nekte.TaskPending, nekte.TaskAccepted, true},
		{nekte.TaskPending, nekte.TaskRunning, false},
		{nekte.TaskAccepted, nekte.TaskRunning, true},
		{nekte.TaskRunning, nekte.TaskSuspended, true},
		{nekte.TaskRunning, nekte.TaskCompleted, true},
		{nekte.TaskSuspended, nekte.TaskRunning, true},
		{nekte.TaskSuspended, nekte.TaskCompleted, false},
		{nekte.TaskCompleted, nekte.TaskRunning, false},
		{nekte.TaskCancelled, nekte.TaskCancelled, false},
		{nekte.TaskFailed, nekte.TaskRunning, false},
	}
	for _, tt := range tests {
		if got := tt.from.CanTransition(tt.to); got != tt.want {
			t.Errorf("%s → %s = %v, want %v", tt.from, tt.to, got, tt.want)
		}
	}
	for s, want := range map[nekte.TaskStatus][3]bool{ // terminal, cancellable, resumable
		nekte.TaskPending:   {false, true, false},
		nekte.TaskAccepted:  {false, true, false},
		nekte.TaskRunning:   {false, true, false},
		nekte.TaskSuspended: {false, true, true},
		nekte.TaskCompleted: {true, false, false},
		nekte.TaskFailed:    {true, false, false},
		nekte.TaskCancelled: {true, false, false},
	} {
		if got := [3]bool{s.Terminal(), s.Cancellable(), s.Resumable()}; got != want {
			t.Errorf("%s: terminal, cancellable, resumable = %v, want %v", s, got, want)
		}
	}
}

func TestHashMismatch(t *testing.T) {
	for _, tt := range []struct {
		h, current string
		want       bool
	}{{"", "abc", false}, {"abc", "abc", false}, {"abd", "abc", true}} {
		if got := nekte.HashMismatch(tt.h, tt.current); got != tt.want {
			t.Errorf("HashMismatch(%q, %q) = %v", tt.h, tt.current, got)
		}
	}
	if schemas.KindOf(schemas.CodeVersionMismatch).Message != "VERSION_MISMATCH" {
		t.Error("the error table's VERSION_MISMATCH message changed")
	}
}
