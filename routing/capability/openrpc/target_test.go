package openrpc_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/capability"
	"github.com/gatehouse-dev/gatehouse/routing/capability/openrpc"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

type namedTarget string

func (n namedTarget) Name() string { return string(n) }
func (namedTarget) Invoke(context.Context, *gateway.Call) (*gateway.Result, error) {
	return gateway.NewResult(nil), nil
}

type routes map[string]gateway.Target

func (r routes) Lookup(m string) (gateway.Target, bool) { t, ok := r[m]; return t, ok }

// TestTargetParams: rpc.discover takes no params — absent, [] or {} — and refuses any
// other with INVALID_PARAMS.
func TestTargetParams(t *testing.T) {
	tg := openrpc.NewTarget(generator(t, fixture(t)), &capability.Visibility{}, routes{})
	for _, tc := range []struct {
		params string
		ok     bool
	}{{"", true}, {"[]", true}, {"{}", true}, {" { } ", true}, {"[1]", false}, {`{"a":1}`, false}, {"null", false}} {
		res, err := tg.Invoke(context.Background(), &gateway.Call{Method: openrpc.MethodDiscover, Params: []byte(tc.params)})
		if tc.ok {
			if err != nil || !strings.Contains(string(res.Value), `"openrpc":"`+openrpc.Version+`"`) {
				t.Errorf("params %q: %v, %.80s", tc.params, err, res.Value)
			}
			continue
		}
		var ge *gateway.Error
		if !errors.As(err, &ge) || ge.Code() != schemas.CodeInvalidParams {
			t.Errorf("params %q: %v, want INVALID_PARAMS", tc.params, err)
		}
	}
	if doc := tg.OpenRPC(); !strings.Contains(string(doc), `"methods"`) {
		t.Errorf("anonymous document: %.80s", doc)
	}
}

// TestRouted: a routed method the builtins do not describe is listed once with its
// target's name; builtins and rpc.discover are not listed again.
func TestRouted(t *testing.T) {
	r := routes{"a.x": namedTarget("alpha"), "b.y": namedTarget("beta"), openrpc.MethodDiscover: namedTarget("openrpc")}
	got := openrpc.Routed([]openrpc.Method{{Name: "b.y", Description: "builtin"}}, []string{"a.x", "b.y", openrpc.MethodDiscover}, r.Lookup)
	if len(got) != 2 || got[0].Description != "builtin" || got[1].Name != "a.x" || !strings.Contains(got[1].Description, "alpha") {
		t.Fatalf("Routed = %+v", got)
	}
}
