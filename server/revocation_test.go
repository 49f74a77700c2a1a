package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/auth"
	"github.com/gatehouse-dev/gatehouse/auth/approval"
	"github.com/gatehouse-dev/gatehouse/state"
)

// Keys of the revocation tests' API key holders: the operator, and a machine client.
const (
	opsKey   = "ops-key-0123456789abcdef0123456789"
	batchKey = "batch-key-0123456789abcdef012345678"
)

const subtract = `{"jsonrpc":"2.0","id":1,"method":"subtract","params":[42,23]}`

// revocationYAML accepts tokens of the development issuer, the operator's API key (scope
// admin.revocations) and a batch client's; %s is appended to auth.revocation.
func revocationYAML(t *testing.T, revocation string) string {
	t.Helper()
	jwks, err := filepath.Abs("../configs/examples/dev-jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf(`
server:
  boundary: {addr: "127.0.0.1:0"}
  admin: {addr: "127.0.0.1:0"}
  shutdown_grace: 5s
auth:
  jwt:
    issuers:
      - {issuer: gatehouse-dev, audiences: [gatehouse], jwks_file: %s}
  api_keys:
    - {name: ops, hash: "%s", scopes: [admin.revocations]}
    - {name: batch, hash: "%s", scopes: [read]}
  revocation: {refresh: 200ms%s}
routing:
  demo: {}
log: {level: debug}
`, jwks, apiKeyHash(opsKey), apiKeyHash(batchKey), revocation)
}

// startRevocations starts a server of revocationYAML, sharing kv when it is not nil.
func startRevocations(t *testing.T, revocation string, kv state.KV) *testServer {
	t.Helper()
	cfg, err := Parse("test.yaml", []byte(revocationYAML(t, revocation)))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return startOptions(t, cfg, Options{State: kv}, nil)
}

// jtiToken mints a development token of sub with jti and scopes, valid for an hour.
func jtiToken(t *testing.T, sub, jti string, scopes ...string) (tok string, exp int64) {
	t.Helper()
	now := time.Now()
	exp = now.Add(time.Hour).Unix()
	return signDev(t, map[string]any{"iss": "gatehouse-dev", "sub": sub, "aud": "gatehouse", "jti": jti,
		"scope": strings.Join(scopes, " "), "iat": now.Unix(), "exp": exp}), exp
}

// callAs calls subtract on the boundary with a credential header and returns the HTTP
// status and the decoded response.
func (ts *testServer) callAs(header, value string) (int, response) {
	ts.t.Helper()
	code, _, body := ts.post(subtract, header, value)
	return code, decodeOne(ts.t, body)
}

// adminAs calls an admin method with a credential header.
func (ts *testServer) adminAs(header, value, method, params string) response {
	ts.t.Helper()
	req, err := http.NewRequest(http.MethodPost, ts.admin+"/rpc",
		strings.NewReader(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":%s}`, method, params)))
	if err != nil {
		ts.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(header, value)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		ts.t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var r response
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		ts.t.Fatalf("admin %s: HTTP %d: %v", method, resp.StatusCode, err)
	}
	return r
}

// ops calls an admin method as the operator and fails the test on an error.
func (ts *testServer) ops(method, params string) json.RawMessage {
	ts.t.Helper()
	r := ts.adminAs("X-API-Key", opsKey, method, params)
	if r.Error != nil {
		ts.t.Fatalf("%s %s: %+v", method, params, r.Error)
	}
	return r.Result
}

// wantRevoked checks that a call with the credential is refused as revoked (want) or runs.
func wantRevoked(t *testing.T, ts *testServer, header, value string, want bool) {
	t.Helper()
	code, r := ts.callAs(header, value)
	switch {
	case want && (code != http.StatusUnauthorized || r.Error == nil || r.Error.Code != 4001 || r.Error.Data["reason"] != "revoked"):
		t.Fatalf("want 401 / 4001 revoked, got HTTP %d %+v", code, r.Error)
	case !want && (code != http.StatusOK || string(r.Result) != "19"):
		t.Fatalf("want the call to run, got HTTP %d %+v", code, r.Error)
	}
}

func TestRevokeByJTI(t *testing.T) {
	ts := startRevocations(t, "", nil)
	tok, exp := jtiToken(t, "alice", "t-1")
	other, _ := jtiToken(t, "alice", "t-2")
	bearer, otherBearer := "Bearer "+tok, "Bearer "+other

	wantRevoked(t, ts, "Authorization", bearer, false)
	var rec auth.Revocation
	res := ts.ops(auth.MethodRevocationsAdd, fmt.Sprintf(`{"jti":"t-1","expires_at":%d,"reason":"laptop stolen"}`, exp))
	if err := json.Unmarshal(res, &rec); err != nil {
		t.Fatal(err)
	}
	if rec.JTI != "t-1" || rec.RevokedBy != "ops" || rec.Reason != "laptop stolen" || rec.ExpiresAt.Unix() != exp {
		t.Fatalf("add: %s", res)
	}
	wantRevoked(t, ts, "Authorization", bearer, true)       // at once, on this replica
	wantRevoked(t, ts, "Authorization", otherBearer, false) // another token of alice

	var list auth.RevocationList
	if err := json.Unmarshal(ts.ops(auth.MethodRevocationsList, `{}`), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Revocations) != 1 || list.Revocations[0].JTI != "t-1" || list.MaxEntries != auth.DefaultRevocationMaxEntries {
		t.Fatalf("list: %+v", list)
	}
	logs := ts.logs.String()
	if !strings.Contains(logs, "msg=revoked") || !strings.Contains(logs, "jti=t-1") || !strings.Contains(logs, "by=ops") {
		t.Errorf("no audit line:\n%s", logs)
	}
	if strings.Contains(logs, tok) || strings.Contains(logs, strings.Split(tok, ".")[2]) {
		t.Error("the token is in the logs")
	}

	ts.ops(auth.MethodRevocationsRemove, `{"jti":"t-1"}`)
	wantRevoked(t, ts, "Authorization", bearer, false)
	if !strings.Contains(ts.logs.String(), "msg=\"revocation removed\"") {
		t.Errorf("no audit line for the removal:\n%s", ts.logs.String())
	}
}

func TestRevokeBySubject(t *testing.T) {
	ts := startRevocations(t, "", nil)
	t1, _ := jtiToken(t, "alice", "t-1")
	t2, _ := jtiToken(t, "alice", "t-2")
	bob, _ := jtiToken(t, "bob", "t-3")

	ts.ops(auth.MethodRevocationsAdd, `{"sub":"alice","ttl":"1h","reason":"left the company"}`)
	ts.ops(auth.MethodRevocationsAdd, `{"sub":"batch"}`) // an API key, by its name; default ttl
	wantRevoked(t, ts, "Authorization", "Bearer "+t1, true)
	wantRevoked(t, ts, "Authorization", "Bearer "+t2, true)
	wantRevoked(t, ts, "Authorization", "Bearer "+bob, false)
	wantRevoked(t, ts, "X-API-Key", batchKey, true)

	var list auth.RevocationList
	if err := json.Unmarshal(ts.ops(auth.MethodRevocationsList, `{}`), &list); err != nil {
		t.Fatal(err)
	}
	bySub := map[string]auth.Revocation{}
	for _, r := range list.Revocations {
		bySub[r.Subject] = r
	}
	if len(list.Revocations) != 2 || bySub["alice"].Reason != "left the company" || bySub["batch"].RevokedBy != "ops" {
		t.Fatalf("list: %+v", list.Revocations)
	}
	if d := time.Until(bySub["batch"].ExpiresAt); d < 23*time.Hour || d > 24*time.Hour {
		t.Errorf("default ttl: expires in %s", d)
	}
}

func TestRevocationAdminErrors(t *testing.T) {
	ts := startRevocations(t, ", max_entries: 1, max_ttl: 2h", nil)
	ts.ops(auth.MethodRevocationsAdd, `{"jti":"t-1","ttl":"1h"}`)
	alice, _ := jtiToken(t, "alice", "t-9", "read")
	tests := []struct {
		name     string
		header   string // the caller: the operator unless set
		method   string
		params   string
		wantCode int
		wantData map[string]any
	}{
		{"jti and sub", "", auth.MethodRevocationsAdd, `{"jti":"a","sub":"b"}`, -32602, map[string]any{"param": "jti"}},
		{"neither", "", auth.MethodRevocationsAdd, `{"ttl":"1h"}`, -32602, map[string]any{"param": "jti"}},
		{"empty jti", "", auth.MethodRevocationsAdd, `{"jti":""}`, -32602, map[string]any{"param": "jti"}},
		{"sub not a string", "", auth.MethodRevocationsAdd, `{"sub":7}`, -32602, map[string]any{"param": "sub"}},
		{"ttl not a duration", "", auth.MethodRevocationsAdd, `{"sub":"a","ttl":"soon"}`, -32602, map[string]any{"param": "ttl"}},
		{"ttl a number", "", auth.MethodRevocationsAdd, `{"sub":"a","ttl":3600}`, -32602, map[string]any{"param": "ttl"}},
		{"ttl zero", "", auth.MethodRevocationsAdd, `{"sub":"a","ttl":"0s"}`, -32602, map[string]any{"param": "ttl"}},
		{"ttl over max_ttl", "", auth.MethodRevocationsAdd, `{"sub":"a","ttl":"3h"}`, -32602, map[string]any{"param": "ttl"}},
		{"expires_at and ttl", "", auth.MethodRevocationsAdd, `{"sub":"a","ttl":"1h","expires_at":"2999-01-01T00:00:00Z"}`, -32602, map[string]any{"param": "ttl"}},
		{"expires_at not a time", "", auth.MethodRevocationsAdd, `{"jti":"a","expires_at":"tomorrow"}`, -32602, map[string]any{"param": "expires_at"}},
		{"expires_at in the past", "", auth.MethodRevocationsAdd, `{"jti":"a","expires_at":1000000000}`, -32602, map[string]any{"param": "expires_at"}},
		{"expires_at past max_ttl", "", auth.MethodRevocationsAdd, `{"jti":"a","expires_at":"2999-01-01T00:00:00Z"}`, -32602, map[string]any{"param": "expires_at"}},
		{"reason not a string", "", auth.MethodRevocationsAdd, `{"jti":"a","reason":["x"]}`, -32602, map[string]any{"param": "reason"}},
		{"unknown member", "", auth.MethodRevocationsAdd, `{"jti":"a","JTI":"b"}`, -32602, map[string]any{"problem": "unknown member"}},
		{"full", "", auth.MethodRevocationsAdd, `{"jti":"t-2"}`, 5002, map[string]any{"reason": "revocations_full", "max_entries": float64(1)}},
		{"list with params", "", auth.MethodRevocationsList, `{"all":true}`, -32602, map[string]any{"problem": "unknown member"}},
		{"remove what is not revoked", "", auth.MethodRevocationsRemove, `{"sub":"nobody"}`, -32602, map[string]any{"reason": "not_revoked"}},
		{"remove with a ttl", "", auth.MethodRevocationsRemove, `{"jti":"t-1","ttl":"1h"}`, -32602, map[string]any{"problem": "unknown member"}},
		{"unknown method", "", "admin.revocations.purge", `{}`, -32601, nil},
		{"without the admin scope", "Bearer " + alice, auth.MethodRevocationsList, `{}`, 4002,
			map[string]any{"missing_scopes": []any{"admin.revocations"}}},
		{"the approvals scope is another", "Bearer " + alice, approval.MethodList, `{}`, 4002,
			map[string]any{"missing_scopes": []any{"admin.approvals"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r response
			if tt.header == "" {
				r = ts.adminAs("X-API-Key", opsKey, tt.method, tt.params)
			} else {
				r = ts.adminAs("Authorization", tt.header, tt.method, tt.params)
			}
			if r.Error == nil || r.Error.Code != tt.wantCode {
				t.Fatalf("got %s / %+v, want code %d", r.Result, r.Error, tt.wantCode)
			}
			for k, v := range tt.wantData {
				if fmt.Sprint(r.Error.Data[k]) != fmt.Sprint(v) {
					t.Errorf("data.%s = %v, want %v", k, r.Error.Data[k], v)
				}
			}
		})
	}
	// The operator's own scope does not reach the approvals.
	if r := ts.adminAs("X-API-Key", opsKey, approval.MethodList, `{}`); r.Error == nil || r.Error.Code != 4002 {
		t.Fatalf("approvals with the revocations scope: %+v", r.Error)
	}
}

// TestRevocationAcrossReplicas: two servers sharing one state store. A revocation made on
// a is honoured by a at once and by b within auth.revocation.refresh; so is its removal.
func TestRevocationAcrossReplicas(t *testing.T) {
	kv := state.NewEmbedded(state.EmbeddedOptions{})
	t.Cleanup(func() { _ = kv.Close() })
	const refresh = 200 * time.Millisecond
	a := startRevocations(t, "", kv)
	b := startRevocations(t, "", kv)
	tok, _ := jtiToken(t, "alice", "t-1")
	bearer := "Bearer " + tok
	wantRevoked(t, b, "Authorization", bearer, false)

	// within is how long b took to honour a's change; it must be about one refresh.
	within := func(revoked bool) time.Duration {
		t.Helper()
		start := time.Now()
		for {
			code, r := b.callAs("Authorization", bearer)
			if got := code == http.StatusUnauthorized && r.Error != nil && r.Error.Data["reason"] == "revoked"; got == revoked {
				return time.Since(start)
			}
			if time.Since(start) > 5*refresh {
				t.Fatalf("b did not follow a within %s", 5*refresh)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	a.ops(auth.MethodRevocationsAdd, `{"jti":"t-1","ttl":"1h"}`)
	wantRevoked(t, a, "Authorization", bearer, true)
	t.Logf("b honoured the revocation after %s", within(true))
	b.ops(auth.MethodRevocationsRemove, `{"jti":"t-1"}`)
	wantRevoked(t, b, "Authorization", bearer, false)
	start := time.Now()
	for {
		code, _ := a.callAs("Authorization", bearer)
		if code == http.StatusOK {
			break
		}
		if time.Since(start) > 5*refresh {
			t.Fatal("a did not follow b's removal")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRevocationReload: a reload applies new revocation settings to the list, which keeps
// its entries.
func TestRevocationReload(t *testing.T) {
	ts := startRevocations(t, "", nil)
	tok, _ := jtiToken(t, "alice", "t-1")
	ts.ops(auth.MethodRevocationsAdd, `{"jti":"t-1"}`)
	cfg, err := Parse("test.yaml", []byte(strings.Replace(revocationYAML(t, ", admin_scope: ops.revoke"),
		"scopes: [admin.revocations]", "scopes: [ops.revoke]", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	wantRevoked(t, ts, "Authorization", "Bearer "+tok, true)
	if got := ts.Revocations().Config().AdminScope; got != "ops.revoke" {
		t.Fatalf("admin scope after reload: %q", got)
	}
	ts.ops(auth.MethodRevocationsRemove, `{"jti":"t-1"}`)
	wantRevoked(t, ts, "Authorization", "Bearer "+tok, false)
}
