package a2a_test

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/codecs/a2a"
)

// edSigner signs with an Ed25519 key, as the gateway's key ring does by default.
type edSigner struct {
	kid string
	key ed25519.PrivateKey
}

func (s edSigner) SignJWS(header map[string]any, payload []byte) (string, string, error) {
	header["alg"], header["kid"] = "EdDSA", s.kid
	hb, _ := json.Marshal(header)
	b64 := base64.RawURLEncoding.EncodeToString
	protected := b64(hb)
	return protected, b64(ed25519.Sign(s.key, []byte(protected+"."+b64(payload)))), nil
}

func (s edSigner) jwks() []byte {
	pub := s.key.Public().(ed25519.PublicKey)
	return []byte(`{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"` + s.kid + `","x":"` + base64.RawURLEncoding.EncodeToString(pub) + `"}]}`)
}

// esSigner signs with a P-256 key (ES256).
type esSigner struct {
	kid string
	key *ecdsa.PrivateKey
}

func (s esSigner) SignJWS(header map[string]any, payload []byte) (string, string, error) {
	header["alg"], header["kid"] = "ES256", s.kid
	hb, _ := json.Marshal(header)
	b64 := base64.RawURLEncoding.EncodeToString
	protected := b64(hb)
	sum := sha256.Sum256([]byte(protected + "." + b64(payload)))
	r, ss, err := ecdsa.Sign(rand.Reader, s.key, sum[:])
	if err != nil {
		return "", "", err
	}
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	ss.FillBytes(sig[32:])
	return protected, b64(sig), nil
}

func (s esSigner) jwks() []byte {
	raw, _ := s.key.PublicKey.Bytes()
	b64 := base64.RawURLEncoding.EncodeToString
	return []byte(`{"keys":[{"kty":"EC","crv":"P-256","kid":"` + s.kid + `","x":"` + b64(raw[1:33]) + `","y":"` + b64(raw[33:]) + `"}]}`)
}

func TestSignCard(t *testing.T) {
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ed, es := edSigner{"ed-1", edKey}, esSigner{"es-1", ecKey}
	on := true
	card, _ := json.Marshal(a2a.AgentCard{Name: "agent", Description: "d", Version: "1",
		SupportedInterfaces: []a2a.AgentInterface{{URL: "https://a.example/a2a", ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: "1.0"}},
		Capabilities:        a2a.AgentCapabilities{Streaming: &on}, DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		Skills: []a2a.AgentSkill{{ID: "s", Name: "s", Description: "skill", Tags: []string{"t"}}}})
	for _, tt := range []struct {
		name   string
		signer a2a.CardSigner
		jwks   []byte
	}{{"EdDSA", ed, ed.jwks()}, {"ES256", es, es.jwks()}} {
		t.Run(tt.name, func(t *testing.T) {
			keys, err := a2a.ParseKeySet(tt.jwks)
			if err != nil {
				t.Fatal(err)
			}
			signed, err := a2a.SignCard(card, tt.signer, "https://a.example/.well-known/jwks.json")
			if err != nil {
				t.Fatal(err)
			}
			h, err := a2a.VerifyCard(signed, keys)
			if err != nil {
				t.Fatalf("VerifyCard: %v", err)
			}
			if h.Alg != tt.name || h.Typ != a2a.JWSType || h.Jku == "" {
				t.Errorf("header = %+v", h)
			}
			// Reordering and re-indenting the card keeps the signature: it is over the
			// canonical form.
			var m map[string]any
			_ = json.Unmarshal(signed, &m)
			pretty, _ := json.MarshalIndent(m, "", "  ")
			if _, err := a2a.VerifyCard(pretty, keys); err != nil {
				t.Errorf("re-encoded card: %v", err)
			}
			// Any change to a member but signatures breaks it.
			for _, tamper := range []func(map[string]any){
				func(m map[string]any) { m["name"] = "evil" },
				func(m map[string]any) {
					m["supportedInterfaces"].([]any)[0].(map[string]any)["url"] = "https://evil.example/a2a"
				},
				func(m map[string]any) { m["skills"] = []any{} },
				func(m map[string]any) { m["extra"] = 1 },
			} {
				var c map[string]any
				_ = json.Unmarshal(signed, &c)
				tamper(c)
				b, _ := json.Marshal(c)
				if _, err := a2a.VerifyCard(b, keys); !errors.Is(err, a2a.ErrJWS) {
					t.Errorf("tampered card verified: %v (%s)", err, b)
				}
			}
			// Another key set does not verify it.
			_, other, _ := ed25519.GenerateKey(rand.Reader)
			otherKeys, _ := a2a.ParseKeySet(edSigner{"ed-1", other}.jwks())
			if _, err := a2a.VerifyCard(signed, otherKeys); !errors.Is(err, a2a.ErrJWS) {
				t.Errorf("verified with another key: %v", err)
			}
		})
	}
	keys, _ := a2a.ParseKeySet(ed.jwks())
	if _, err := a2a.VerifyCard(card, keys); !errors.Is(err, a2a.ErrUnsigned) {
		t.Errorf("unsigned card: %v", err)
	}
}

func TestVerifyJWSRefuses(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	s := edSigner{"k", key}
	keys, _ := a2a.ParseKeySet(s.jwks())
	payload := []byte(`{"a":1}`)
	protected, sig, _ := s.SignJWS(map[string]any{}, payload)
	b64 := base64.RawURLEncoding.EncodeToString
	if _, err := keys.VerifyJWS(protected, payload, sig); err != nil {
		t.Fatalf("genuine: %v", err)
	}
	header := func(h string) string { return b64([]byte(h)) }
	for name, c := range map[string][3]string{
		"none alg":      {header(`{"alg":"none","kid":"k"}`), string(payload), ""},
		"hmac alg":      {header(`{"alg":"HS256","kid":"k"}`), string(payload), sig},
		"wrong alg":     {header(`{"alg":"ES256","kid":"k"}`), string(payload), sig},
		"unknown kid":   {header(`{"alg":"EdDSA","kid":"x"}`), string(payload), sig},
		"crit":          {header(`{"alg":"EdDSA","kid":"k","crit":["b64"]}`), string(payload), sig},
		"other payload": {protected, `{"a":2}`, sig},
		"bad base64":    {protected, string(payload), "!!"},
	} {
		if _, err := keys.VerifyJWS(c[0], []byte(c[1]), c[2]); !errors.Is(err, a2a.ErrJWS) {
			t.Errorf("%s: %v, want ErrJWS", name, err)
		}
	}
	tok := protected + "." + b64(payload) + "." + sig
	if _, got, err := keys.VerifyCompact(tok); err != nil || string(got) != string(payload) {
		t.Errorf("VerifyCompact = %s, %v", got, err)
	}
	if _, _, err := keys.VerifyCompact(strings.Replace(tok, b64(payload), b64([]byte(`{"a":3}`)), 1)); !errors.Is(err, a2a.ErrJWS) {
		t.Errorf("VerifyCompact of a changed payload: %v", err)
	}
	for _, bad := range []string{`{}`, `{"keys":[{"kty":"oct","kid":"a","k":"AAAA"}]}`, `not json`} {
		if _, err := a2a.ParseKeySet([]byte(bad)); !errors.Is(err, a2a.ErrKeySet) {
			t.Errorf("ParseKeySet(%s) = %v", bad, err)
		}
	}
}

// TestVerifyJWSWithoutKid: a JWS whose header names no kid verifies with any key the
// algorithm fits, named or not; a key without a kid never verifies one that names a kid.
func TestVerifyJWSWithoutKid(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	_, other, _ := ed25519.GenerateKey(rand.Reader)
	unnamed := edSigner{"", key}
	keys, err := a2a.ParseKeySet(unnamed.jwks())
	if err != nil || keys.Len() != 1 {
		t.Fatalf("a set of one key without a kid: %d keys, %v", keys.Len(), err)
	}
	payload := []byte(`{"a":1}`)
	b64 := base64.RawURLEncoding.EncodeToString
	signWith := func(k ed25519.PrivateKey, header string) (string, string) {
		protected := b64([]byte(header))
		return protected, b64(ed25519.Sign(k, []byte(protected+"."+b64(payload))))
	}
	for name, c := range map[string]struct {
		key    ed25519.PrivateKey
		header string
		ok     bool
	}{
		"no kid":         {key, `{"alg":"EdDSA"}`, true},
		"no kid, ES256":  {key, `{"alg":"ES256"}`, false},
		"another key":    {other, `{"alg":"EdDSA"}`, false},
		"kid not in set": {key, `{"alg":"EdDSA","kid":"k"}`, false},
	} {
		protected, sig := signWith(c.key, c.header)
		if _, err := keys.VerifyJWS(protected, payload, sig); (err == nil) != c.ok || err != nil && !errors.Is(err, a2a.ErrJWS) {
			t.Errorf("%s: %v, want ok %v", name, err, c.ok)
		}
	}
	named, _ := a2a.ParseKeySet(edSigner{"k", key}.jwks())
	protected, sig := signWith(key, `{"alg":"EdDSA"}`)
	if _, err := named.VerifyJWS(protected, payload, sig); err != nil {
		t.Errorf("a header without a kid, a named key: %v", err)
	}
}
