package demo_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/demo"
	agentlinkv1 "github.com/gatehouse-dev/gatehouse/schemas/gen/agentlink/v1"
)

func operator(t *testing.T, id string) demo.AgentOperator {
	t.Helper()
	for _, op := range demo.AgentOperators() {
		if op.ID == id {
			return op
		}
	}
	t.Fatalf("no operator %s", id)
	return demo.AgentOperator{}
}

func TestAgentOperators(t *testing.T) {
	blob := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Token") != "t" {
			http.Error(w, "no", http.StatusForbidden)
			return
		}
		http.ServeContent(w, r, "b", time.Time{}, strings.NewReader("hello world"))
	}))
	defer blob.Close()
	ref := &agentlinkv1.DataRef{Uri: blob.URL, Headers: map[string]string{"X-Token": "t"}, Range: &agentlinkv1.ByteRange{Offset: 0, Length: 5}}
	tests := []struct {
		op, in string
		refs   []*agentlinkv1.DataRef
		want   string // in the output, or in the error when fails
		fails  bool
	}{
		{"sha256", `{"text":"hello"}`, nil, `"sha256":"2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"`, false},
		{"sha256", `{"base64":"aGVsbG8="}`, nil, `"bytes":5`, false},
		{"sha256", `{}`, []*agentlinkv1.DataRef{ref}, `2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824`, false},
		{"sha256", `{"url":"` + blob.URL + `"}`, nil, "HTTP 403", true},
		{"sha256", `{}`, nil, "give text", true},
		{"matmul", `{"a":[[1,2],[3,4]],"b":[[1,0],[0,1]]}`, nil, `{"c":[[1,2],[3,4]]}`, false},
		{"matmul", `{"a":[[1,2]],"b":[[1]]}`, nil, "2 columns", true},
		{"sleep", `{"ms":30,"steps":3}`, nil, `{"slept_ms":30}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.op+tt.in, func(t *testing.T) {
			var steps int
			out, err := operator(t, tt.op).Run(context.Background(), demo.AgentTask{Input: []byte(tt.in), Refs: tt.refs,
				Progress: func(float64, float64, string) { steps++ }})
			got := string(out)
			if err != nil {
				got = err.Error()
			}
			if (err != nil) != tt.fails || !strings.Contains(got, tt.want) {
				t.Fatalf("got %s (err %v), want %q", got, err, tt.want)
			}
			if tt.op == "sleep" && steps != 3 {
				t.Errorf("%d progress reports, want 3", steps)
			}
		})
	}
}

func TestSleepStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := operator(t, "sleep").Run(ctx, demo.AgentTask{Input: []byte(`{"ms":60000,"steps":10}`), Progress: func(float64, float64, string) {}})
	if err == nil || !strings.Contains(err.Error(), "stopped after") {
		t.Fatalf("err = %v", err)
	}
}
