package mcpface

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"hash"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

// A session ID is a token the gateway signs (session.go says what it carries and why).

// Sizes of a session token's payload.
const (
	sessionRandBytes  = 16
	sessionOwnerBytes = 8
	sessionFixedBytes = sessionRandBytes + 8 + 1 + sessionOwnerBytes
	// maxSessionVersionBytes bounds the protocol version carried in a token
	// ("2025-11-25" is 10 bytes).
	maxSessionVersionBytes = 32
)

// Client capability bits carried in a session token.
const (
	capSampling uint8 = 1 << iota
	capSamplingContext
	capSamplingTools
	capElicitation
	capElicitationForm
	capElicitationURL
	capRoots
	capRootsListChanged
)

// capabilityBits packs the capabilities a token carries.
func capabilityBits(c mcp.ClientCapabilities) uint8 {
	var b uint8
	set := func(on bool, bit uint8) {
		if on {
			b |= bit
		}
	}
	set(c.Sampling != nil, capSampling)
	set(c.Sampling != nil && c.Sampling.Context != nil, capSamplingContext)
	set(c.Sampling != nil && c.Sampling.Tools != nil, capSamplingTools)
	set(c.Elicitation != nil, capElicitation)
	set(c.Elicitation != nil && c.Elicitation.Form != nil, capElicitationForm)
	set(c.Elicitation != nil && c.Elicitation.URL != nil, capElicitationURL)
	set(c.Roots != nil, capRoots)
	set(c.Roots != nil && c.Roots.ListChanged, capRootsListChanged)
	return b
}

// capabilitiesOf unpacks capabilityBits.
func capabilitiesOf(b uint8) mcp.ClientCapabilities {
	var c mcp.ClientCapabilities
	present := func(bit uint8) *struct{} {
		if b&bit == 0 {
			return nil
		}
		return &struct{}{}
	}
	if b&capSampling != 0 {
		c.Sampling = &mcp.SamplingCapability{Context: present(capSamplingContext), Tools: present(capSamplingTools)}
	}
	if b&capElicitation != 0 {
		c.Elicitation = &mcp.ElicitationCapability{Form: present(capElicitationForm), URL: present(capElicitationURL)}
	}
	if b&capRoots != 0 {
		c.Roots = &struct {
			ListChanged bool `json:"listChanged,omitempty"`
		}{ListChanged: b&capRootsListChanged != 0}
	}
	return c
}

// sessionToken is a session ID whose signature and age were verified.
type sessionToken struct {
	// name is the base64url of the random part: the session's name in the store.
	name    string
	issued  time.Time
	caps    uint8
	owner   sessionOwner
	version string
}

// sessionOwner identifies the caller a session is bound to.
type sessionOwner [sessionOwnerBytes]byte

// ownerOf returns the owner of the sessions p opens.
func ownerOf(p gateway.Principal) sessionOwner {
	sum := sha256.Sum256([]byte(p.Owner()))
	return sessionOwner(sum[:sessionOwnerBytes])
}

// callerOwns reports whether the caller of ctx (the face's authenticated principal) owns t;
// a context without one (mcp-go's own bookkeeping) is not asked.
func callerOwns(ctx context.Context, t sessionToken) bool {
	p, ok := ctx.Value(principalKey{}).(gateway.Principal)
	return !ok || ownerOf(p) == t.owner
}

// sessionSigner issues and verifies session IDs.
type sessionSigner struct {
	key []byte
	ttl time.Duration
	now func() time.Time
	// macs holds HMACs keyed with key, so that verifying the session ID of every request
	// does not derive the keyed state again (hmac.New hashes the key's pads each time).
	macs sync.Pool // hash.Hash
}

// b64 encodes tokens; strict, so that each token has one spelling.
var b64 = base64.RawURLEncoding.Strict()

// issue returns a new session ID bound to owner, carrying caps and the protocol version.
func (s *sessionSigner) issue(owner sessionOwner, caps uint8, version string) string {
	if len(version) > maxSessionVersionBytes {
		version = ""
	}
	payload := make([]byte, sessionFixedBytes, sessionFixedBytes+len(version))
	// crypto/rand.Read never fails (it crashes the program instead).
	_, _ = rand.Read(payload[:sessionRandBytes])
	binary.BigEndian.PutUint64(payload[sessionRandBytes:], uint64(s.now().UnixMilli()))
	payload[sessionRandBytes+8] = caps
	copy(payload[sessionRandBytes+9:], owner[:])
	payload = append(payload, version...)
	return b64.EncodeToString(payload) + "." + b64.EncodeToString(s.mac(payload))
}

func (s *sessionSigner) mac(payload []byte) []byte {
	m, _ := s.macs.Get().(hash.Hash)
	if m == nil {
		m = hmac.New(sha256.New, s.key)
	} else {
		m.Reset()
	}
	m.Write(payload)
	sum := m.Sum(nil)
	s.macs.Put(m)
	return sum
}

// verify checks a session ID's signature and age: errSessionInvalid, errSessionExpired.
func (s *sessionSigner) verify(id string) (sessionToken, error) {
	enc, sig, ok := strings.Cut(id, ".")
	if !ok || len(enc) > b64.EncodedLen(sessionFixedBytes+maxSessionVersionBytes) {
		return sessionToken{}, errSessionInvalid
	}
	payload, err := b64.DecodeString(enc)
	if err != nil || len(payload) < sessionFixedBytes {
		return sessionToken{}, errSessionInvalid
	}
	mac, err := b64.DecodeString(sig)
	if err != nil || !hmac.Equal(mac, s.mac(payload)) {
		return sessionToken{}, errSessionInvalid
	}
	t := sessionToken{
		name:    enc[:b64.EncodedLen(sessionRandBytes)],
		issued:  time.UnixMilli(int64(binary.BigEndian.Uint64(payload[sessionRandBytes:]))), //nolint:gosec // signed by us from a positive time
		caps:    payload[sessionRandBytes+8],
		owner:   sessionOwner(payload[sessionRandBytes+9 : sessionFixedBytes]),
		version: string(payload[sessionFixedBytes:]),
	}
	if !s.now().Before(t.expires(s.ttl)) {
		return sessionToken{}, errSessionExpired
	}
	return t, nil
}

func (t sessionToken) expires(ttl time.Duration) time.Time { return t.issued.Add(ttl) }
