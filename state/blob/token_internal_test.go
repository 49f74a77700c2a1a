package blob

import (
	"bytes"
	"errors"
	"net/http"
	"testing"
	"time"
)

// FuzzDecodeToken: the payload decoder never panics, refuses with ErrTokenMalformed only,
// and accepts only canonical payloads: what it accepts encodes back to the same bytes.
func FuzzDecodeToken(f *testing.F) {
	f.Add(encodeToken(Token{Task: "t", Agent: "a", Expires: time.UnixMilli(1_800_000_000_000),
		Scopes: []Scope{{Method: http.MethodGet, Key: "in/a", Offset: 1, Length: 2}, {Method: http.MethodPut, Key: "out/b", Length: 9}}}))
	f.Add([]byte{tokenVersion})
	f.Add([]byte{tokenVersion, 0x80, 0x80, 0x80})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, p []byte) {
		tk, err := decodeToken(p)
		if err != nil {
			if !errors.Is(err, ErrTokenMalformed) {
				t.Fatalf("decodeToken = %v: not ErrTokenMalformed", err)
			}
			return
		}
		if checkToken(tk) != nil {
			t.Fatalf("decodeToken accepted %+v, which SignToken refuses", tk)
		}
		if again := encodeToken(tk); !bytes.Equal(again, p) {
			t.Fatalf("decodeToken accepted a payload that is not canonical: %x re-encodes to %x", p, again)
		}
	})
}

// FuzzVerifyToken: the verifier never panics and accepts only tokens the signer issued.
func FuzzVerifyToken(f *testing.F) {
	now := time.UnixMilli(1_800_000_000_000)
	s, err := NewSigner(bytes.Repeat([]byte("k"), MinKeyBytes), func() time.Time { return now })
	if err != nil {
		f.Fatal(err)
	}
	tok, err := s.SignToken(Token{Task: "t", Agent: "a", Expires: now.Add(time.Minute),
		Scopes: []Scope{{Method: http.MethodGet, Key: "in/a", Length: 2}}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(tok)
	f.Add(TokenPrefix + "AQ.AA")
	f.Add("task=a&sig=b")
	f.Fuzz(func(t *testing.T, in string) {
		got, err := s.VerifyToken(in)
		if err != nil {
			if !errors.Is(err, ErrTokenMalformed) && !errors.Is(err, ErrSignature) && !errors.Is(err, ErrExpired) {
				t.Fatalf("VerifyToken = %v: not one of the package's errors", err)
			}
			return
		}
		again, err := s.SignToken(got)
		if err != nil || again != in {
			t.Fatalf("accepted %q, which the signer does not issue (it signs %q, %v)", in, again, err)
		}
	})
}
