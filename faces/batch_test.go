package faces

import (
	"testing"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
)

func TestPlanBatch(t *testing.T) {
	req := func(id string, deps ...string) jsonrpc.Member {
		m := jsonrpc.Member{Request: jsonrpc.Request{Method: "m", ID: jsonrpc.StringID(id)}}
		for _, d := range deps {
			m.Request.DependsOn = append(m.Request.DependsOn, jsonrpc.StringID(d))
		}
		return m
	}
	tests := []struct {
		name    string
		members []jsonrpc.Member
		failed  []bool
	}{
		{"chain", []jsonrpc.Member{req("a"), req("b", "a"), req("c", "b")}, []bool{false, false, false}},
		{"self cycle", []jsonrpc.Member{req("a", "a"), req("b")}, []bool{true, false}},
		{"three cycle and a dependant", []jsonrpc.Member{req("a", "c"), req("b", "a"), req("c", "b"), req("d", "a")}, []bool{true, true, true, false}},
		{"unknown", []jsonrpc.Member{req("a", "zz"), req("b", "a")}, []bool{true, false}},
		{"ambiguous", []jsonrpc.Member{req("a"), req("a"), req("b", "a")}, []bool{false, false, true}},
		{"diamond", []jsonrpc.Member{req("a"), req("b", "a"), req("c", "a"), req("d", "b", "c")}, []bool{false, false, false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := planBatch(tt.members)
			for i, want := range tt.failed {
				if got := p.err[i] != nil; got != want {
					t.Errorf("member %d failed=%v, want %v (%v)", i, got, want, p.err[i])
				}
			}
		})
	}
}
