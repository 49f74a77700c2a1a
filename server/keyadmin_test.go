package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/auth"
	"github.com/gatehouse-dev/gatehouse/state"
)

// keyAdminConfig is baseConfig with a ring (%s: its extra keys) and the operator's API key
// holding admin.keys.
func keyAdminConfig(ring string) string {
	return strings.Replace(baseConfig, "  anonymous: {}\n", fmt.Sprintf(
		"  anonymous: {}\n  api_keys:\n    - {name: ops, hash: %q, scopes: [admin.keys]}\n  keyring: {max_token_ttl: 5m%s}\n",
		apiKeyHash(opsKey), ring), 1)
}

// kidOf returns the kid of a JWS's header.
func kidOf(t *testing.T, token string) string {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(strings.SplitN(token, ".", 2)[0])
	if err != nil {
		t.Fatal(err)
	}
	var h struct {
		Kid string `json:"kid"`
	}
	if err := json.Unmarshal(raw, &h); err != nil {
		t.Fatal(err)
	}
	return h.Kid
}

// mint mints a one-minute token for calc with ts's ring.
func mint(t *testing.T, ts *testServer) string {
	t.Helper()
	m, err := ts.KeyRing().Mint(context.Background(), auth.MintRequest{Subject: "alice", Audience: []string{"calc"}, TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return m.Token
}

// verifies reports whether ts's ring verifies token.
func verifies(ts *testServer, token string) bool {
	_, err := ts.KeyRing().Verifier("calc").Verify(context.Background(), token)
	return err == nil
}

// keyList lists the keys as ops.
func (ts *testServer) keyList() auth.KeyList {
	ts.t.Helper()
	raw := ts.ops(auth.MethodKeysList, `{}`)
	if strings.Contains(string(raw), `"d"`) || strings.Contains(strings.ToLower(string(raw)), "pkcs8") {
		ts.t.Fatalf("the key list shows private material: %s", raw)
	}
	var l auth.KeyList
	if err := json.Unmarshal(raw, &l); err != nil {
		ts.t.Fatal(err)
	}
	return l
}

// stateOf returns the state of kid in l, "" when it is not listed.
func stateOf(l auth.KeyList, kid string) string {
	for _, k := range l.Keys {
		if k.KID == kid {
			return k.State
		}
	}
	return ""
}

// signingKid returns the kid ts's ring lists as signing.
func signingKid(ts *testServer) string {
	for _, k := range ts.KeyRing().Keys() {
		if k.State == auth.KeySigning {
			return k.KID
		}
	}
	return ""
}

// TestKeyRotateEmergency: two replicas share an embedded store (which is also a bus). An
// emergency rotation on one makes the next token of both carry the new kid; tokens of the
// old key verify until its overlap ends; with revoke they are refused at once, on both.
func TestKeyRotateEmergency(t *testing.T) {
	kv := state.NewEmbedded(state.EmbeddedOptions{})
	t.Cleanup(func() { _ = kv.Close() })
	clock := &testClock{}
	a := startOptions(t, mustParse(t, keyAdminConfig("")), Options{State: kv, Now: clock.Now}, nil)
	b := startOptions(t, mustParse(t, keyAdminConfig("")), Options{State: kv, Now: clock.Now}, nil)

	old := mint(t, a)
	k1 := kidOf(t, old)
	if l := a.keyList(); len(l.Keys) != 1 || l.Keys[0].State != auth.KeySigning || l.Keys[0].Algorithm != "EdDSA" ||
		l.Keys[0].KID != k1 || l.Issuer != "gatehouse" || l.Keys[0].Created.IsZero() {
		t.Fatalf("key list before the rotation %+v", l)
	}
	var rot auth.KeyRotation
	if err := json.Unmarshal(a.ops(auth.MethodKeysRotate, `{"reason":"laptop lost"}`), &rot); err != nil {
		t.Fatal(err)
	}
	if rot.KID == "" || rot.KID == k1 || len(rot.Withdrawn) != 0 {
		t.Fatalf("rotation %+v", rot)
	}
	if k := kidOf(t, mint(t, a)); k != rot.KID {
		t.Errorf("token after the rotation signed by %s, want %s", k, rot.KID)
	}
	waitFor(t, func() bool { return signingKid(b) == rot.KID }) // the bus, not the 30s sync
	if k := kidOf(t, mint(t, b)); k != rot.KID {
		t.Errorf("the other replica signs with %s, want %s", k, rot.KID)
	}
	l := a.keyList()
	if stateOf(l, k1) != auth.KeyPublished || stateOf(l, rot.KID) != auth.KeySigning {
		t.Fatalf("key list after the rotation %+v", l)
	}
	if want := l.Keys[1].Activates.Add(6 * time.Minute); !l.Keys[0].Retires.Equal(want) {
		t.Errorf("the old key retires at %v, want %v (overlap after the new key's activation)", l.Keys[0].Retires, want)
	}
	for i, ts := range []*testServer{a, b} {
		if !verifies(ts, old) {
			t.Errorf("replica %d: a token of the old key no longer verifies within its overlap", i)
		}
	}
	clock.Advance(6*time.Minute + time.Second)
	if s := stateOf(a.keyList(), k1); s != auth.KeyRetired && s != "" {
		t.Errorf("the old key is %q after its overlap", s)
	}
	if kids, _ := servedKids(t, a); strings.Contains(strings.Join(kids, ","), k1) {
		t.Errorf("the old key is still published after its overlap: %v", kids)
	}

	// Emergency rotation with revoke: tokens of the replaced key fail at once, everywhere.
	current := mint(t, a)
	if !verifies(a, current) || !verifies(b, current) {
		t.Fatal("a fresh token does not verify")
	}
	if err := json.Unmarshal(b.ops(auth.MethodKeysRotate, `{"revoke":true}`), &rot); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(rot.Withdrawn, ","), kidOf(t, current)) || len(rot.Keys) != 1 {
		t.Fatalf("revoking rotation %+v", rot)
	}
	if verifies(b, current) {
		t.Error("a token of the revoked key still verifies on the rotating replica")
	}
	waitFor(t, func() bool { return !verifies(a, current) })
	if k := kidOf(t, mint(t, a)); k != rot.KID {
		t.Errorf("after the revoking rotation the other replica signs with %s, want %s", k, rot.KID)
	}
	if !strings.Contains(b.logs.String(), "signing key rotated") {
		t.Error("the rotation was not logged")
	}
}

func TestKeyAdminRefusals(t *testing.T) {
	dir := t.TempDir()
	pem := filepath.Join(dir, "k.pem")
	writeRingKey(t, pem)
	gen := start(t, keyAdminConfig(", admin_scope: keys.ops"), nil)
	files := start(t, keyAdminConfig(fmt.Sprintf(", key_files: [%s]", pem)), nil)
	none := start(t, strings.Replace(baseConfig, "  anonymous: {}\n",
		fmt.Sprintf("  anonymous: {}\n  api_keys:\n    - {name: ops, hash: %q, scopes: [admin.keys]}\n", apiKeyHash(opsKey)), 1), nil)
	tests := []struct {
		name     string
		ts       *testServer
		method   string
		params   string
		key      string
		wantCode int
		wantData map[string]any
	}{
		{"anonymous: no scope", files, auth.MethodKeysList, `{}`, "", 4002, nil},
		{"configured scope not held", gen, auth.MethodKeysRotate, `{}`, opsKey, 4002, nil},
		{"key files do not rotate", files, auth.MethodKeysRotate, `{}`, opsKey, -32602, map[string]any{"reason": "key_files"}},
		{"bad revoke", files, auth.MethodKeysRotate, `{"revoke":"yes"}`, opsKey, -32602, map[string]any{"param": "revoke"}},
		{"unknown member", files, auth.MethodKeysList, `{"all":true}`, opsKey, -32602, map[string]any{"problem": "unknown member"}},
		{"no ring", none, auth.MethodKeysList, `{}`, opsKey, -32602, map[string]any{"reason": "no_keyring"}},
		{"unknown keys method", files, "admin.keys.purge", `{}`, opsKey, -32601, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r response
			if tt.key == "" {
				_, body := tt.ts.adminRPC(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":%s}`, tt.method, tt.params))
				r = decodeOne(t, body)
			} else {
				r = tt.ts.adminAs("X-API-Key", tt.key, tt.method, tt.params)
			}
			wantCode(t, r, tt.wantCode, tt.wantData)
		})
	}
	// A ring of key files lists its key, signing.
	if l := files.keyList(); len(l.Keys) != 1 || l.Keys[0].State != auth.KeySigning {
		t.Errorf("key files list %+v", l)
	}
	if r := gen.adminAs("X-API-Key", opsKey, auth.MethodKeysList, `{}`); r.Error == nil ||
		fmt.Sprint(r.Error.Data["missing_scopes"]) != "[keys.ops]" {
		t.Errorf("missing_scopes of a configured scope: %+v", r.Error)
	}
}
