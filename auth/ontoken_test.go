package auth_test

import (
	"context"
	"slices"
	"testing"

	"github.com/gatehouse-dev/gatehouse/auth"
)

// TestOnToken checks Options.OnToken hears each bearer JWT's outcome: verified the first
// time, cached after, refused for a forged one; API keys and anonymous callers are not
// bearer JWTs and are not reported.
func TestOnToken(t *testing.T) {
	c := &movingClock{}
	var got []string
	a, err := auth.Open(context.Background(), auth.Config{
		JWT:       &auth.JWTConfig{Issuers: []auth.IssuerConfig{{Issuer: issSecret, Audiences: []string{"gatehouse"}, Secret: secret}}},
		Anonymous: &auth.AnonymousConfig{},
	}, auth.Options{Now: c.Now, OnToken: func(r string) { got = append(got, r) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	tok := sign(t, "HS256", "", []byte(secret), claims(issSecret))
	forged := sign(t, "HS256", "", []byte("not the secret, not the secret!!"), claims(issSecret))
	for _, b := range []string{tok, tok, forged, ""} {
		_, _ = bearer(a, b)
	}
	want := []string{auth.TokenVerified, auth.TokenCached, auth.TokenRefused}
	if !slices.Equal(got, want) {
		t.Fatalf("OnToken heard %v, want %v", got, want)
	}
}
