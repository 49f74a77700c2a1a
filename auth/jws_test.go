package auth_test

import (
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/gatehouse-dev/gatehouse/auth"
	"github.com/gatehouse-dev/gatehouse/codecs/a2a"
)

// TestSignJWS: the ring signs any payload as a JWS that its JWKS verifies (EdDSA and
// ES256), with the header members given plus its own alg and kid, which the caller may
// not set.
func TestSignJWS(t *testing.T) {
	for _, alg := range []string{"EdDSA", "ES256"} {
		t.Run(alg, func(t *testing.T) {
			r := openRing(t, auth.KeyRingConfig{Algorithm: alg, Issuer: "https://gatehouse.test"}, auth.KeyRingOptions{})
			defer func() { _ = r.Close() }()
			payload := []byte(`{"name":"agent"}`)
			protected, sig, err := r.SignJWS(map[string]any{"typ": "JOSE"}, payload)
			if err != nil {
				t.Fatal(err)
			}
			keys, err := a2a.ParseKeySet(r.JWKS())
			if err != nil {
				t.Fatal(err)
			}
			h, err := keys.VerifyJWS(protected, payload, sig)
			if err != nil {
				t.Fatalf("the ring's JWKS does not verify its JWS: %v", err)
			}
			if h.Alg != alg || h.Typ != "JOSE" || h.Kid == "" {
				t.Errorf("header = %+v", h)
			}
			if _, err := keys.VerifyJWS(protected, []byte(`{"name":"other"}`), sig); err == nil {
				t.Error("the signature verified another payload")
			}
			b, _ := base64.RawURLEncoding.DecodeString(protected)
			var hm map[string]any
			_ = json.Unmarshal(b, &hm)
			if len(hm) != 3 {
				t.Errorf("protected header %s, want alg, kid and typ", b)
			}
			if _, _, err := r.SignJWS(map[string]any{"alg": "none"}, payload); err == nil {
				t.Error("a header setting alg was signed")
			}
			if _, _, err := r.SignJWS(nil, nil); err == nil {
				t.Error("a nil payload was signed")
			}
		})
	}
}
