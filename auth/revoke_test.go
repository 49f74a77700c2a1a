package auth_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gatehouse-dev/gatehouse/auth"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
	"github.com/gatehouse-dev/gatehouse/state"
)

// movingClock is the fixed test time moved forward by what the test advances.
type movingClock struct{ off atomic.Int64 }

func (c *movingClock) Now() time.Time          { return now.Add(time.Duration(c.off.Load())) }
func (c *movingClock) Advance(d time.Duration) { c.off.Add(int64(d)) }

// openRevocations opens a revocation list over kv (a fresh store when nil), closed at cleanup.
func openRevocations(t *testing.T, kv state.KV, cfg *auth.RevocationConfig, now func() time.Time, logs *logBuffer) *auth.Revocations {
	t.Helper()
	if kv == nil {
		kv = state.NewEmbedded(state.EmbeddedOptions{Now: now})
		t.Cleanup(func() { _ = kv.Close() })
	}
	opts := auth.RevocationOptions{Now: now}
	if logs != nil {
		opts.Logger = logs.logger()
	}
	r, err := auth.OpenRevocations(context.Background(), kv, cfg, opts)
	if err != nil {
		t.Fatalf("OpenRevocations: %v", err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// holder is the principal of a token of sub with jti, or of an API key named sub (no jti).
func holder(sub, jti string) gateway.Principal {
	if jti == "" {
		return gateway.Principal{Subject: sub, Tier: auth.DefaultTier}
	}
	return gateway.Principal{Subject: sub, Tier: auth.DefaultTier, Claims: map[string]any{"sub": sub, "jti": jti}}
}

func TestRevocationConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		cfg     auth.RevocationConfig
		wantErr string
	}{
		{"defaults", auth.RevocationConfig{}, ""},
		{"everything set", auth.RevocationConfig{Refresh: 30 * time.Second, MaxEntries: auth.MaxRevocationEntries,
			DefaultTTL: time.Hour, MaxTTL: auth.MaxRevocationTTL, AdminScope: "ops"}, ""},
		{"shortest refresh", auth.RevocationConfig{Refresh: auth.MinRevocationRefresh}, ""},
		{"refresh over 30s", auth.RevocationConfig{Refresh: 31 * time.Second}, "refresh: 31s is outside"},
		{"refresh too short", auth.RevocationConfig{Refresh: 99 * time.Millisecond}, "refresh: 99ms is outside"},
		{"negative refresh", auth.RevocationConfig{Refresh: -time.Second}, "refresh: -1s is negative"},
		{"negative max_entries", auth.RevocationConfig{MaxEntries: -1}, "max_entries: -1 is negative"},
		{"max_entries over the limit", auth.RevocationConfig{MaxEntries: auth.MaxRevocationEntries + 1}, "max_entries: 15001 is more than 15000"},
		{"one entry", auth.RevocationConfig{MaxEntries: 1}, ""},
		{"negative default_ttl", auth.RevocationConfig{DefaultTTL: -time.Hour}, "default_ttl: -1h0m0s is negative"},
		{"default_ttl over max_ttl", auth.RevocationConfig{DefaultTTL: 2 * time.Hour, MaxTTL: time.Hour}, "default_ttl: 2h0m0s is longer than max_ttl"},
		{"max_ttl alone below the default default_ttl", auth.RevocationConfig{MaxTTL: time.Hour}, ""},
		{"default_ttl alone above the default max_ttl", auth.RevocationConfig{DefaultTTL: 1000 * time.Hour}, ""},
		{"max_ttl over a year", auth.RevocationConfig{MaxTTL: auth.MaxRevocationTTL + time.Hour}, "max_ttl: 8761h0m0s is more than"},
		{"admin_scope with a space", auth.RevocationConfig{AdminScope: "admin revocations"}, "admin_scope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.wantErr == "" && err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("Validate: %v, want %q", err, tt.wantErr)
			}
			// auth.Config.Validate reports the same, under revocation:.
			cerr := auth.Config{Revocation: &tt.cfg}.Validate()
			if (cerr != nil) != (err != nil) || (cerr != nil && !strings.Contains(cerr.Error(), "revocation: ")) {
				t.Fatalf("Config.Validate: %v", cerr)
			}
		})
	}
}

func TestRevocationDefaults(t *testing.T) {
	r := openRevocations(t, nil, nil, clock, nil)
	want := auth.RevocationConfig{Refresh: 10 * time.Second, MaxEntries: 10000, DefaultTTL: 24 * time.Hour,
		MaxTTL: 720 * time.Hour, AdminScope: "admin.revocations"}
	if got := r.Config(); got != want {
		t.Fatalf("defaults %+v, want %+v", got, want)
	}
	r.Configure(&auth.RevocationConfig{MaxTTL: time.Hour})
	if got := r.Config(); got.MaxTTL != time.Hour || got.DefaultTTL != time.Hour {
		t.Fatalf("after Configure: %+v", got)
	}
	kv := state.NewEmbedded(state.EmbeddedOptions{})
	defer func() { _ = kv.Close() }()
	if _, err := auth.OpenRevocations(context.Background(), kv, &auth.RevocationConfig{Refresh: time.Minute}, auth.RevocationOptions{}); err == nil {
		t.Fatal("an invalid configuration opened")
	}
	// A list that cannot be read does not open: the gateway would not know what is revoked.
	_ = kv.Close()
	if _, err := auth.OpenRevocations(context.Background(), kv, nil, auth.RevocationOptions{}); !errors.Is(err, state.ErrClosed) {
		t.Fatalf("over a closed store: %v", err)
	}
}

func TestRevoke(t *testing.T) {
	at := func(d time.Duration) time.Time { return now.Add(d) }
	type check struct {
		p    gateway.Principal
		want bool
	}
	tests := []struct {
		name    string
		req     auth.RevokeRequest
		wantErr string // a RevocationParamError's param, or an error text
		expires time.Time
		checks  []check
	}{
		{"jti until the token's exp", auth.RevokeRequest{JTI: "t-1", ExpiresAt: at(time.Hour)}, "", at(time.Hour),
			[]check{{holder("alice", "t-1"), true}, {holder("alice", "t-2"), false}, {holder("alice", ""), false}, {holder("bob", "t-1"), true}}},
		{"jti with the default ttl", auth.RevokeRequest{JTI: "t-1"}, "", at(24 * time.Hour), []check{{holder("alice", "t-1"), true}}},
		{"jti with a ttl", auth.RevokeRequest{JTI: "t-1", TTL: time.Minute}, "", at(time.Minute), nil},
		{"fractional expiry rounds up to the millisecond", auth.RevokeRequest{JTI: "t-1", ExpiresAt: at(1500 * time.Microsecond)}, "", at(2 * time.Millisecond), nil},
		{"sub: every token and the API key of that name", auth.RevokeRequest{Subject: "alice", TTL: time.Hour}, "", at(time.Hour),
			[]check{{holder("alice", "t-1"), true}, {holder("alice", "t-9"), true}, {holder("alice", ""), true}, {holder("bob", ""), false}, {holder("Alice", ""), false}}},
		{"sub with the default ttl", auth.RevokeRequest{Subject: "alice"}, "", at(24 * time.Hour), nil},
		{"sub ttl at max_ttl", auth.RevokeRequest{Subject: "alice", TTL: 720 * time.Hour}, "", at(720 * time.Hour), nil},
		{"sub ttl over max_ttl", auth.RevokeRequest{Subject: "alice", TTL: 721 * time.Hour}, "ttl", time.Time{}, nil},
		{"jti exp over max_ttl", auth.RevokeRequest{JTI: "t-1", ExpiresAt: at(721 * time.Hour)}, "expires_at", time.Time{}, nil},
		{"expires_at now", auth.RevokeRequest{JTI: "t-1", ExpiresAt: now}, "expires_at", time.Time{}, nil},
		{"expires_at and ttl", auth.RevokeRequest{JTI: "t-1", ExpiresAt: at(time.Hour), TTL: time.Hour}, "ttl", time.Time{}, nil},
		{"negative ttl", auth.RevokeRequest{Subject: "alice", TTL: -time.Second}, "ttl", time.Time{}, nil},
		{"neither jti nor sub", auth.RevokeRequest{TTL: time.Hour}, "jti", time.Time{}, nil},
		{"both jti and sub", auth.RevokeRequest{JTI: "t-1", Subject: "alice"}, "jti", time.Time{}, nil},
		{"jti too long", auth.RevokeRequest{JTI: strings.Repeat("j", 1025)}, "jti", time.Time{}, nil},
		{"sub too long", auth.RevokeRequest{Subject: strings.Repeat("s", 1025)}, "sub", time.Time{}, nil},
		{"reason too long", auth.RevokeRequest{Subject: "alice", Reason: strings.Repeat("r", 1025)}, "reason", time.Time{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logs := &logBuffer{}
			r := openRevocations(t, nil, nil, clock, logs)
			tt.req.By, tt.req.Reason = "ops-1", cmpOr(tt.req.Reason, "incident 7")
			rec, err := r.Revoke(context.Background(), tt.req)
			if tt.wantErr != "" {
				pe, ok := errors.AsType[*auth.RevocationParamError](err)
				if !ok || pe.Param != tt.wantErr {
					t.Fatalf("Revoke: %v, want a problem with %s", err, tt.wantErr)
				}
				if got := must(r.List(context.Background())); len(got) != 0 {
					t.Fatalf("a refused revocation is listed: %+v", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("Revoke: %v", err)
			}
			if !rec.ExpiresAt.Equal(tt.expires) || rec.RevokedBy != "ops-1" || rec.Reason != "incident 7" || !rec.RevokedAt.Equal(now) ||
				rec.JTI != tt.req.JTI || rec.Subject != tt.req.Subject {
				t.Fatalf("record %+v, want expiry %s", rec, tt.expires)
			}
			for _, c := range tt.checks {
				if got := r.Revoked(c.p); got != c.want {
					t.Errorf("Revoked(%s, %v) = %v, want %v", c.p.Subject, c.p.Claims["jti"], got, c.want)
				}
			}
			list := must(r.List(context.Background()))
			if len(list) != 1 || list[0] != rec {
				t.Fatalf("List = %+v, want [%+v]", list, rec)
			}
			line := fmt.Sprintf("kind=%s %s=%s", rec.Kind, rec.Kind, tt.req.JTI+tt.req.Subject)
			if !strings.Contains(logs.String(), "msg=revoked "+line) || !strings.Contains(logs.String(), "by=ops-1") {
				t.Errorf("audit line missing %q:\n%s", line, logs.String())
			}
		})
	}
}

func cmpOr(s, or string) string {
	if s == "" {
		return or
	}
	return s
}

func TestRevocationLifecycle(t *testing.T) {
	c := &movingClock{}
	ctx := context.Background()
	r := openRevocations(t, nil, &auth.RevocationConfig{MaxEntries: 2}, c.Now, nil)
	alice, bob, carol := holder("alice", "a-1"), holder("bob", "b-1"), holder("carol", "")

	must(r.Revoke(ctx, auth.RevokeRequest{JTI: "a-1", TTL: time.Minute, By: "ops"}))
	c.Advance(time.Second)
	must(r.Revoke(ctx, auth.RevokeRequest{Subject: "bob", TTL: time.Hour, By: "ops"}))
	if !r.Revoked(alice) || !r.Revoked(bob) || r.Revoked(carol) {
		t.Fatal("after two revocations")
	}
	// Full: a third entry is refused, clearly; replacing an entry is not adding one.
	_, err := r.Revoke(ctx, auth.RevokeRequest{Subject: "carol", By: "ops"})
	if !errors.Is(err, auth.ErrRevocationsFull) || !strings.Contains(err.Error(), "max_entries") {
		t.Fatalf("third revocation: %v, want ErrRevocationsFull", err)
	}
	if r.Revoked(carol) {
		t.Fatal("a refused revocation is in force")
	}
	rec := must(r.Revoke(ctx, auth.RevokeRequest{Subject: "bob", TTL: 2 * time.Hour, By: "ops-2", Reason: "longer"}))
	if rec.RevokedBy != "ops-2" || !rec.ExpiresAt.Equal(c.Now().Add(2*time.Hour)) {
		t.Fatalf("replaced %+v", rec)
	}
	list := must(r.List(ctx))
	if len(list) != 2 || list[0].Subject != "bob" || list[0].Reason != "longer" || list[1].JTI != "a-1" {
		t.Fatalf("List (newest first) = %+v", list)
	}

	// Expiry: a-1 lapses after its minute and frees its place.
	c.Advance(time.Minute)
	if r.Revoked(alice) {
		t.Fatal("an expired revocation is in force")
	}
	must(r.Revoke(ctx, auth.RevokeRequest{Subject: "carol", By: "ops"}))
	if !r.Revoked(carol) {
		t.Fatal("carol after a place freed up")
	}
	if list := must(r.List(ctx)); len(list) != 2 {
		t.Fatalf("expired entry listed: %+v", list)
	}

	// Remove, then remove again.
	got, err := r.Remove(ctx, "", "bob", "ops-3")
	if err != nil || got.Subject != "bob" || got.RevokedBy != "ops-2" {
		t.Fatalf("Remove: %+v, %v", got, err)
	}
	if r.Revoked(bob) {
		t.Fatal("a removed revocation is in force")
	}
	if _, err := r.Remove(ctx, "", "bob", "ops-3"); !errors.Is(err, auth.ErrNotRevoked) {
		t.Fatalf("second Remove: %v, want ErrNotRevoked", err)
	}
	if _, err := r.Remove(ctx, "x", "bob", "ops-3"); err == nil {
		t.Fatal("Remove of a jti and a sub at once")
	}
}

// kvOnly hides every method of a store but state.KV's: its bus, so replicas follow by
// refresh only.
type kvOnly struct{ state.KV }

// TestRevocationsAcrossReplicas: two lists over one store without a bus, as two replicas
// sharing it. The replica that revokes honours it at once, the other within refresh; so
// with removals.
func TestRevocationsAcrossReplicas(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		kv := kvOnly{state.NewEmbedded(state.EmbeddedOptions{})}
		defer func() { _ = kv.Close() }()
		cfg := &auth.RevocationConfig{Refresh: 10 * time.Second}
		a := openRevocations(t, kv, cfg, nil, nil)
		logs := &logBuffer{}
		b := openRevocations(t, kv, cfg, nil, logs)
		defer func() { _ = a.Close(); _ = b.Close() }()
		ctx := context.Background()
		p := holder("alice", "t-1")

		// within returns how long until cond holds, failing past refresh. Each step lets every
		// goroutine woken at that instant (the followers' syncs) run before cond is checked.
		within := func(cond func() bool) time.Duration {
			t.Helper()
			start := time.Now()
			for {
				synctest.Wait()
				if cond() {
					return time.Since(start)
				}
				if time.Since(start) >= cfg.Refresh {
					t.Fatal("not within refresh")
				}
				time.Sleep(100 * time.Millisecond)
			}
		}

		time.Sleep(3 * time.Second) // b's next sync is 7s away
		must(a.Revoke(ctx, auth.RevokeRequest{JTI: "t-1", TTL: time.Hour}))
		if !a.Revoked(p) {
			t.Fatal("the revoking replica does not honour it at once")
		}
		if d := within(func() bool { return b.Revoked(p) }); d != 7*time.Second {
			t.Fatalf("b honoured it after %s, want at its sync 7s later", d)
		}
		if l := must(b.List(ctx)); len(l) != 1 || l[0].JTI != "t-1" {
			t.Fatalf("b lists %+v", l)
		}

		// A removal on b reaches a within refresh too.
		must(b.Remove(ctx, "t-1", "", "ops"))
		if b.Revoked(p) {
			t.Fatal("the removing replica still refuses")
		}
		within(func() bool { return !a.Revoked(p) })

		// A new refresh applies after the current wait: 10s more, then every 1s.
		b.Configure(&auth.RevocationConfig{Refresh: time.Second})
		time.Sleep(cfg.Refresh)
		must(a.Revoke(ctx, auth.RevokeRequest{Subject: "alice", TTL: time.Hour}))
		time.Sleep(time.Second)
		synctest.Wait()
		if !b.Revoked(holder("alice", "")) {
			t.Fatal("b after its refresh was shortened")
		}

		// The store failing: b keeps what it read, logs once, and logs the recovery.
		_ = kv.Close()
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if !b.Revoked(holder("alice", "")) {
			t.Fatal("b forgot the list when the store failed")
		}
		if n := strings.Count(logs.String(), "reading the revocation list failed"); n != 1 {
			t.Fatalf("%d failure lines, want 1:\n%s", n, logs.String())
		}
	})
}

// TestRevocationsAcrossReplicasBus: over a store with a bus, a change on one replica is
// honoured by the other at once, not at its next refresh, both ways.
func TestRevocationsAcrossReplicasBus(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		kv := state.NewEmbedded(state.EmbeddedOptions{})
		defer func() { _ = kv.Close() }()
		if _, ok := state.KV(kv).(state.Bus); !ok {
			t.Fatal("the embedded store is not a state.Bus")
		}
		cfg := &auth.RevocationConfig{Refresh: 30 * time.Second}
		a := openRevocations(t, kv, cfg, nil, nil)
		b := openRevocations(t, kv, cfg, nil, nil)
		defer func() { _ = a.Close(); _ = b.Close() }()
		ctx := context.Background()
		p := holder("alice", "t-1")

		time.Sleep(3 * time.Second)
		synctest.Wait()
		must(a.Revoke(ctx, auth.RevokeRequest{JTI: "t-1", TTL: time.Hour}))
		synctest.Wait() // the announcement is delivered and b's sync runs, in no time
		if !b.Revoked(p) {
			t.Fatal("b does not honour a's revocation at once")
		}
		must(b.Remove(ctx, "t-1", "", "ops"))
		synctest.Wait()
		if a.Revoked(p) {
			t.Fatal("a does not honour b's removal at once")
		}
	})
}

// TestAuthenticatorRevoked: a token that verifies is refused with 4001 "revoked" once its
// jti or its subject is revoked; an API key by its name. A forged token naming a revoked
// jti is refused for its signature: the list is consulted only after verification.
func TestAuthenticatorRevoked(t *testing.T) {
	c := &movingClock{}
	rev := openRevocations(t, nil, nil, c.Now, nil)
	const key = "k-0123456789abcdef0123456789abcdef"
	a, err := auth.Open(context.Background(), auth.Config{
		JWT:     &auth.JWTConfig{Issuers: []auth.IssuerConfig{{Issuer: issSecret, Audiences: []string{"gatehouse"}, Secret: secret}}},
		APIKeys: []auth.APIKeyConfig{{Name: "batch-job", Hash: sha256Hex(key), Scopes: []string{"read"}}},
	}, auth.Options{Now: c.Now, Revocations: rev})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	ctx := context.Background()
	tok := sign(t, "HS256", "", []byte(secret), claims(issSecret, "jti", "t-1"))
	other := sign(t, "HS256", "", []byte(secret), claims(issSecret, "jti", "t-2"))
	forged := sign(t, "HS256", "", []byte("another secret, just as long as the real one"), claims(issSecret, "jti", "t-1"))
	apiKey := func() error {
		_, err := a.Authenticate(ctx, gateway.Credentials{APIKey: key})
		return err
	}
	refusedAs := func(err error) auth.Reason {
		if err == nil {
			return ""
		}
		if e := gateway.AsError(err); e.Code() != schemas.CodeAuthentication {
			t.Fatalf("code %d, want 4001", e.Code())
		}
		return auth.ReasonOf(err)
	}

	if _, err := bearer(a, tok); err != nil {
		t.Fatalf("before revocation: %v", err)
	}
	must(rev.Revoke(ctx, auth.RevokeRequest{JTI: "t-1", ExpiresAt: now.Add(5 * time.Minute)}))
	steps := []struct {
		name string
		err  error
		want auth.Reason
	}{
		{"the revoked token", second(bearer(a, tok)), auth.ReasonRevoked},
		{"another token of the subject", second(bearer(a, other)), ""},
		{"a forged token with the revoked jti", second(bearer(a, forged)), auth.ReasonBadSignature},
		{"an API key", apiKey(), ""},
	}
	for _, s := range steps {
		if got := refusedAs(s.err); got != s.want {
			t.Errorf("%s: refused as %q, want %q", s.name, got, s.want)
		}
	}
	must(rev.Revoke(ctx, auth.RevokeRequest{Subject: "alice", TTL: time.Minute}))
	must(rev.Revoke(ctx, auth.RevokeRequest{Subject: "batch-job", TTL: time.Minute}))
	if got := refusedAs(second(bearer(a, other))); got != auth.ReasonRevoked {
		t.Errorf("a token of a revoked subject: %q", got)
	}
	if got := refusedAs(apiKey()); got != auth.ReasonRevoked {
		t.Errorf("an API key revoked by name: %q", got)
	}
	if got := refusedAs(second(a.Authenticate(ctx, gateway.Credentials{Bearer: key}))); got != auth.ReasonRevoked {
		t.Errorf("an API key as a bearer token: %q", got)
	}
	c.Advance(time.Minute)
	if err := apiKey(); err != nil {
		t.Errorf("after the subject's revocation expired: %v", err)
	}
}

func second[T any](_ T, err error) error { return err }

// sha256Hex is an API key's configured hash.
func sha256Hex(key string) string {
	sum := sha256.Sum256([]byte(key))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// TestRevocationsFullByValueLimit: a store whose values are too small for the list refuses
// a revocation as full, and the ones in force stay so.
func TestRevocationsFullByValueLimit(t *testing.T) {
	kv := state.NewEmbedded(state.EmbeddedOptions{MaxValueBytes: 300})
	t.Cleanup(func() { _ = kv.Close() })
	r := openRevocations(t, kv, nil, clock, nil)
	var err error
	n := 0
	for ; n < 10 && err == nil; n++ {
		_, err = r.Revoke(context.Background(), auth.RevokeRequest{Subject: fmt.Sprint("s", n), By: "ops"})
	}
	if !errors.Is(err, auth.ErrRevocationsFull) || !strings.Contains(err.Error(), "value limit") {
		t.Fatalf("after %d revocations: %v, want ErrRevocationsFull", n, err)
	}
	if n < 2 || !r.Revoked(holder("s0", "")) || r.Revoked(holder(fmt.Sprint("s", n-1), "")) {
		t.Fatalf("after %d revocations: the first must hold, the refused one not", n)
	}
	if l := must(r.List(context.Background())); len(l) != n-1 {
		t.Fatalf("%d listed, want %d", len(l), n-1)
	}
}
