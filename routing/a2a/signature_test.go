package a2a_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/gatehouse-dev/gatehouse/codecs/canonical"
	"github.com/gatehouse-dev/gatehouse/routing/a2a"
)

var b64 = base64.RawURLEncoding

// sign returns card with a signatures member: a detached JWS by key over the canonical
// JSON of the card.
func sign(t *testing.T, card []byte, alg, kid string, key any) []byte {
	t.Helper()
	payload, err := canonical.CanonicalJSON(card)
	if err != nil {
		t.Fatal(err)
	}
	protected := b64.EncodeToString([]byte(`{"alg":"` + alg + `","kid":"` + kid + `","typ":"JOSE"}`))
	sig, err := jwt.GetSigningMethod(alg).Sign(protected+"."+b64.EncodeToString(payload), key)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	_ = json.Unmarshal(card, &m)
	m["signatures"] = []map[string]string{{"protected": protected, "signature": b64.EncodeToString(sig)}}
	out, _ := json.Marshal(m)
	return out
}

// observer records card loads.
type observer struct {
	mu   sync.Mutex
	seen []string
}

func (o *observer) CardLoaded(agent string, ok bool, reason string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if ok {
		reason = "ok"
	}
	o.seen = append(o.seen, agent+":"+reason)
}

func (o *observer) last() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.seen) == 0 {
		return ""
	}
	return o.seen[len(o.seen)-1]
}

func TestSignedCards(t *testing.T) {
	edPub, edKey, _ := ed25519.GenerateKey(rand.Reader)
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	_, otherKey, _ := ed25519.GenerateKey(rand.Reader)
	ecX, ecY := ecKey.X.FillBytes(make([]byte, 32)), ecKey.Y.FillBytes(make([]byte, 32))
	jwks := `{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"ed","x":"` + b64.EncodeToString(edPub) + `"},` +
		`{"kty":"EC","crv":"P-256","kid":"ec","x":"` + b64.EncodeToString(ecX) + `","y":"` + b64.EncodeToString(ecY) + `"}]}`
	file := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(file, []byte(jwks), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		card     func(a *agent) []byte
		required bool
		ok       bool
		reason   string
	}{
		{"EdDSA signed", func(a *agent) []byte { return sign(t, a.card10(false, "echo"), "EdDSA", "ed", edKey) }, true, true, ""},
		{"ES256 signed", func(a *agent) []byte { return sign(t, a.card10(false, "echo"), "ES256", "ec", ecKey) }, true, true, ""},
		{"tampered", func(a *agent) []byte {
			c := sign(t, a.card10(false, "echo"), "EdDSA", "ed", edKey)
			return []byte(strings.Replace(string(c), "Skill echo", "Skill evil", 1))
		}, false, false, "signature"},
		{"endpoint rewritten", func(a *agent) []byte {
			c := sign(t, a.card10(false, "echo"), "EdDSA", "ed", edKey)
			return []byte(strings.Replace(string(c), "/rpc", "/elsewhere", 1))
		}, false, false, "signature"},
		{"another key", func(a *agent) []byte { return sign(t, a.card10(false, "echo"), "EdDSA", "ed", otherKey) }, false, false, "signature"},
		{"unknown kid", func(a *agent) []byte { return sign(t, a.card10(false, "echo"), "EdDSA", "nope", edKey) }, false, false, "signature"},
		{"unsigned, not required", func(a *agent) []byte { return a.card10(false, "echo") }, false, true, ""},
		{"unsigned, required", func(a *agent) []byte { return a.card10(false, "echo") }, true, false, "signature"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAgent(t)
			a.setCard(tc.card(a))
			var obs observer
			tg, err := a2a.New(a2a.Config{Name: "signed", CardURL: a.srv.URL,
				CardSignature: a2a.SignatureConfig{JWKSFile: file, RequireSignedCard: tc.required}}, a2a.Options{Observer: &obs})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = tg.Close() }()
			deadline := time.Now().Add(5 * time.Second)
			for obs.last() == "" && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			err = tg.Ready(context.Background())
			if tc.ok {
				if err != nil || obs.last() != "signed:ok" {
					t.Fatalf("ready %v, observed %s", err, obs.last())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "card signature") || obs.last() != "signed:"+tc.reason || tg.CardFailures() != 1 {
				t.Fatalf("ready %v, observed %s, failures %d", err, obs.last(), tg.CardFailures())
			}
			if skills, _ := tg.Skills(); len(skills) != 0 {
				t.Fatalf("a refused card serves skills %+v", skills)
			}
		})
	}
}

// TestTamperedRefreshKeepsGoodCard: a card that stops verifying on a refresh is refused
// and the last good one keeps serving.
func TestTamperedRefreshKeepsGoodCard(t *testing.T) {
	pub, key, _ := ed25519.GenerateKey(rand.Reader)
	file := filepath.Join(t.TempDir(), "jwks.json")
	_ = os.WriteFile(file, []byte(`{"keys":[{"kty":"OKP","crv":"Ed25519","x":"`+b64.EncodeToString(pub)+`"}]}`), 0o600)
	a := newAgent(t)
	a.setCard(sign(t, a.card10(false, "echo"), "EdDSA", "", key))
	tg := start(t, a, func(c *a2a.Config) { c.CardSignature = a2a.SignatureConfig{JWKSFile: file, RequireSignedCard: true} })
	_, gen := tg.Skills()
	a.setCard([]byte(strings.ReplaceAll(string(sign(t, a.card10(false, "echo", "extra"), "EdDSA", "", key)), "extra", "evil")))
	tg.Reload(context.Background())
	if skills, g := tg.Skills(); g != gen || len(skills) != 1 || tg.CardFailures() != 1 {
		t.Fatalf("skills %+v gen %d (was %d), failures %d", skills, g, gen, tg.CardFailures())
	}
}
