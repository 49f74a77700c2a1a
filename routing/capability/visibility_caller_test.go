package capability_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/capability"
)

// namedTarget is a target known by its name only.
type namedTarget string

func (n namedTarget) Name() string { return string(n) }

func (namedTarget) Invoke(context.Context, *gateway.Call) (*gateway.Result, error) { return nil, nil }

// routes routes the methods of a map.
type routes map[string]gateway.Target

func (r routes) Lookup(method string) (gateway.Target, bool) {
	t, ok := r[method]
	return t, ok
}

// TestVisibility: without a policy everything is shown and nothing filters; a policy that
// does not compile hides everything; otherwise Decide is asked about each call, with its
// target set, and an unrouted method is hidden.
func TestVisibility(t *testing.T) {
	table := routes{"math.add": namedTarget("math"), "tool.echo": namedTarget("tools")}
	// decide shows a call to a caller holding the scope named like its target, and
	// anything built-in to an anonymous caller on the boundary over HTTP.
	decide := func(p gateway.Principal, zone gateway.TrustZone, proto gateway.Protocol, call *gateway.Call) bool {
		if p.Subject == "" {
			return zone == gateway.ZoneExternal && proto == gateway.ProtocolHTTP && call.Target.Name() == "math"
		}
		for _, s := range p.Scopes {
			if s == call.Target.Name() {
				return true
			}
		}
		return false
	}
	alice := gateway.Principal{Subject: "alice", Scopes: []string{"tools"}}
	tests := []struct {
		name    string
		params  capability.VisibilityParams
		filters bool
		alice   map[string]bool // capability id → shown to alice
		anon    map[string]bool
	}{
		{"no policy", capability.VisibilityParams{Routes: table}, false,
			map[string]bool{"add": true, "echo": true, "gone": true}, map[string]bool{"add": true, "echo": true}},
		{"policy does not compile", capability.VisibilityParams{Routes: table, HideAll: true}, true,
			map[string]bool{"add": false, "echo": false}, map[string]bool{"add": false, "echo": false}},
		{"policy", capability.VisibilityParams{Routes: table, Decide: decide}, true,
			map[string]bool{"add": false, "echo": true, "gone": false}, map[string]bool{"add": true, "echo": false}},
	}
	methods := map[string]string{"add": "math.add", "echo": "tool.echo", "gone": "no.such.method"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := capability.NewVisibility(tt.params)
			if got := v.Filters(); got != tt.filters {
				t.Fatalf("Filters() = %v, want %v", got, tt.filters)
			}
			visible, anon := v.Visible(alice, gateway.ZoneExternal, gateway.ProtocolHTTP), v.Anonymous()
			if (visible == nil) == tt.filters || (anon == nil) == tt.filters {
				t.Fatalf("filters are nil: %v, %v; want nil only without filtering", visible == nil, anon == nil)
			}
			for id, want := range tt.alice {
				c := capability.Capability{ID: id, Method: methods[id]}
				if got := v.Shows(alice, gateway.ZoneExternal, gateway.ProtocolHTTP, c.Method, c.ID); got != want {
					t.Errorf("Shows(alice, %s) = %v, want %v", id, got, want)
				}
				if visible != nil && visible(c) != want {
					t.Errorf("Visible(alice)(%s) = %v, want %v", id, !want, want)
				}
			}
			for id, want := range tt.anon {
				if anon != nil && anon(capability.Capability{ID: id, Method: methods[id]}) != want {
					t.Errorf("Anonymous()(%s) = %v, want %v", id, !want, want)
				}
			}
		})
	}
}

// TestVisibilityShowsCallSetsTarget: the call asked about gets the target its method is
// routed to, as the policy stage would see it.
func TestVisibilityShowsCallSetsTarget(t *testing.T) {
	var seen gateway.Target
	v := capability.NewVisibility(capability.VisibilityParams{Routes: routes{"math.add": namedTarget("math")},
		Decide: func(_ gateway.Principal, _ gateway.TrustZone, _ gateway.Protocol, call *gateway.Call) bool {
			seen = call.Target
			return call.Capability == "add"
		}})
	call := &gateway.Call{Method: "math.add", Capability: "add"}
	if !v.ShowsCall(gateway.Principal{}, gateway.ZoneInternal, gateway.ProtocolMCP, call) {
		t.Fatal("ShowsCall = false, want true")
	}
	if call.Target != namedTarget("math") || seen != namedTarget("math") {
		t.Fatalf("target %v, decided on %v; want math", call.Target, seen)
	}
}

// TestViewKey: two callers share a view key only when the zone, the protocol and what
// Decide reads of the principal (DecideKey) agree; without a policy, or with one hiding
// everything, every caller has one view; a Decide without DecideKey cannot be keyed.
func TestViewKey(t *testing.T) {
	scopes := func(p gateway.Principal) string { return fmt.Sprint(p.Scopes) }
	decide := func(gateway.Principal, gateway.TrustZone, gateway.Protocol, *gateway.Call) bool { return true }
	keyed := capability.NewVisibility(capability.VisibilityParams{Routes: routes{}, Decide: decide, DecideKey: scopes})
	admin, other := gateway.Principal{Subject: "a", Scopes: []string{"admin"}}, gateway.Principal{Subject: "b", Scopes: []string{"other"}}
	adminToo := gateway.Principal{Subject: "c", Scopes: []string{"admin"}}
	type caller struct {
		p     gateway.Principal
		zone  gateway.TrustZone
		proto gateway.Protocol
	}
	tests := []struct {
		name string
		v    *capability.Visibility
		a, b caller
		same bool
	}{
		{"same scopes, zone and protocol", keyed, caller{admin, gateway.ZoneExternal, gateway.ProtocolMCP}, caller{adminToo, gateway.ZoneExternal, gateway.ProtocolMCP}, true},
		{"other scopes", keyed, caller{admin, gateway.ZoneExternal, gateway.ProtocolMCP}, caller{other, gateway.ZoneExternal, gateway.ProtocolMCP}, false},
		{"other zone", keyed, caller{admin, gateway.ZoneExternal, gateway.ProtocolMCP}, caller{admin, gateway.ZoneInternal, gateway.ProtocolMCP}, false},
		{"other protocol", keyed, caller{admin, gateway.ZoneExternal, gateway.ProtocolMCP}, caller{admin, gateway.ZoneExternal, gateway.ProtocolHTTP}, false},
		{"no policy", capability.NewVisibility(capability.VisibilityParams{Routes: routes{}}),
			caller{admin, gateway.ZoneExternal, gateway.ProtocolMCP}, caller{other, gateway.ZoneInternal, gateway.ProtocolHTTP}, true},
		{"hide all", capability.NewVisibility(capability.VisibilityParams{Routes: routes{}, Decide: decide, HideAll: true}),
			caller{admin, gateway.ZoneExternal, gateway.ProtocolMCP}, caller{other, gateway.ZoneInternal, gateway.ProtocolHTTP}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ka, oka := tt.v.ViewKey(tt.a.p, tt.a.zone, tt.a.proto)
			kb, okb := tt.v.ViewKey(tt.b.p, tt.b.zone, tt.b.proto)
			if !oka || !okb {
				t.Fatal("no view key")
			}
			if (ka == kb) != tt.same {
				t.Fatalf("keys %q and %q: same %v, want %v", ka, kb, ka == kb, tt.same)
			}
		})
	}
	unkeyed := capability.NewVisibility(capability.VisibilityParams{Routes: routes{}, Decide: decide})
	if k, ok := unkeyed.ViewKey(admin, gateway.ZoneExternal, gateway.ProtocolMCP); ok {
		t.Fatalf("a Decide without DecideKey gave the view key %q", k)
	}
}
