package a2a_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/codecs/a2a"
	"github.com/gatehouse-dev/gatehouse/internal/fuzzseed"
)

// FuzzParseKeySet: a JWK Set is read or refused with an error wrapping ErrKeySet, never a
// panic; past its 64 KiB bound it is refused before it is decoded.
func FuzzParseKeySet(f *testing.F) {
	signer := fuzzSigner()
	f.Add(signer.jwks())
	f.Add([]byte(`{"keys":[{"kty":"EC","crv":"P-256","kid":"e","x":"AAAA","y":"AAAA"},{"kty":"RSA","n":"AQAB","e":"AQAB","use":"sig"}]}`))
	f.Add([]byte(`{"keys":[{"kty":"OKP","crv":"Ed25519","use":"enc","x":""}]}`))
	// Real frames: not key sets, but the JSON shapes a peer sends.
	fuzzseed.Add(f, fuzzseed.A2AResponse)
	f.Fuzz(func(t *testing.T, jwks []byte) {
		// Past the bound the same set is refused, whatever it holds (trailing spaces are
		// valid JSON: only the size check can refuse it).
		if _, err := a2a.ParseKeySet(append(bytes.Clone(jwks), bytes.Repeat([]byte{' '}, 64<<10)...)); !errors.Is(err, a2a.ErrKeySet) {
			t.Fatalf("ParseKeySet of %d bytes: %v, want an ErrKeySet", len(jwks)+64<<10, err)
		}
		ks, err := a2a.ParseKeySet(jwks)
		if err != nil {
			if !errors.Is(err, a2a.ErrKeySet) {
				t.Fatalf("ParseKeySet(%q): error %v does not wrap ErrKeySet", jwks, err)
			}
			return
		}
		if ks.Len() == 0 {
			t.Fatalf("ParseKeySet(%q) accepted a set with no usable key", jwks)
		}
		if len(jwks) > 64<<10 {
			t.Fatalf("ParseKeySet read a set of %d bytes, past its bound", len(jwks))
		}
	})
}

// FuzzVerifyCompact: a compact JWS verifies only when it is one the key signed (the same
// header and payload); anything else is refused with an error wrapping ErrJWS.
func FuzzVerifyCompact(f *testing.F) {
	signer := fuzzSigner()
	ks, err := a2a.ParseKeySet(signer.jwks())
	if err != nil {
		f.Fatal(err)
	}
	signed := map[string]bool{}
	// Tokens over real A2A frames.
	for _, payload := range fuzzseed.Frames(f, fuzzseed.A2ARequest, fuzzseed.A2AResponse) {
		protected, sig, err := signer.SignJWS(map[string]any{"alg": "EdDSA", "kid": signer.kid}, payload)
		if err != nil {
			f.Fatal(err)
		}
		signed[protected+"\x00"+string(payload)] = true
		f.Add(protected + "." + base64.RawURLEncoding.EncodeToString(payload) + "." + sig)
	}
	f.Add("e30.e30.AA")
	f.Add("..")
	f.Fuzz(func(t *testing.T, token string) {
		h, payload, err := ks.VerifyCompact(token)
		if err != nil {
			if !errors.Is(err, a2a.ErrJWS) {
				t.Fatalf("VerifyCompact(%q): error %v does not wrap ErrJWS", token, err)
			}
			return
		}
		protected, _, _ := strings.Cut(token, ".")
		if !signed[protected+"\x00"+string(payload)] || h.Alg != "EdDSA" {
			t.Fatalf("VerifyCompact(%q) verified a header and payload the key never signed: %+v %q", token, h, payload)
		}
	})
}

// FuzzParseVersion: the A2A-Version header is 0.3, 1.0 or a typed VersionNotSupported error.
func FuzzParseVersion(f *testing.F) {
	for _, s := range []string{"", "1", "1.0", "1.0.1", "0.3", "0.3.0", " 1.0 ", "1.1", "0.2", "1.0x"} {
		f.Add(s)
	}
	for _, s := range fuzzseed.Strings(f, 16, fuzzseed.A2ARequest) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		v, err := a2a.ParseVersion(h)
		if err != nil {
			if err.Code != a2a.CodeVersionNotSupported {
				t.Fatalf("ParseVersion(%q) error %+v", h, err)
			}
			return
		}
		s := strings.TrimSpace(h)
		want := a2a.V03
		if s == "1" || s == "1.0" || strings.HasPrefix(s, "1.0.") {
			want = a2a.V10
		} else if s != "" && s != "0.3" && !strings.HasPrefix(s, "0.3.") {
			t.Fatalf("ParseVersion(%q) = %v, accepted", h, v)
		}
		if v != want {
			t.Fatalf("ParseVersion(%q) = %v, want %v", h, v, want)
		}
	})
}

// fuzzSigner is an Ed25519 signer with a fixed key, so that a fuzz run is reproducible.
func fuzzSigner() edSigner {
	return edSigner{key: ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize)), kid: "fuzz"}
}
