package server

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/schemas/gen/gatehouse/v1"
	"github.com/gatehouse-dev/gatehouse/state"
)

// peerConfig is a replica: NEKTE on, the internal listener on a free loopback port, and
// a short peer timeout.
const peerConfig = `
server:
  boundary: {addr: "127.0.0.1:0"}
  admin: {addr: "127.0.0.1:0"}
  internal: {addr: "127.0.0.1:0"}
  shutdown_grace: 5s
auth:
  anonymous: {}
routing:
  demo: {}
log: {level: debug}
nekte:
  contexts: {peer_timeout: 500ms}
`

// writtenKV is a shared store that remembers every key and value written to it.
type writtenKV struct {
	state.KV
	mu     sync.Mutex
	writes map[string][]string
}

func newWrittenKV(t *testing.T) *writtenKV {
	t.Helper()
	kv := state.NewEmbedded(state.EmbeddedOptions{})
	t.Cleanup(func() { _ = kv.Close() })
	return &writtenKV{KV: kv, writes: map[string][]string{}}
}

func (w *writtenKV) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	w.mu.Lock()
	w.writes[key] = append(w.writes[key], string(value))
	w.mu.Unlock()
	return w.KV.Set(ctx, key, value, ttl)
}

// holding returns the keys whose name or any value written contains s.
func (w *writtenKV) holding(s string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var keys []string
	for k, vs := range w.writes {
		for _, v := range append(vs, k) {
			if strings.Contains(v, s) {
				keys = append(keys, k)
				break
			}
		}
	}
	return keys
}

// locator returns the one context locator written, decoded.
func (w *writtenKV) locator(t *testing.T) (key, addr string, secret []byte) {
	t.Helper()
	keys := w.holding("nekte:ctxpeer:")
	if len(keys) != 1 {
		t.Fatalf("locator keys %v, want one", keys)
	}
	raw, ok, err := w.Get(context.Background(), keys[0])
	if err != nil || !ok {
		t.Fatalf("locator %s: present %v, %v", keys[0], ok, err)
	}
	var loc struct {
		Addr   string `json:"addr"`
		Secret []byte `json:"secret"`
	}
	if err := json.Unmarshal(raw, &loc); err != nil {
		t.Fatal(err)
	}
	return keys[0], loc.Addr, loc.Secret
}

func contextCall(action, id string) string {
	env := `{"id":"` + id + `"}`
	if action == "share" {
		env = `{"id":"` + id + `","data":{"lang":"peer-marker"},"permissions":{"forward":true,"persist":false,"derive":true},"ttl_s":60}`
	}
	return `{"jsonrpc":"2.0","method":"nekte.context","params":{"action":"` + action + `","envelope":` + env + `},"id":1}`
}

func TestNektePeerAcrossGateways(t *testing.T) {
	kv := newWrittenKV(t)
	a := startOptions(t, mustParse(t, peerConfig), Options{State: kv}, nil)
	b := startOptions(t, mustParse(t, peerConfig), Options{State: kv}, nil)

	if m := result(t, a.rpc(t, contextCall("share", "prefs"))); m["status"] != "stored" {
		t.Fatalf("share: %v", m)
	}
	if keys := kv.holding("peer-marker"); len(keys) != 0 {
		t.Fatalf("the payload reached the shared store under %v", keys)
	}
	_, addr, secret := kv.locator(t)
	if addr != a.InternalAddr().String() || len(secret) != 32 {
		t.Fatalf("locator names %q (want %s) with a %d-byte secret", addr, a.InternalAddr(), len(secret))
	}
	m := result(t, b.rpc(t, contextCall("request", "prefs")))
	if data, _ := json.Marshal(m["data"]); string(data) != `{"lang":"peer-marker"}` || m["ttl_s"].(float64) < 1 || m["ttl_s"].(float64) > 60 {
		t.Fatalf("request on the other gateway: %v", m)
	}

	// Real gRPC: the owner checks the secret.
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	peer := gatehousev1.NewPeerServiceClient(conn)
	owner := kvOwner(t, kv)
	wrong := make([]byte, 32)
	_, _ = rand.Read(wrong)
	tests := []struct {
		name   string
		ref    *gatehousev1.EnvelopeRef
		code   codes.Code
		answer string
	}{
		{"right secret", ctxRef(owner, "prefs", secret), codes.OK, `"data":{"lang":"peer-marker"}`},
		{"wrong secret", ctxRef(owner, "prefs", wrong), codes.NotFound, ""},
		{"other id", ctxRef(owner, "other", secret), codes.NotFound, ""},
		{"short secret", ctxRef(owner, "prefs", secret[:16]), codes.InvalidArgument, ""},
		{"no target", &gatehousev1.EnvelopeRef{Owner: owner, Secret: secret}, codes.InvalidArgument, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			res, err := peer.GetEnvelope(ctx, &gatehousev1.GetEnvelopeRequest{Ref: tt.ref})
			if status.Code(err) != tt.code {
				t.Fatalf("GetEnvelope: %v, want %v", err, tt.code)
			}
			if tt.code == codes.OK && !strings.Contains(string(res.GetEnvelope()), tt.answer) {
				t.Fatalf("GetEnvelope answered %s", res.GetEnvelope())
			}
			if tt.code != codes.OK {
				if _, err := peer.RevokeEnvelope(ctx, &gatehousev1.RevokeEnvelopeRequest{Ref: tt.ref}); status.Code(err) != tt.code {
					t.Fatalf("RevokeEnvelope: %v, want %v", err, tt.code)
				}
			}
		})
	}

	// A revoke on b reaches the owner.
	if m := result(t, b.rpc(t, contextCall("revoke", "prefs"))); m["status"] != "revoked" {
		t.Fatalf("revoke on the other gateway: %v", m)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := peer.GetEnvelope(ctx, &gatehousev1.GetEnvelopeRequest{Ref: ctxRef(owner, "prefs", secret)}); status.Code(err) != codes.NotFound {
		t.Fatalf("the owner still serves the revoked envelope: %v", err)
	}
	for name, ts := range map[string]*testServer{"owner": a, "other": b} {
		if m := result(t, ts.rpc(t, contextCall("request", "prefs"))); m["status"] != "not_found" {
			t.Fatalf("request on the %s gateway after revoke: %v", name, m)
		}
	}
}

func TestNektePeerOwnerStopped(t *testing.T) {
	kv := newWrittenKV(t)
	a := startOptions(t, mustParse(t, peerConfig), Options{State: kv}, nil)
	b := startOptions(t, mustParse(t, peerConfig), Options{State: kv, Targets: holdTargets()}, nil)
	result(t, a.rpc(t, contextCall("share", "prefs")))
	result(t, b.rpc(t, contextCall("request", "prefs"))) // b now has a connection to a
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if m := result(t, b.rpc(t, contextCall("request", "prefs"))); m["status"] != "not_found" {
		t.Fatalf("request with the owner stopped: %v", m)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the request took %v with a 500ms peer timeout", d)
	}
	r := b.rpc(t, `{"jsonrpc":"2.0","method":"nekte.delegate","params":{"task":{"id":"t-1","desc":"","timeout_ms":0,"cap":"hold"},"context":{"id":"prefs"}},"id":2}`)
	if r.Error == nil || r.Error.Code != -32004 || !strings.Contains(r.Error.Message, "Context not available: prefs") {
		t.Fatalf("delegate with the owner stopped: %s %+v", r.Result, r.Error)
	}
	if m := result(t, b.rpc(t, contextCall("revoke", "prefs"))); m["status"] != "revoked" {
		t.Fatalf("revoke with the owner stopped: %v", m)
	}
	if keys := kv.holding("nekte:ctxpeer:"); len(keys) != 1 {
		t.Fatalf("locator keys %v", keys)
	} else if _, ok, _ := kv.Get(context.Background(), keys[0]); ok {
		t.Fatal("the locator outlived the revoke")
	}
	if !strings.Contains(b.logs.String(), "did not answer") {
		t.Fatalf("no warning about the unreachable replica:\n%s", b.logs.String())
	}
}

// TestNektePeerOffWithoutSharedState: with the embedded store the server opened itself
// there are no other replicas; nothing changes (no locator, no PeerService).
func TestNektePeerOffWithoutSharedState(t *testing.T) {
	ts := start(t, peerConfig, nil)
	result(t, ts.rpc(t, contextCall("share", "prefs")))
	if m := result(t, ts.rpc(t, contextCall("request", "prefs"))); m["status"] == "not_found" {
		t.Fatalf("request: %v", m)
	}
	conn, err := grpc.NewClient(ts.InternalAddr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = gatehousev1.NewPeerServiceClient(conn).GetEnvelope(ctx, &gatehousev1.GetEnvelopeRequest{Ref: ctxRef("x", "prefs", make([]byte, 32))})
	if status.Code(err) != codes.Unimplemented {
		t.Fatalf("PeerService without a shared store: %v", err)
	}
}

func TestNektePeerAdvertiseConfig(t *testing.T) {
	tests := []struct {
		advertise, want string
	}{
		{"gw-1.internal:50051", ""},
		{"10.0.0.7:50051", ""},
		{"[fd00::7]:50051", ""},
		{"0.0.0.0:50051", "unspecified address"},
		{"[::]:50051", "unspecified address"},
		{"gw-1.internal", "not a host:port"},
		{":50051", "names no host"},
		{"gw-1.internal:0", "port must be 1 to 65535"},
	}
	for _, tt := range tests {
		t.Run(tt.advertise, func(t *testing.T) {
			yaml := strings.Replace(peerConfig, `internal: {addr: "127.0.0.1:0"}`, `internal: {addr: "127.0.0.1:0", advertise: "`+tt.advertise+`"}`, 1)
			cfg, err := Parse("t.yaml", []byte(yaml))
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), "server.internal.advertise") || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("error %v, want %q at server.internal.advertise", err, tt.want)
			case tt.want == "" && cfg.Server.Internal.Advertise != tt.advertise:
				t.Fatalf("advertise %q", cfg.Server.Internal.Advertise)
			}
		})
	}
}

// TestNektePeerAdvertised: an explicit server.internal.advertise is what the locator
// names (faces/grpc tests the fallback to the bound address).
func TestNektePeerAdvertised(t *testing.T) {
	kv := newWrittenKV(t)
	cfg := mustParse(t, strings.Replace(peerConfig, `internal: {addr: "127.0.0.1:0"}`, `internal: {addr: "127.0.0.1:0", advertise: "gw-1.internal:50051"}`, 1))
	a := startOptions(t, cfg, Options{State: kv}, nil)
	result(t, a.rpc(t, contextCall("share", "prefs")))
	if _, addr, _ := kv.locator(t); addr != "gw-1.internal:50051" {
		t.Fatalf("locator names %q", addr)
	}
}

func ctxRef(owner, id string, secret []byte) *gatehousev1.EnvelopeRef {
	return &gatehousev1.EnvelopeRef{Owner: owner, Target: &gatehousev1.EnvelopeRef_ContextId{ContextId: id}, Secret: secret}
}

// kvOwner returns the owner of the one context locator written (its key holds the owner
// base64url-encoded).
func kvOwner(t *testing.T, kv *writtenKV) string {
	t.Helper()
	key, _, _ := kv.locator(t)
	enc, _, _ := strings.Cut(strings.TrimPrefix(key, "nekte:ctxpeer:"), ":")
	b, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
