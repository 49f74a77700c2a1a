package capability_test

import (
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/demo"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing"
	"github.com/gatehouse-dev/gatehouse/routing/capability"
)

func TestNormalise(t *testing.T) {
	long := strings.Repeat("x", 70)
	longDesc := strings.Repeat("é", 300)
	r := newRegistry(t, capability.Config{},
		capability.Capability{ID: "spaced", Method: "m1", Kind: capability.KindBuiltin,
			Input: json.RawMessage("{ \"type\" : \"object\" }\n"), Description: longDesc},
		capability.Capability{ID: long, Method: "m2", Kind: capability.KindBuiltin},
		capability.Capability{ID: long + "y", Method: "m3", Kind: capability.KindBuiltin},
		capability.Capability{ID: "bad-input", Method: "m4", Input: json.RawMessage(`{"type":`)},
		capability.Capability{ID: "array-input", Method: "m5", Input: json.RawMessage(`[1]`)},
		capability.Capability{ID: "no-method"},
		capability.Capability{ID: "bad-example", Method: "m6", Examples: []capability.Example{{In: json.RawMessage(`{`), Out: json.RawMessage(`1`)}}},
		capability.Capability{ID: "bool-schema", Method: "m7", Input: json.RawMessage(`true`), Output: json.RawMessage(`null`)},
	)
	c, ok := r.Lookup("spaced")
	if !ok || string(c.Input) != `{"type":"object"}` || string(c.Output) != `{}` {
		t.Fatalf("spaced = %+v", c)
	}
	if want, _ := nekte.Hash(c.Input, c.Output, 8); c.Hash != want {
		t.Fatalf("h %s, want %s", c.Hash, want)
	}
	if c.Description != longDesc {
		t.Fatal("the full description was not kept")
	}
	l1, _ := r.Discover(nekte.DiscoverParams{Level: 1, Filter: &nekte.DiscoverFilter{ID: "spaced"}})
	var res nekte.DiscoverResult[nekte.CapSummary]
	if err := json.Unmarshal(l1, &res); err != nil || len(res.Caps) != 1 {
		t.Fatalf("%s: %v", l1, err)
	}
	if d := res.Caps[0].Desc; len(utf16.Encode([]rune(d))) != 256 || !strings.HasSuffix(d, "…") {
		t.Fatalf("wire desc %d units: %q", len(utf16.Encode([]rune(d))), d)
	}
	var long1, long2 string
	for _, c := range r.Capabilities() {
		if strings.HasPrefix(c.ID, "xxx") {
			if len(c.ID) != 64 || !strings.Contains(c.ID, "~") {
				t.Fatalf("long id %q", c.ID)
			}
			if c.Method == "m2" {
				long1 = c.ID
			} else {
				long2 = c.ID
			}
		}
	}
	if long1 == "" || long2 == "" || long1 == long2 {
		t.Fatalf("long ids %q %q", long1, long2)
	}
	if c, ok := r.Lookup("bool-schema"); !ok || string(c.Input) != "true" || string(c.Output) != "{}" {
		t.Fatalf("bool-schema = %+v", c)
	}
	var left []string
	for _, p := range r.Problems() {
		left = append(left, p.ID)
	}
	if got := strings.Join(left, " "); got != "bad-input array-input no-method bad-example" {
		t.Fatalf("problems %v", r.Problems())
	}
	out, _ := r.Discover(nekte.DiscoverParams{})
	if err := validateResult[nekte.CapRef](out); err != nil {
		t.Fatal(err)
	}
}

// validateResult checks every entry of a discover result against the reference
// validator's rules (nekte.CapSchema.Validate).
func validateResult[E nekte.CapRef | nekte.CapSummary | nekte.CapSchema](out []byte) error {
	var res nekte.DiscoverResult[nekte.CapSchema]
	if err := json.Unmarshal(out, &res); err != nil {
		return err
	}
	for _, c := range res.Caps {
		if len(c.Input) == 0 {
			c.Input, c.Output = json.RawMessage("{}"), json.RawMessage("{}")
		}
		if err := c.Validate(); err != nil {
			return err
		}
	}
	return nil
}

func TestDuplicateIDs(t *testing.T) {
	r := newRegistry(t, capability.Config{},
		capability.Capability{ID: "sum", Method: "sum", Kind: capability.KindBuiltin, Source: "demo"},
		capability.Capability{ID: "sum", Method: "mcp.sum", Kind: capability.KindMCPTool, Source: "everything"},
		capability.Capability{ID: "sum", Method: "mcp.sum2", Kind: capability.KindMCPTool, Source: "everything"},
	)
	var ids []string
	for _, c := range r.Capabilities() {
		ids = append(ids, c.ID+"→"+c.Method)
	}
	if got := strings.Join(ids, " "); got != "demo.sum→sum everything.sum→mcp.sum" {
		t.Fatalf("ids %s", got)
	}
	if n := len(r.Problems()); n != 4 {
		t.Fatalf("problems %v", r.Problems())
	}
}

func TestLookupCardCapabilities(t *testing.T) {
	spec := demo.NewSpec(routing.DemoConfig{})
	r, err := capability.New(capability.Config{Agent: "edge"}, capability.SourcesOf([]gateway.Target{spec})...)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Lookup("nope"); ok {
		t.Fatal("found nope")
	}
	c, ok := r.Lookup("subtract")
	if !ok || c.Category != "demo" || c.Method != "subtract" || c.Kind != capability.KindBuiltin || !c.Deterministic || len(c.Examples) != 1 {
		t.Fatalf("subtract = %+v", c)
	}
	card := r.Card("https://gw.example/rpc")
	want := nekte.AgentCard{Nekte: nekte.ProtocolVersion, Agent: "edge", Endpoint: "https://gw.example/rpc",
		Caps: []string{"get_data", "notify_hello", "subtract", "sum", "update"}, Auth: nekte.AuthNone, BudgetSupport: true}
	if got, _ := json.Marshal(card); string(got) != string(must(json.Marshal(want))) {
		t.Fatalf("card %s", got)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// fakeSource is a source whose capabilities tests change.
type fakeSource struct {
	mu   sync.Mutex
	gen  atomic.Uint64
	caps []capability.Capability
}

func (s *fakeSource) set(caps ...capability.Capability) {
	s.mu.Lock()
	s.caps = caps
	s.mu.Unlock()
	s.gen.Add(1)
}

func (s *fakeSource) Generation() uint64 { return s.gen.Load() }

func (s *fakeSource) Capabilities() ([]capability.Capability, uint64) {
	g := s.gen.Load()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.caps, g
}

func TestSourceChangesAreSeenAtOnce(t *testing.T) {
	src := &fakeSource{}
	src.set(tool("echo", "Echoes", `{"type":"object"}`))
	r, err := capability.New(capability.Config{}, src, capability.Static(tool("static", "", "")))
	if err != nil {
		t.Fatal(err)
	}
	r.Update([]capability.Capability{tool("updated", "", "")})
	before, _ := r.Lookup("echo")
	v1 := r.Version()
	r.Observe("echo", 40*time.Millisecond, 10)
	src.set(tool("echo", "Echoes", `{"type":"object","properties":{"m":{"type":"string"}}}`), tool("new", "", ""))
	after, ok := r.Lookup("echo")
	if !ok || after.Hash == before.Hash || r.Version() == v1 {
		t.Fatalf("hash %s → %s, version %s → %s", before.Hash, after.Hash, v1, r.Version())
	}
	if after.Cost != (capability.Cost{AvgMs: 40, AvgTokens: 10}) {
		t.Fatalf("cost not carried over: %+v", after.Cost)
	}
	for _, id := range []string{"new", "static", "updated"} {
		if _, ok := r.Lookup(id); !ok {
			t.Fatalf("%s missing", id)
		}
	}
}

func TestConcurrentReadersAndChanges(t *testing.T) {
	src := &fakeSource{}
	src.set(tool("a", "alpha", ""))
	r, err := capability.New(capability.Config{}, src)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := r.Discover(nekte.DiscoverParams{Level: 1}); err != nil {
					t.Error(err)
					return
				}
				r.Observe("a", time.Millisecond, 3)
				r.Match("alpha")
			}
		})
	}
	for i := range 50 {
		src.set(tool("a", "alpha", `{"description":"`+strings.Repeat("v", i)+`"}`))
	}
	close(stop)
	wg.Wait()
	c, _ := r.Lookup("a")
	if want, _ := nekte.Hash([]byte(`{"description":"`+strings.Repeat("v", 49)+`"}`), []byte("{}"), 8); c.Hash != want {
		t.Fatalf("final hash %s, want %s", c.Hash, want)
	}
}

func TestObserveMovingAverage(t *testing.T) {
	r := newRegistry(t, capability.Config{}, tool("a", "", ""))
	r.Observe("a", 100*time.Millisecond, 100)
	for range 30 {
		r.Observe("a", 10*time.Millisecond, 20)
	}
	r.Observe("unknown", time.Second, 1)
	c, _ := r.Lookup("a")
	if c.Cost.AvgMs < 10 || c.Cost.AvgMs > 11 || c.Cost.AvgTokens < 20 || c.Cost.AvgTokens > 21 {
		t.Fatalf("cost %+v, want about 10ms and 20 tokens", c.Cost)
	}
	out, _ := r.Discover(nekte.DiscoverParams{Level: 1})
	if !strings.Contains(string(out), `"cost":{"avg_ms":10,"avg_tokens":20}`) {
		t.Fatalf("L1 %s", out)
	}
}
