package mcpface

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

// The requestState the face hands a 2026-07-28 caller with an input_required result is a
// token it signs, not a key into memory: base64url(payload) "." base64url(HMAC-SHA256(key,
// "gatehouse mcp mrtr\x00" payload)), the key being mcp_face.session_key (so any replica
// verifies it; the prefix keeps a requestState from ever passing for a session ID). The
// payload names the process holding the call and the call, counts the round, and binds
// the token to its caller, its method and name, and an expiry:
//
//	version(1) owner(16) call(16) round(4) expires-unix-ms(8) principal(16) target(16)
const (
	mrtrStateVersion = 1
	mrtrIDBytes      = 16
	mrtrHashBytes    = 16
	mrtrPayloadBytes = 1 + 2*mrtrIDBytes + 4 + 8 + 2*mrtrHashBytes
	mrtrMACPrefix    = "gatehouse mcp mrtr\x00"
)

// mrtrID names a process (owner) or one of its calls.
type mrtrID [mrtrIDBytes]byte

func (id mrtrID) String() string { return hex.EncodeToString(id[:]) }

// mrtrState is a verified requestState.
type mrtrState struct {
	owner     mrtrID
	call      mrtrID
	round     uint32
	expires   time.Time
	principal [mrtrHashBytes]byte
	target    [mrtrHashBytes]byte
}

// key names the round in the single-use record.
func (s mrtrState) key() string {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], s.round)
	return s.call.String() + hex.EncodeToString(b[:])
}

// Why a requestState is refused; each is a reason in the error's data.
var (
	errStateMalformed = errors.New("malformed")
	errStateSignature = errors.New("bad signature")
	errStateExpired   = errors.New("expired")
)

// principalHash binds a token to its caller: the issuer of its token (none for API keys
// and anonymous callers) and its subject.
func principalHash(p gateway.Principal) (h [mrtrHashBytes]byte) {
	iss, _ := p.Claims["iss"].(string)
	anon := "0"
	if p.Anonymous {
		anon = "1"
	}
	sum := sha256.Sum256([]byte("principal\x00" + iss + "\x00" + p.Subject + "\x00" + anon))
	copy(h[:], sum[:])
	return h
}

// targetHash binds a token to the request it continues: its method and the tool or prompt.
func targetHash(method, name string) (h [mrtrHashBytes]byte) {
	sum := sha256.Sum256([]byte("target\x00" + method + "\x00" + name))
	copy(h[:], sum[:])
	return h
}

// mrtrSigner issues and verifies requestStates.
type mrtrSigner struct{ key []byte }

func (s mrtrSigner) mac(payload []byte) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(mrtrMACPrefix))
	m.Write(payload)
	return m.Sum(nil)
}

// issue returns the token of st.
func (s mrtrSigner) issue(st mrtrState) string {
	p := make([]byte, 0, mrtrPayloadBytes)
	p = append(p, mrtrStateVersion)
	p = append(p, st.owner[:]...)
	p = append(p, st.call[:]...)
	p = binary.BigEndian.AppendUint32(p, st.round)
	p = binary.BigEndian.AppendUint64(p, uint64(st.expires.UnixMilli()))
	p = append(p, st.principal[:]...)
	p = append(p, st.target[:]...)
	return b64.EncodeToString(p) + "." + b64.EncodeToString(s.mac(p))
}

// verify checks a token's form, signature and expiry at now.
func (s mrtrSigner) verify(token string, now time.Time) (mrtrState, error) {
	enc, sig, ok := strings.Cut(token, ".")
	if !ok || len(enc) != b64.EncodedLen(mrtrPayloadBytes) || len(sig) != b64.EncodedLen(sha256.Size) {
		return mrtrState{}, errStateMalformed
	}
	p, err := b64.DecodeString(enc)
	if err != nil || len(p) != mrtrPayloadBytes || p[0] != mrtrStateVersion {
		return mrtrState{}, errStateMalformed
	}
	mac, err := b64.DecodeString(sig)
	if err != nil || !hmac.Equal(mac, s.mac(p)) {
		return mrtrState{}, errStateSignature
	}
	var st mrtrState
	p = p[1:]
	p = p[copy(st.owner[:], p):]
	p = p[copy(st.call[:], p):]
	st.round = binary.BigEndian.Uint32(p)
	st.expires = time.UnixMilli(int64(binary.BigEndian.Uint64(p[4:]))) //nolint:gosec // written from a UnixMilli
	p = p[12:]
	p = p[copy(st.principal[:], p):]
	copy(st.target[:], p)
	if !now.Before(st.expires) {
		return mrtrState{}, errStateExpired
	}
	return st, nil
}
