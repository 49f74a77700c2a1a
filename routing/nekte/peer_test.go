package nekte_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/codecs/nekte"
	rn "github.com/gatehouse-dev/gatehouse/routing/nekte"
	"github.com/gatehouse-dev/gatehouse/schemas"
	"github.com/gatehouse-dev/gatehouse/state"
)

// recordingKV is a shared store that remembers every value written under every key, so a
// test can tell whether anything ever reached it.
type recordingKV struct {
	state.KV
	mu     sync.Mutex
	writes map[string][]string
}

func (r *recordingKV) record(key string, value []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writes[key] = append(r.writes[key], string(value))
}

func (r *recordingKV) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	r.record(key, value)
	return r.KV.Set(ctx, key, value, ttl)
}

func (r *recordingKV) SetNX(ctx context.Context, key string, value []byte, ttl time.Duration) (bool, error) {
	r.record(key, value)
	return r.KV.SetNX(ctx, key, value, ttl)
}

func (r *recordingKV) CompareAndSwap(ctx context.Context, key string, oldValue, newValue []byte, ttl time.Duration) (bool, error) {
	r.record(key, newValue)
	return r.KV.CompareAndSwap(ctx, key, oldValue, newValue, ttl)
}

// mustNotHold fails the test if a key, or a value ever written, contains s.
func (r *recordingKV) mustNotHold(t *testing.T, s string) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.writes) == 0 {
		t.Fatal("nothing was written to the shared store: the scan proves nothing")
	}
	for key, values := range r.writes {
		if strings.Contains(key, s) {
			t.Fatalf("key %s of the shared store contains %q", key, s)
		}
		for _, v := range values {
			if strings.Contains(v, s) {
				t.Fatalf("the shared store was given %q under %s: %s", s, key, v)
			}
		}
	}
}

// peerCall is one call a fakeNet carried.
type peerCall struct {
	op, addr string
	deadline bool          // the call had a deadline
	timeout  time.Duration // the time it had left when it arrived
}

// fakeNet is the PeerClient of a cluster's replicas: it calls the Service registered
// under an address directly, or fails as a replica that is down or hangs would.
type fakeNet struct {
	mu    sync.Mutex
	svcs  map[string]*rn.Service
	fails map[string]string // addr → "down" | "hang"
	calls []peerCall
}

func (n *fakeNet) reach(ctx context.Context, op, addr string) (*rn.Service, error) {
	n.mu.Lock()
	call := peerCall{op: op, addr: addr}
	if d, ok := ctx.Deadline(); ok {
		call.deadline, call.timeout = true, time.Until(d)
	}
	n.calls = append(n.calls, call)
	svc, fail := n.svcs[addr], n.fails[addr]
	n.mu.Unlock()
	switch {
	case fail == "hang":
		<-ctx.Done()
		return nil, &rn.PeerError{Op: op, Addr: addr, Err: ctx.Err()}
	case fail == "down" || svc == nil:
		return nil, &rn.PeerError{Op: op, Addr: addr, Err: errors.New("connection refused")}
	}
	return svc, nil
}

func (n *fakeNet) GetEnvelope(ctx context.Context, addr string, ref rn.PeerRef) ([]byte, error) {
	svc, err := n.reach(ctx, "get", addr)
	if err != nil {
		return nil, err
	}
	return svc.PeerEnvelope(ctx, ref)
}

func (n *fakeNet) RevokeEnvelope(ctx context.Context, addr string, ref rn.PeerRef) error {
	svc, err := n.reach(ctx, "revoke", addr)
	if err != nil {
		return err
	}
	return svc.PeerRevoke(ctx, ref)
}

func (n *fakeNet) fail(addr, how string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.fails[addr] = how
}

func (n *fakeNet) seen() []peerCall {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]peerCall(nil), n.calls...)
}

// cluster is an env whose services are replicas: one shared store (expiring on the test's
// clock, recording writes), each replica its own local store, connected by a fakeNet.
type cluster struct {
	*env
	shared *recordingKV
	net    *fakeNet
}

const (
	addrA = "replica-a.test:7001"
	addrB = "replica-b.test:7001"
)

func newCluster(t *testing.T) *cluster {
	t.Helper()
	e := newEnv(t)
	kv := state.NewEmbedded(state.EmbeddedOptions{Now: e.clock.Now})
	t.Cleanup(func() { _ = kv.Close() })
	rec := &recordingKV{KV: kv, writes: map[string][]string{}}
	e.kv = rec
	return &cluster{env: e, shared: rec, net: &fakeNet{svcs: map[string]*rn.Service{}, fails: map[string]string{}}}
}

// replica starts a Service with peers, advertising addr (none when advertise is false)
// and reachable there.
func (c *cluster) replica(addr string, advertise bool, cfg rn.Config, inv *fakeInvoker) *rn.Service {
	c.t.Helper()
	s := c.serviceWith(cfg, inv)
	p := rn.Peers{Client: c.net}
	if advertise {
		p.Advertise = addr
	}
	if err := s.UsePeers(p); err != nil {
		c.t.Fatal(err)
	}
	c.net.mu.Lock()
	c.net.svcs[addr] = s
	c.net.mu.Unlock()
	return s
}

// locator returns the locator of alice's envelope id in the shared store.
func (c *cluster) locator(t *testing.T, key string) (addr string, secret []byte, ok bool) {
	t.Helper()
	raw, ok, err := c.shared.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return "", nil, false
	}
	var loc struct {
		Addr   string `json:"addr"`
		Secret []byte `json:"secret"`
	}
	if err := json.Unmarshal(raw, &loc); err != nil {
		t.Fatalf("locator %s: %v", raw, err)
	}
	return loc.Addr, loc.Secret, true
}

func ctxLocator(id string) string  { return "nekte:ctxpeer:" + b64("alice") + ":" + id }
func taskLocator(id string) string { return "nekte:taskctxpeer:" + b64("alice") + ":" + id }

func shareData(id, data, perms string) string {
	return `{"action":"share","envelope":{"id":"` + id + `","data":` + data + `,"permissions":` + perms + `,"ttl_s":60}}`
}

func request(id string) string { return `{"action":"request","envelope":{"id":"` + id + `"}}` }

func revoke(id string) string { return `{"action":"revoke","envelope":{"id":"` + id + `"}}` }

func TestPeerShareRequestRevokeAcrossReplicas(t *testing.T) {
	c := newCluster(t)
	a := c.replica(addrA, true, fastTasks(), c.invoker)
	b := c.replica(addrB, true, fastTasks(), c.invoker)
	if got := mustCall(t, a, "alice", nekte.MethodContext, share("prefs", permsLocal, "")); got != `{"id":"prefs","status":"stored","ttl_s":60}` {
		t.Fatalf("share %s", got)
	}
	c.clock.Advance(15 * time.Second)
	want := `{"id":"prefs","data":{"secret":"marker-prefs"},"permissions":` + permsLocal + `,"ttl_s":45}`
	for name, s := range map[string]*rn.Service{"owner": a, "other replica": b} {
		if got := mustCall(t, s, "alice", nekte.MethodContext, request("prefs")); got != want {
			t.Fatalf("request on the %s: %s, want %s", name, got, want)
		}
	}
	if got := mustCall(t, b, "bob", nekte.MethodContext, request("prefs")); got != `{"id":"prefs","status":"not_found"}` {
		t.Fatalf("another owner got %s", got)
	}
	c.shared.mustNotHold(t, "marker-prefs")
	addr, secret, ok := c.locator(t, ctxLocator("prefs"))
	if !ok || addr != addrA || len(secret) != 32 {
		t.Fatalf("locator: %q, %d-byte secret, present %v", addr, len(secret), ok)
	}

	if got := mustCall(t, b, "alice", nekte.MethodContext, revoke("prefs")); got != `{"id":"prefs","status":"revoked"}` {
		t.Fatalf("revoke on the other replica: %s", got)
	}
	if _, err := a.PeerEnvelope(context.Background(), rn.PeerRef{Owner: "alice", ID: "prefs", Secret: secret}); !errors.Is(err, rn.ErrPeerNotFound) {
		t.Fatalf("the owner still holds the revoked envelope: %v", err)
	}
	if _, _, ok := c.locator(t, ctxLocator("prefs")); ok {
		t.Fatal("the locator outlived the revoke")
	}
	for name, s := range map[string]*rn.Service{"owner": a, "other replica": b} {
		if got := mustCall(t, s, "alice", nekte.MethodContext, request("prefs")); got != `{"id":"prefs","status":"not_found"}` {
			t.Fatalf("request on the %s after revoke: %s", name, got)
		}
	}
	if got := mustCall(t, b, "alice", nekte.MethodContext, revoke("prefs")); got != `{"id":"prefs","status":"not_found"}` {
		t.Fatalf("second revoke: %s", got)
	}
}

func TestPeerDelegateRunsWithTheOwnersEnvelope(t *testing.T) {
	c := newCluster(t)
	c.capability("ctx", contextCap)
	a := c.replica(addrA, true, fastTasks(), c.invoker)
	b := c.replica(addrB, true, fastTasks(), c.invoker)
	mustCall(t, a, "alice", nekte.MethodContext, share("shared", permsLocal, ""))
	c.shared.mustNotHold(t, "marker-shared") // (the task's result, which echoes it, is kept)
	params := `{"task":{"id":"t-1","desc":"","timeout_ms":0,"cap":"ctx"},"context":{"id":"shared"}}`
	evs := openStream(t)(call(t, b, "alice", nekte.MethodDelegate, params)).rest()
	if last := evs[len(evs)-1]; last.Event != nekte.EventComplete || !strings.Contains(string(last.Data), `"context":{"secret":"marker-shared"}`) {
		t.Fatalf("complete %s, want the capability to see the envelope", last.Data)
	}
}

func TestPeerTaskResumedOnAnotherReplica(t *testing.T) {
	tests := []struct {
		name  string
		owner string // "" (up), "down", "hang"
	}{
		{"owner up", ""},
		{"owner down", "down"},
		{"owner hangs", "hang"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCluster(t)
			blk := newBlocker(`{}`)
			c.capability("job", blk.run)
			cfg := fastTasks()
			cfg.Contexts.PeerTimeout = 100 * time.Millisecond
			a := c.replica(addrA, true, cfg, c.invoker)
			invB := &fakeInvoker{}
			invB.set("job", contextCap)
			b := c.replica(addrB, true, cfg, invB)

			params := `{"task":{"id":"t-1","desc":"","timeout_ms":0,"cap":"job"},"context":{"id":"c","data":{"secret":"inline-marker"},"permissions":{"forward":true,"persist":false,"derive":true},"ttl_s":60}}`
			st := openStream(t)(call(t, a, "alice", nekte.MethodDelegate, params))
			waitFor(t, blk.started, "the task to start")
			mustCall(t, a, "alice", rn.MethodTaskSuspend, `{"task_id":"t-1"}`)
			waitFor(t, blk.stopped, "the backend call to be cancelled")
			if addr, _, ok := c.locator(t, taskLocator("t-1")); !ok || addr != addrA {
				t.Fatalf("task context locator %q, present %v", addr, ok)
			}
			c.shared.mustNotHold(t, "inline-marker")

			if tt.owner != "" {
				c.net.fail(addrA, tt.owner)
				_, err := call(t, b, "alice", nekte.MethodTaskResume, `{"task_id":"t-1"}`)
				wantCode(t, err, schemas.CodeContextExpired)
				return
			}
			mustCall(t, b, "alice", nekte.MethodTaskResume, `{"task_id":"t-1"}`)
			rest := st.rest()
			if last := rest[len(rest)-1]; last.Event != nekte.EventComplete || !strings.Contains(string(last.Data), `"context":{"secret":"inline-marker"}`) {
				t.Fatalf("complete %s, want the resumed run to see the inline envelope", last.Data)
			}
		})
	}
}

func TestPeerOwnerGone(t *testing.T) {
	tests := []struct {
		name       string
		fail       string // how the owner fails: "down", "hang", "restarted"
		revokeSays string
	}{
		{"down", "down", "revoked"},
		{"hangs past peer_timeout", "hang", "revoked"},
		{"restarted", "restarted", "not_found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCluster(t)
			c.capability("ctx", contextCap)
			cfg := fastTasks()
			cfg.Contexts.PeerTimeout = 100 * time.Millisecond
			a := c.replica(addrA, true, cfg, c.invoker)
			b := c.replica(addrB, true, cfg, c.invoker)
			mustCall(t, a, "alice", nekte.MethodContext, share("prefs", permsLocal, ""))
			if tt.fail == "restarted" {
				c.replica(addrA, true, cfg, c.invoker) // a new process at the same address, holding nothing
			} else {
				c.net.fail(addrA, tt.fail)
			}

			start := time.Now()
			if got := mustCall(t, b, "alice", nekte.MethodContext, request("prefs")); got != `{"id":"prefs","status":"not_found"}` {
				t.Fatalf("request: %s", got)
			}
			if elapsed := time.Since(start); elapsed > waitLimit/2 {
				t.Fatalf("the request took %v", elapsed)
			}
			params := `{"task":{"id":"t-1","desc":"","timeout_ms":0,"cap":"ctx"},"context":{"id":"prefs"}}`
			_, err := call(t, b, "alice", nekte.MethodDelegate, params)
			if ge := wantCode(t, err, schemas.CodeContextExpired); !strings.Contains(ge.Error(), "Context not available: prefs") {
				t.Fatalf("delegate: %v", ge)
			}
			if got := mustCall(t, b, "alice", nekte.MethodContext, revoke("prefs")); got != `{"id":"prefs","status":"`+tt.revokeSays+`"}` {
				t.Fatalf("revoke: %s", got)
			}
			if _, _, ok := c.locator(t, ctxLocator("prefs")); ok {
				t.Fatal("the locator outlived the revoke")
			}
			// Every call was bounded by peer_timeout.
			for _, pc := range c.net.seen() {
				if !pc.deadline || pc.timeout > cfg.Contexts.PeerTimeout {
					t.Fatalf("a %s call to %s had %v to run, want at most %v", pc.op, pc.addr, pc.timeout, cfg.Contexts.PeerTimeout)
				}
			}
			if n := len(c.net.seen()); n != 3 {
				t.Fatalf("%d peer calls, want 3 (request, delegate, revoke)", n)
			}
			// The owner itself, still running, no longer serves it either: its locator is gone.
			if tt.fail != "restarted" {
				if got := mustCall(t, a, "alice", nekte.MethodContext, request("prefs")); got != `{"id":"prefs","status":"not_found"}` {
					t.Fatalf("request on the owner after the revoke: %s", got)
				}
			}
		})
	}
}

func TestPeerSecretChecked(t *testing.T) {
	c := newCluster(t)
	a := c.replica(addrA, true, fastTasks(), c.invoker)
	mustCall(t, a, "alice", nekte.MethodContext, share("prefs", permsLocal, ""))
	_, secret, ok := c.locator(t, ctxLocator("prefs"))
	if !ok {
		t.Fatal("no locator")
	}
	wrong := make([]byte, 32)
	_, _ = rand.Read(wrong)
	tests := []struct {
		name string
		ref  rn.PeerRef
		want error
	}{
		{"right secret", rn.PeerRef{Owner: "alice", ID: "prefs", Secret: secret}, nil},
		{"wrong secret", rn.PeerRef{Owner: "alice", ID: "prefs", Secret: wrong}, rn.ErrPeerNotFound},
		{"one bit off", rn.PeerRef{Owner: "alice", ID: "prefs", Secret: flipped(secret)}, rn.ErrPeerNotFound},
		{"another owner", rn.PeerRef{Owner: "bob", ID: "prefs", Secret: secret}, rn.ErrPeerNotFound},
		{"a task of that id", rn.PeerRef{Owner: "alice", ID: "prefs", Task: true, Secret: secret}, rn.ErrPeerNotFound},
		{"short secret", rn.PeerRef{Owner: "alice", ID: "prefs", Secret: secret[:31]}, rn.ErrPeerRef},
		{"no secret", rn.PeerRef{Owner: "alice", ID: "prefs"}, rn.ErrPeerRef},
		{"no owner", rn.PeerRef{ID: "prefs", Secret: secret}, rn.ErrPeerRef},
		{"no id", rn.PeerRef{Owner: "alice", Secret: secret}, rn.ErrPeerRef},
		{"long id", rn.PeerRef{Owner: "alice", ID: strings.Repeat("x", 1025), Secret: secret}, rn.ErrPeerRef},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := a.PeerEnvelope(context.Background(), tt.ref)
			if !errors.Is(err, tt.want) {
				t.Fatalf("PeerEnvelope: %v, want %v", err, tt.want)
			}
			if tt.want == nil && !strings.Contains(string(raw), `"data":{"secret":"marker-prefs"}`) {
				t.Fatalf("PeerEnvelope answered %s", raw)
			}
			if tt.want != nil {
				if raw != nil {
					t.Fatalf("a refused PeerEnvelope answered %s", raw)
				}
				if err := a.PeerRevoke(context.Background(), tt.ref); !errors.Is(err, tt.want) {
					t.Fatalf("PeerRevoke: %v, want %v", err, tt.want)
				}
			}
		})
	}
	// No refused revoke dropped it.
	if got := mustCall(t, a, "alice", nekte.MethodContext, request("prefs")); !strings.Contains(got, "marker-prefs") {
		t.Fatalf("request after refused revokes: %s", got)
	}
}

func flipped(b []byte) []byte {
	out := append([]byte(nil), b...)
	out[len(out)-1] ^= 1
	return out
}

func TestPeerLocatorExpiresWithTheEnvelope(t *testing.T) {
	c := newCluster(t)
	cfg := fastTasks()
	cfg.Contexts.ExpiredGrace = 10 * time.Second
	a := c.replica(addrA, true, cfg, c.invoker)
	b := c.replica(addrB, true, cfg, c.invoker)
	mustCall(t, a, "alice", nekte.MethodContext, share("prefs", permsLocal, ""))

	c.clock.Advance(61 * time.Second) // expired, within the grace
	_, err := call(t, b, "alice", nekte.MethodContext, request("prefs"))
	wantCode(t, err, schemas.CodeContextExpired)
	if _, _, ok := c.locator(t, ctxLocator("prefs")); !ok {
		t.Fatal("the locator went before the grace ended")
	}

	c.clock.Advance(10 * time.Second) // past the grace
	if _, _, ok := c.locator(t, ctxLocator("prefs")); ok {
		t.Fatal("the locator outlived the envelope and its grace")
	}
	for name, s := range map[string]*rn.Service{"owner": a, "other replica": b} {
		if got := mustCall(t, s, "alice", nekte.MethodContext, request("prefs")); got != `{"id":"prefs","status":"not_found"}` {
			t.Fatalf("request on the %s: %s", name, got)
		}
	}
}

func TestPeerReshareReplacesCopiesElsewhere(t *testing.T) {
	c := newCluster(t)
	a := c.replica(addrA, true, fastTasks(), c.invoker)
	b := c.replica(addrB, true, fastTasks(), c.invoker)
	steps := []struct {
		on    *rn.Service
		data  string
		perms string
		loc   string // the locator's address afterwards ("" none)
	}{
		{a, `{"v":1}`, permsLocal, addrA},
		{b, `{"v":2}`, permsAll, ""}, // persist: true on the other replica
		{b, `{"v":3}`, permsLocal, addrB},
		{a, `{"v":4}`, permsLocal, addrA},
		{a, `{"v":5}`, permsAll, ""},
	}
	for i, st := range steps {
		mustCall(t, st.on, "alice", nekte.MethodContext, shareData("prefs", st.data, st.perms))
		if addr, _, _ := c.locator(t, ctxLocator("prefs")); addr != st.loc {
			t.Fatalf("step %d: locator %q, want %q", i+1, addr, st.loc)
		}
		for name, s := range map[string]*rn.Service{"a": a, "b": b} {
			if got := mustCall(t, s, "alice", nekte.MethodContext, request("prefs")); !strings.Contains(got, `"data":`+st.data) {
				t.Fatalf("step %d: request on %s: %s, want data %s", i+1, name, got, st.data)
			}
		}
	}
}

func TestPeerWithoutAdvertisedAddress(t *testing.T) {
	c := newCluster(t)
	a := c.replica(addrA, false, fastTasks(), c.invoker) // reaches others, is not reachable
	b := c.replica(addrB, true, fastTasks(), c.invoker)

	mustCall(t, a, "alice", nekte.MethodContext, shareData("prefs", `{"v":1}`, permsLocal))
	if _, _, ok := c.locator(t, ctxLocator("prefs")); ok {
		t.Fatal("a replica without an advertised address wrote a locator")
	}
	if got := mustCall(t, b, "alice", nekte.MethodContext, request("prefs")); got != `{"id":"prefs","status":"not_found"}` {
		t.Fatalf("request on the other replica: %s", got)
	}

	mustCall(t, b, "alice", nekte.MethodContext, shareData("prefs", `{"v":2}`, permsLocal))
	if got := mustCall(t, a, "alice", nekte.MethodContext, request("prefs")); !strings.Contains(got, `"data":{"v":2}`) {
		t.Fatalf("request on the replica without an address: %s", got)
	}
	// Sharing again there takes the envelope back from b, which then holds a stale copy.
	mustCall(t, a, "alice", nekte.MethodContext, shareData("prefs", `{"v":3}`, permsLocal))
	if got := mustCall(t, b, "alice", nekte.MethodContext, request("prefs")); got != `{"id":"prefs","status":"not_found"}` {
		t.Fatalf("request on b after a re-shared: %s", got)
	}
	if got := mustCall(t, a, "alice", nekte.MethodContext, request("prefs")); !strings.Contains(got, `"data":{"v":3}`) {
		t.Fatalf("request on a after it re-shared: %s", got)
	}
}

func TestUsePeersRefuses(t *testing.T) {
	c := newCluster(t)
	tests := []struct {
		name string
		p    rn.Peers
		want string
	}{
		{"no client", rn.Peers{Advertise: addrA}, "Peers.Client is required"},
		{"unspecified IPv4", rn.Peers{Advertise: "0.0.0.0:7001", Client: c.net}, "unspecified address"},
		{"unspecified IPv6", rn.Peers{Advertise: "[::]:7001", Client: c.net}, "unspecified address"},
		{"no port", rn.Peers{Advertise: "replica-a.test", Client: c.net}, "not a host:port"},
		{"no host", rn.Peers{Advertise: ":7001", Client: c.net}, "names no host"},
		{"port 0", rn.Peers{Advertise: "10.0.0.1:0", Client: c.net}, "port must be 1 to 65535"},
		{"port too high", rn.Peers{Advertise: "10.0.0.1:65536", Client: c.net}, "port must be 1 to 65535"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := c.service(fastTasks())
			if err := s.UsePeers(tt.p); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("UsePeers: %v, want %q", err, tt.want)
			}
		})
	}
	s := c.service(fastTasks())
	if err := s.UsePeers(rn.Peers{Advertise: "[fd00::1]:7001", Client: c.net}); err != nil {
		t.Fatal(err)
	}
	if err := s.UsePeers(rn.Peers{Client: c.net}); err == nil || !strings.Contains(err.Error(), "already called") {
		t.Fatalf("second UsePeers: %v", err)
	}
}

func TestPeerTimeoutConfig(t *testing.T) {
	tests := []struct {
		name string
		v    time.Duration
		want string
	}{
		{"default", 0, ""},
		{"maximum", rn.MaxPeerTimeout, ""},
		{"above the maximum", rn.MaxPeerTimeout + time.Second, "contexts.peer_timeout (31s) is above 30s"},
		{"negative", -time.Second, "contexts.peer_timeout must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := rn.Config{Contexts: rn.ContextsConfig{PeerTimeout: tt.v}}
			err := cfg.Validate()
			if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("Validate: %v, want %q", err, tt.want)
			}
		})
	}
	if d := (rn.Config{}).WithDefaults().Contexts.PeerTimeout; d != 2*time.Second {
		t.Fatalf("default peer_timeout %v", d)
	}
}
