package grpcface

import (
	"encoding/json"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/prototest"

	nektev1 "github.com/gatehouse-dev/gatehouse/schemas/gen/nekte/v1"
)

// TestDelegateEventMapping maps every event of a delegate stream to its DelegateEvent
// member.
func TestDelegateEventMapping(t *testing.T) {
	tests := []struct {
		msg, want string
	}{
		{`{"event":"progress","data":{"processed":2,"total":5,"message":"two"}}`, `{"progress":{"processed":2,"total":5,"message":"two"}}`},
		{`{"event":"partial","data":{"out":{"rows":[1]},"resolved_level":"compact"}}`, `{"partial":{"output":{"rows":[1]},"resolved_level":"compact"}}`},
		{`{"event":"partial","data":{"out":null}}`, `{"partial":{"output":null}}`},
		{`{"event":"complete","data":{"task_id":"t","status":"completed","out":{"minimal":"ok","compact":{"a":1},"full":{"a":1,"b":2}},"meta":{"ms":4,"tokens_used":9}}}`,
			`{"complete":{"task_id":"t","output":{"minimal":"ok","compact":{"a":1},"full":{"a":1,"b":2}},"meta":{"tokens_used":"X"}}}`},
		{`{"event":"complete","data":{"task_id":"t","status":"completed","out":{}}}`, `{"complete":{"task_id":"t","output":{}}}`},
		{`{"event":"error","data":{"task_id":"t","code":-32006,"message":"Task timed out"}}`, `{"error":{"task_id":"t","code":-32006,"message":"Task timed out"}}`},
		{`{"event":"cancelled","data":{"task_id":"t","reason":"r","previous_status":"suspended"}}`, `{"cancelled":{"task_id":"t","reason":"r","previous_status":"suspended"}}`},
		{`{"event":"suspended","data":{"task_id":"t","checkpoint_available":true}}`, `{"suspended":{"task_id":"t","checkpoint_available":true}}`},
		{`{"event":"resumed","data":{"task_id":"t","from_checkpoint":false}}`, `{"resumed":{"task_id":"t"}}`},
		{`{"event":"status_change","data":{"task_id":"t","from":"accepted","to":"running","reason":"go"}}`,
			`{"status_change":{"task_id":"t","from_status":"accepted","to_status":"running","reason":"go"}}`},
		{`{"event":"progress","data":{"processed":3000000000,"total":1}}`, `{"progress":{"processed":2147483647,"total":1}}`},
	}
	for _, tt := range tests {
		t.Run(tt.msg, func(t *testing.T) {
			ev, err := delegateEvent([]byte(tt.msg))
			if err != nil {
				t.Fatal(err)
			}
			prototest.Check(t, ev, tt.want)
			if m := ev.GetComplete().GetMeta(); m != nil && (m.GetMs() != 4 || m.GetTokensUsed() != 9) {
				t.Errorf("meta %v, want ms 4 and tokens_used 9", m)
			}
		})
	}
	if ev, err := delegateEvent([]byte(`{"event":"heartbeat","data":{}}`)); ev != nil || err != nil {
		t.Errorf("an event with no member: %v %v, want it skipped", ev, err)
	}
	for _, bad := range []string{`{"event":"progress","data":{"processed":"x"}}`, `{"data":{}}`, `not json`} {
		if _, err := delegateEvent([]byte(bad)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// TestDiscoverFilterParams: zero fields are left out, an empty filter is no filter, and a
// float32 threshold keeps the digits it was written with.
func TestDiscoverFilterParams(t *testing.T) {
	tests := []struct {
		filter *nektev1.DiscoverFilter
		want   string
	}{
		{nil, `{"level":1}`},
		{&nektev1.DiscoverFilter{}, `{"level":1}`},
		{&nektev1.DiscoverFilter{Category: "demo"}, `{"level":1,"filter":{"category":"demo"}}`},
		{&nektev1.DiscoverFilter{Query: "sum", TopK: 3, Threshold: 0.3}, `{"level":1,"filter":{"query":"sum","top_k":3,"threshold":0.3}}`},
		{&nektev1.DiscoverFilter{Id: "sum", Threshold: 0.05}, `{"level":1,"filter":{"id":"sum","threshold":0.05}}`},
	}
	for _, tt := range tests {
		got, err := json.Marshal(discoverParams{Level: 1, Filter: discoverFilter(tt.filter)})
		if err != nil || string(got) != tt.want {
			t.Errorf("%v: %s %v, want %s", tt.filter, got, err, tt.want)
		}
	}
}
