package otelstack

import (
	"encoding/json"
	"math"
	"testing"
	"time"
)

func TestTraceResponseSpans(t *testing.T) {
	const body = `{"data":[{"traceID":"t1","spans":[
	  {"traceID":"t1","spanID":"a","operationName":"root","references":[],"startTime":1000000,"duration":1500,
	   "tags":[{"key":"span.kind","type":"string","value":"server"},{"key":"n","type":"int64","value":7}],"processID":"p1"},
	  {"traceID":"t1","spanID":"b","operationName":"child","references":[
	     {"refType":"FOLLOWS_FROM","traceID":"t1","spanID":"x"},{"refType":"CHILD_OF","traceID":"t1","spanID":"a"}],
	   "startTime":1000100,"duration":10,"tags":[],"processID":"p2"}],
	 "processes":{"p1":{"serviceName":"gateway"},"p2":{"serviceName":"backend"}}}]}`
	var r traceResponse
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatal(err)
	}
	spans, err := r.spans("t1")
	if err != nil {
		t.Fatal(err)
	}
	if len(spans) != 2 {
		t.Fatalf("got %d spans, want 2", len(spans))
	}
	root, child := spans[0], spans[1]
	if root.Name != "root" || root.Service != "gateway" || root.ParentSpanID != "" || root.Tags["span.kind"] != "server" ||
		root.Tags["n"] != float64(7) || root.Duration != 1500*time.Microsecond || !root.Start.Equal(time.Unix(1, 0)) {
		t.Errorf("root = %+v", root)
	}
	if child.Name != "child" || child.Service != "backend" || child.ParentSpanID != "a" {
		t.Errorf("child = %+v, want service backend under a (FOLLOWS_FROM ignored)", child)
	}

	empty := traceResponse{}
	if _, err := empty.spans("t1"); err == nil {
		t.Error("an answer without a trace returned no error")
	}
}

func TestQueryResultSamples(t *testing.T) {
	tests := []struct {
		name    string
		result  queryResult
		want    []Sample
		wantErr bool
	}{
		{
			name:   "vector",
			result: queryResult{ResultType: "vector", Result: json.RawMessage(`[{"metric":{"job":"gatehouse"},"value":[1.5,"2"]}]`)},
			want:   []Sample{{Metric: map[string]string{"job": "gatehouse"}, Value: 2, Time: time.UnixMilli(1500)}},
		},
		{
			name:   "scalar",
			result: queryResult{ResultType: "scalar", Result: json.RawMessage(`[2,"+Inf"]`)},
			want:   []Sample{{Value: math.Inf(1), Time: time.Unix(2, 0)}},
		},
		{name: "empty vector", result: queryResult{ResultType: "vector", Result: json.RawMessage(`[]`)}, want: []Sample{}},
		{name: "matrix", result: queryResult{ResultType: "matrix", Result: json.RawMessage(`[]`)}, wantErr: true},
		{name: "bad value", result: queryResult{ResultType: "scalar", Result: json.RawMessage(`[2,"x"]`)}, wantErr: true},
		{name: "bad time", result: queryResult{ResultType: "scalar", Result: json.RawMessage(`["2","1"]`)}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.result.samples()
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
			for i := range got {
				g, w := got[i], tt.want[i]
				if g.Value != w.Value || !g.Time.Equal(w.Time) || len(g.Metric) != len(w.Metric) || g.Metric["job"] != w.Metric["job"] {
					t.Errorf("sample %d = %+v, want %+v", i, g, w)
				}
			}
		})
	}
}
