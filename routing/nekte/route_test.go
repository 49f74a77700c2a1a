package nekte_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/capability"
	rn "github.com/gatehouse-dev/gatehouse/routing/nekte"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// TestNekteTargetsForTheStages: the NEKTE service has no backend, and says which of its
// calls the retry stage must never retry — those that delegate or concern a task.
func TestNekteTargetsForTheStages(t *testing.T) {
	svc := &rn.Service{}
	for _, target := range []gateway.Target{svc, rn.NewRoute(rn.RouteParams{Service: svc})} {
		for method, want := range map[string]bool{
			nekte.MethodDelegate: true, nekte.MethodTaskResume: true, nekte.MethodTaskCancel: true, nekte.MethodTaskStatus: true,
			rn.MethodTaskStream: true, rn.MethodTaskSuspend: true,
			nekte.MethodInvoke: false, nekte.MethodDiscover: false,
		} {
			call := &gateway.Call{Method: method, Target: target}
			if got := target.(gateway.Unretryable).NotRetryable(call); got != want {
				t.Errorf("%T: NotRetryable(%s) = %v, want %v", target, method, got, want)
			}
			if b := gateway.BackendOf(call); b != "" {
				t.Errorf("%T: BackendOf(%s) = %q, want none", target, method, b)
			}
			if r := gateway.ReachOf(call, true); r != (gateway.Reach{Kind: gateway.ReachNekte}) {
				t.Errorf("%T: ReachOf(%s) = %+v, want NEKTE", target, method, r)
			}
		}
	}
}

// onlyID is a Visibility that shows every caller the capability id and nothing else; nil
// id hides nothing.
type onlyID struct{ id string }

func (v onlyID) Filters() bool { return v.id != "" }

func (v onlyID) Visible(gateway.Principal, gateway.TrustZone, gateway.Protocol) func(capability.Capability) bool {
	if v.id == "" {
		return nil
	}
	return func(c capability.Capability) bool { return c.ID == v.id }
}

func (v onlyID) Anonymous() func(capability.Capability) bool {
	return v.Visible(gateway.Principal{}, gateway.ZoneExternal, gateway.ProtocolHTTP)
}

// routeCatalog is a registry of two built-in capabilities, add and echo.
func routeCatalog(t *testing.T) *capability.Registry {
	t.Helper()
	var caps []capability.Capability
	for _, id := range []string{"add", "echo"} {
		caps = append(caps, capability.Capability{ID: id, Category: "test", Description: "test capability " + id,
			Kind: capability.KindBuiltin, Method: "test." + id, Source: "fake"})
	}
	reg, err := capability.New(capability.Config{}, capability.Static(caps...))
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// TestRouteDiscoverAndCard: a Route lists, in nekte.discover and the agent card, what its
// Visibility shows, refuses bad params as the Service does, and announces the configured
// endpoint and authentication.
func TestRouteDiscoverAndCard(t *testing.T) {
	reg := routeCatalog(t)
	e := newEnv(t)
	svc := e.service(fastTasks())
	route := func(v rn.Visibility, endpoint string) *rn.Route {
		return rn.NewRoute(rn.RouteParams{Service: svc, Catalog: reg, Endpoint: endpoint, Auth: nekte.AuthBearer, Visibility: v})
	}
	discover := func(r *rn.Route, params string) (string, error) {
		res, err := r.Invoke(context.Background(), &gateway.Call{Method: nekte.MethodDiscover, Params: json.RawMessage(params)})
		if err != nil {
			return "", err
		}
		return string(res.Value), nil
	}

	out, err := discover(route(onlyID{"echo"}, ""), `{"level":0}`)
	if err != nil || !strings.Contains(out, `"echo"`) || strings.Contains(out, `"add"`) {
		t.Fatalf("filtered discover: %s, %v; want echo only", out, err)
	}
	// Without a filter the Service answers, from its own catalog (the env's fake one).
	out, err = discover(route(onlyID{}, ""), `{"level":0}`)
	if err != nil || !strings.Contains(out, `"agent":"fake"`) {
		t.Fatalf("unfiltered discover: %s, %v", out, err)
	}
	_, err = discover(route(onlyID{"echo"}, ""), `{"level":7}`)
	if ge := wantCode(t, err, schemas.CodeInvalidParams); ge.Data()["reason"] == nil {
		t.Fatalf("bad params: %v; want data.reason", ge.Data())
	}

	for _, tt := range []struct {
		name, endpoint, want string
		v                    rn.Visibility
		caps                 []string
	}{
		{"everything, request's endpoint", "", "http://gw/rpc", onlyID{}, []string{"add", "echo"}},
		{"anonymous view, configured endpoint", "https://agents.example/rpc", "https://agents.example/rpc", onlyID{"add"}, []string{"add"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := route(tt.v, tt.endpoint).AgentCard("http://gw/rpc")
			if err != nil {
				t.Fatal(err)
			}
			var card nekte.AgentCard
			if err := json.Unmarshal(raw, &card); err != nil {
				t.Fatal(err)
			}
			if card.Endpoint != tt.want || card.Auth != nekte.AuthBearer || strings.Join(card.Caps, ",") != strings.Join(tt.caps, ",") {
				t.Fatalf("card %s; want endpoint %s, auth bearer, caps %v", raw, tt.want, tt.caps)
			}
		})
	}
}

// TestCurrentCatalog: the catalog that follows the current configuration answers from the
// registry it is handed, releases it after every call, and has nothing while NEKTE is off.
func TestCurrentCatalog(t *testing.T) {
	var reg *capability.Registry
	held := 0
	c := rn.CurrentCatalog(func() (*capability.Registry, func()) {
		held++
		return reg, func() { held-- }
	})
	if _, ok := c.Lookup("echo"); ok {
		t.Fatal("Lookup with NEKTE off found a capability")
	}
	_, err := c.DiscoverWith(nekte.DiscoverParams{}, capability.DiscoverOptions{})
	wantCode(t, err, schemas.CodeMethodNotFound)
	_, err = c.Invoke(context.Background(), nil, nekte.InvokeParams{Cap: "echo"})
	wantCode(t, err, schemas.CodeMethodNotFound)

	reg = routeCatalog(t)
	if got, ok := c.Lookup("echo"); !ok || got.Method != "test.echo" {
		t.Fatalf("Lookup(echo) = %+v, %v", got, ok)
	}
	if raw, err := c.DiscoverWith(nekte.DiscoverParams{}, capability.DiscoverOptions{}); err != nil || !strings.Contains(string(raw), `"add"`) {
		t.Fatalf("DiscoverWith = %s, %v", raw, err)
	}
	if held != 0 {
		t.Fatalf("%d configurations still held", held)
	}
}
