package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/gatehouse-dev/gatehouse/codecs/a2a"
	"github.com/gatehouse-dev/gatehouse/faces/httprpc"
)

// TestA2ACardSigned: with a2a.card.sign the public and extended cards carry a JWS by the
// gateway's key ring that verifies with the gateway's JWKS; a card changed after it was
// signed does not verify.
func TestA2ACardSigned(t *testing.T) {
	ts := startA2APush(t, "card: {sign: true}")
	fetch := func(path string) []byte {
		resp, err := http.Get(ts.base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		return b
	}
	keys, err := a2a.ParseKeySet(fetch(httprpc.JWKSPath))
	if err != nil {
		t.Fatal(err)
	}
	card := fetch("/.well-known/agent-card.json")
	h, err := a2a.VerifyCard(card, keys)
	if err != nil {
		t.Fatalf("the public card does not verify: %v\n%s", err, card)
	}
	if h.Typ != "JOSE" || h.Kid == "" || h.Alg != "EdDSA" {
		t.Errorf("protected header = %+v", h)
	}
	var m map[string]any
	_ = json.Unmarshal(card, &m)
	m["supportedInterfaces"].([]any)[0].(map[string]any)["url"] = "https://evil.example/a2a"
	tampered, _ := json.Marshal(m)
	if _, err := a2a.VerifyCard(tampered, keys); !errors.Is(err, a2a.ErrJWS) {
		t.Errorf("a tampered card verified: %v", err)
	}

	_, _, body := ts.a2aPost(callerToken(t, "alice", "agents", "caps"), "1.0", `{"jsonrpc":"2.0","id":1,"method":"GetExtendedAgentCard"}`)
	var ext json.RawMessage
	a2aResult(t, body, &ext)
	if _, err := a2a.VerifyCard(ext, keys); err != nil {
		t.Errorf("the extended card does not verify: %v", err)
	}
	var e struct {
		Skills []struct{ ID string } `json:"skills"`
	}
	_ = json.Unmarshal(ext, &e)
	_ = json.Unmarshal(card, &m)
	if len(e.Skills) == 0 || len(m["skills"].([]any)) != 0 {
		t.Errorf("extended skills %v, public skills %v", e.Skills, m["skills"])
	}
}

// TestA2ASigningNeedsKeyRing: signing the card or pushing without auth.keyring is refused
// at load.
func TestA2ASigningNeedsKeyRing(t *testing.T) {
	for _, keys := range []string{"card: {sign: true}", "push: {enabled: true}"} {
		if _, err := Parse("test.yaml", []byte(fmt.Sprintf(a2aConfig, callerSecret, a2aSecond, keys))); err == nil {
			t.Errorf("a2a {%s} without auth.keyring was accepted", keys)
		}
	}
}
