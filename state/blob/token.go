package blob

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// A task token is what a trusted agent gets instead of signed URLs: one bearer credential
// for the gateway's blob endpoint that grants, for one task and one agent, until an instant,
// exactly a list of scopes — a read of one byte range of one object, or one upload of
// bounded size to one key. The agent fetches plain URLs (EndpointPath + key, no query) with
// "Authorization: Bearer <token>".
//
// It is an HMAC-SHA256 token under the Signer's key, like the signed URLs: the endpoint that
// verifies it is the gateway's own, every replica that serves the others' URLs holds that key
// already, and nothing outside the gateway ever needs to verify it (a JWT of the key ring is
// for services that verify the gateway's tokens by its published keys). The MAC is computed
// under a domain of its own, so no URL signature is ever a valid token nor the reverse.
//
// Wire form: TokenPrefix, the payload in unpadded base64url, ".", the MAC in unpadded
// base64url. The payload is binary: a version byte, then the task and agent ids
// (uvarint-length-prefixed), the expiry in Unix milliseconds (varint), the number of scopes
// (uvarint) and each scope's method byte ('G' or 'P'), key (length-prefixed), offset and
// length (varints). Nothing may follow the last scope.

// TokenPrefix starts every task token: the endpoint tells a task token from a caller's
// credential by it.
const TokenPrefix = "ghbt1."

// Bounds of a task token.
const (
	// MaxTokenScopes bounds the scopes one token grants.
	MaxTokenScopes = 256
	// MaxTokenBytes bounds a token's wire form.
	MaxTokenBytes = 64 << 10
)

// tokenDomain separates the tokens' MACs from the URLs' (macDomain).
const tokenDomain = "gatehouse-blob-token-v1"

// tokenVersion is the payload's first byte.
const tokenVersion = 1

// Errors of task tokens.
var (
	// ErrTokenMalformed: the token is not one the gateway issues (wrong form, bad encoding,
	// fields out of bounds).
	ErrTokenMalformed = errors.New("blob: malformed task token")
	// ErrNotGranted: the token is valid but grants nothing for this method and key.
	ErrNotGranted = errors.New("blob: the task token does not grant this object or method")
)

// Scope is one thing a task token allows: Method (GET or PUT) on Key; for GET the bytes
// [Offset, Offset+Length), for PUT an object of at most Length bytes (Offset 0).
type Scope struct {
	Method string
	Key    string
	Offset int64
	Length int64
}

// Token is what a task token grants: its Scopes, for Task and Agent, until Expires (at
// millisecond precision).
type Token struct {
	Task    string
	Agent   string
	Expires time.Time
	Scopes  []Scope
}

// Grants returns the grants t holds for method on key, in the token's order; none when t
// grants nothing for them.
func (t Token) Grants(method, key string) []Grant {
	var gs []Grant
	for _, s := range t.Scopes {
		if s.Method == method && s.Key == key {
			gs = append(gs, Grant{Method: method, Key: key, Task: t.Task, Agent: t.Agent, Expires: t.Expires,
				Offset: s.Offset, Length: s.Length})
		}
	}
	return gs
}

// checkToken checks the fields of a token SignToken is asked for.
func checkToken(t Token) error {
	if len(t.Scopes) == 0 || len(t.Scopes) > MaxTokenScopes {
		return fmt.Errorf("blob: a task token grants 1 to %d scopes", MaxTokenScopes)
	}
	for _, s := range t.Scopes {
		g := Grant{Method: s.Method, Key: s.Key, Task: t.Task, Agent: t.Agent, Offset: s.Offset, Length: s.Length}
		if err := checkGrant(g); err != nil {
			return err
		}
		if s.Method == http.MethodPut && s.Offset != 0 {
			return errorsJoin(ErrRange, "an upload scope starts at offset 0")
		}
	}
	return nil
}

// SignToken returns the wire form of t. It fails for a token without scopes or with more
// than MaxTokenScopes, or a scope Sign would refuse as a grant.
func (s *Signer) SignToken(t Token) (string, error) {
	if err := checkToken(t); err != nil {
		return "", err
	}
	p := encodeToken(t)
	tok := TokenPrefix + base64.RawURLEncoding.EncodeToString(p) + "." + base64.RawURLEncoding.EncodeToString(s.tokenMAC(p))
	if len(tok) > MaxTokenBytes {
		return "", fmt.Errorf("blob: the task token would have %d bytes; at most %d", len(tok), MaxTokenBytes)
	}
	return tok, nil
}

// VerifyToken checks the MAC of tok in constant time, then decodes it and checks its
// expiry. It fails with ErrTokenMalformed for anything that is not a token's wire form,
// ErrSignature when the MAC does not match (a changed or foreign token), and ErrExpired
// once Expires has passed.
func (s *Signer) VerifyToken(tok string) (Token, error) {
	payload, mac, err := splitToken(tok)
	if err != nil {
		return Token{}, err
	}
	if !hmac.Equal(mac, s.tokenMAC(payload)) {
		return Token{}, ErrSignature
	}
	t, err := decodeToken(payload)
	if err != nil {
		return Token{}, err
	}
	if !s.now().Before(t.Expires) {
		return Token{}, ErrExpired
	}
	return t, nil
}

// tokenMAC is the HMAC-SHA256 of a token's payload under the token domain.
func (s *Signer) tokenMAC(payload []byte) []byte {
	m := hmac.New(sha256.New, s.key)
	var buf [binary.MaxVarintLen64]byte
	m.Write(binary.AppendUvarint(buf[:0], uint64(len(tokenDomain))))
	m.Write([]byte(tokenDomain))
	m.Write(payload)
	return m.Sum(nil)
}

// splitToken returns the payload and MAC of a token's wire form.
func splitToken(tok string) (payload, mac []byte, err error) {
	rest, ok := strings.CutPrefix(tok, TokenPrefix)
	if !ok || len(tok) > MaxTokenBytes {
		return nil, nil, errorsJoin(ErrTokenMalformed, "not a task token")
	}
	p64, m64, ok := strings.Cut(rest, ".")
	if !ok {
		return nil, nil, errorsJoin(ErrTokenMalformed, "no MAC")
	}
	enc := base64.RawURLEncoding.Strict()
	if payload, err = enc.DecodeString(p64); err != nil {
		return nil, nil, errorsJoin(ErrTokenMalformed, "bad payload encoding")
	}
	if mac, err = enc.DecodeString(m64); err != nil || len(mac) != sha256.Size {
		return nil, nil, errorsJoin(ErrTokenMalformed, "bad MAC encoding")
	}
	return payload, mac, nil
}

// encodeToken is the payload of t.
func encodeToken(t Token) []byte {
	b := []byte{tokenVersion}
	str := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	str(t.Task)
	str(t.Agent)
	b = binary.AppendVarint(b, t.Expires.UnixMilli())
	b = binary.AppendUvarint(b, uint64(len(t.Scopes)))
	for _, s := range t.Scopes {
		m := byte('G')
		if s.Method == http.MethodPut {
			m = 'P'
		}
		b = append(b, m)
		str(s.Key)
		b = binary.AppendVarint(b, s.Offset)
		b = binary.AppendVarint(b, s.Length)
	}
	return b
}

// decodeToken decodes a payload strictly: the version, every field within its bounds,
// integers in their shortest form, nothing after the last scope.
func decodeToken(p []byte) (Token, error) {
	d := tokenDecoder{p: p}
	if v := d.byte(); v != tokenVersion {
		return Token{}, errorsJoin(ErrTokenMalformed, "unknown version")
	}
	var t Token
	t.Task, t.Agent = d.str(MaxIDBytes), d.str(MaxIDBytes)
	t.Expires = time.UnixMilli(d.varint())
	n := d.uvarint()
	if d.err == nil && (n == 0 || n > MaxTokenScopes) {
		d.fail("scope count")
	}
	for i := uint64(0); i < n && d.err == nil; i++ {
		var s Scope
		switch d.byte() {
		case 'G':
			s.Method = http.MethodGet
		case 'P':
			s.Method = http.MethodPut
		default:
			d.fail("method")
		}
		s.Key = d.str(MaxKeyBytes)
		s.Offset, s.Length = d.varint(), d.varint()
		t.Scopes = append(t.Scopes, s)
	}
	if d.err == nil && len(d.p) != 0 {
		d.fail("trailing bytes")
	}
	if d.err != nil {
		return Token{}, d.err
	}
	if err := checkToken(t); err != nil {
		return Token{}, errorsJoin(ErrTokenMalformed, err.Error())
	}
	return t, nil
}

// tokenDecoder reads a payload; the first failure sticks.
type tokenDecoder struct {
	p   []byte
	err error
}

func (d *tokenDecoder) fail(what string) {
	if d.err == nil {
		d.err = errorsJoin(ErrTokenMalformed, "bad "+what)
	}
	d.p = nil
}

func (d *tokenDecoder) byte() byte {
	if d.err != nil || len(d.p) == 0 {
		d.fail("length")
		return 0
	}
	c := d.p[0]
	d.p = d.p[1:]
	return c
}

func (d *tokenDecoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.p)
	if n <= 0 || n != len(binary.AppendUvarint(nil, v)) {
		d.fail("integer")
		return 0
	}
	d.p = d.p[n:]
	return v
}

func (d *tokenDecoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.p)
	if n <= 0 || n != len(binary.AppendVarint(nil, v)) {
		d.fail("integer")
		return 0
	}
	d.p = d.p[n:]
	return v
}

func (d *tokenDecoder) str(limit int) string {
	n := d.uvarint()
	if d.err != nil {
		return ""
	}
	if n > uint64(min(limit, len(d.p))) { //nolint:gosec // both are non-negative lengths
		d.fail("string length")
		return ""
	}
	s := string(d.p[:n])
	d.p = d.p[n:]
	return s
}
