package policy_test

import (
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/fuzzseed"

	"github.com/gatehouse-dev/gatehouse/auth/policy"
	"github.com/gatehouse-dev/gatehouse/gateway"
)

// FuzzNew loads arbitrary patterns and conditions: New either refuses them or yields an
// engine whose decisions do not panic.
func FuzzNew(f *testing.F) {
	// Seeds from real traffic: the golden files' and the recorded peers' frames (internal/fuzzseed).
	for _, c := range fuzzseed.Calls(f, fuzzseed.JSONRPCRequest, fuzzseed.NEKTERequest, fuzzseed.MCPRequest) {
		if c.Params != nil {
			f.Add(c.Method, `params.size() > 0`, string(c.Params))
		}
	}
	f.Add("demo.*", `claims.tenant == params.tenant`, `{"tenant":"a"}`)
	f.Add("a?b*", `params.x.all(y, y > 1)`, `{"x":[1,2]}`)
	f.Add("*", `1 +`, `[]`)
	f.Add("x", `principal.sub.startsWith("a") || call.zone == "internal"`, `{"A":1,"a":2}`)
	f.Fuzz(func(t *testing.T, pattern, when, params string) {
		e, err := policy.New(policy.Config{Rules: []policy.Rule{{Match: policy.Match{Method: pattern}, When: when}}})
		if err != nil {
			return
		}
		d := e.Decide(policy.Input{Zone: gateway.ZoneInternal, Subject: policy.Subject{Method: pattern, Kind: policy.KindBuiltin}, Params: []byte(params)})
		if d.Allowed && d.Denial != policy.NotDenied {
			t.Fatalf("allowed with denial %d", d.Denial)
		}
	})
}

// FuzzDecodeParams checks the strict params decoder: it never panics, and what it accepts
// has no two member names equal ignoring case at the top level.
func FuzzDecodeParams(f *testing.F) {
	// Seeds from real traffic: the golden files' and the recorded peers' frames (internal/fuzzseed).
	for _, c := range fuzzseed.Calls(f, fuzzseed.Requests...) {
		if c.Params != nil {
			f.Add(string(c.Params))
		}
	}
	for _, s := range []string{`{"a":1}`, `{"a":1,"A":2}`, `[1,2]`, `null`, `{"a":{"b":[{"c":1.5e400}]}}`, `{"a":1}x`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := policy.DecodeParams([]byte(s))
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for k := range m {
			if seen[lowerUpper(k)] {
				t.Fatalf("accepted case-variant duplicate %q", k)
			}
			seen[lowerUpper(k)] = true
		}
	})
}
