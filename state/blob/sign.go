package blob

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"
)

// Grant is what one signed URL allows: Method on the object Key, for one task and one
// agent, until Expires, over the bytes [Offset, Offset+Length) for GET, or for PUT an object
// of at most Length bytes (Offset 0).
type Grant struct {
	Method string
	Key    string
	Task   string
	Agent  string
	// Expires is the instant the URL stops working, at second precision.
	Expires time.Time
	Offset  int64
	Length  int64
}

// The query parameters of a signed URL, in the order Sign writes them.
const (
	ParamTask      = "task"
	ParamAgent     = "agent"
	ParamExpires   = "exp"
	ParamOffset    = "off"
	ParamLength    = "len"
	ParamSignature = "sig"
)

// MaxIDBytes bounds a task or agent id in a grant.
const MaxIDBytes = 256

// MinKeyBytes is the shortest signing key a Signer accepts.
const MinKeyBytes = 32

// macDomain separates these MACs from any other use of the key.
const macDomain = "gatehouse-blob-url-v1"

// Signer signs and verifies grants with HMAC-SHA256. Every replica that serves URLs the
// others issued must hold the same key. It is safe for concurrent use.
type Signer struct {
	key []byte
	now func() time.Time
}

// NewSigner returns a signer over key (at least MinKeyBytes bytes); now is the clock (nil:
// time.Now).
func NewSigner(key []byte, now func() time.Time) (*Signer, error) {
	if len(key) < MinKeyBytes {
		return nil, fmt.Errorf("blob: the signing key has %d bytes; it needs at least %d", len(key), MinKeyBytes)
	}
	if now == nil {
		now = time.Now
	}
	return &Signer{key: append([]byte(nil), key...), now: now}, nil
}

// RandomKey returns a new random signing key, for a single replica without a configured one.
func RandomKey() []byte {
	k := make([]byte, MinKeyBytes)
	_, _ = rand.Read(k) // crypto/rand.Read never fails (Go 1.24+)
	return k
}

// Sign returns the query string (without '?') that carries g and its signature.
func (s *Signer) Sign(g Grant) string {
	q := url.Values{}
	q.Set(ParamTask, g.Task)
	q.Set(ParamAgent, g.Agent)
	q.Set(ParamExpires, strconv.FormatInt(g.Expires.Unix(), 10))
	q.Set(ParamOffset, strconv.FormatInt(g.Offset, 10))
	q.Set(ParamLength, strconv.FormatInt(g.Length, 10))
	q.Set(ParamSignature, base64.RawURLEncoding.EncodeToString(s.mac(g)))
	return q.Encode()
}

// mac is the HMAC-SHA256 of g: each field length-prefixed, so no two grants share an input.
func (s *Signer) mac(g Grant) []byte {
	m := hmac.New(sha256.New, s.key)
	var buf [binary.MaxVarintLen64]byte
	for _, f := range []string{macDomain, g.Method, g.Key, g.Task, g.Agent} {
		m.Write(binary.AppendUvarint(buf[:0], uint64(len(f))))
		m.Write([]byte(f))
	}
	for _, n := range []int64{g.Expires.Unix(), g.Offset, g.Length} {
		m.Write(binary.AppendVarint(buf[:0], n))
	}
	return m.Sum(nil)
}

// Verify parses the grant of a request for method on key whose query string is rawQuery,
// and checks its signature in constant time, then its expiry. It fails with ErrUnsigned
// for a missing, repeated, unknown or malformed parameter, ErrSignature when the MAC does
// not match (any field, the method or the key changed), and ErrExpired once Expires has
// passed. On success the grant is returned with Method and Key set.
func (s *Signer) Verify(method, key, rawQuery string) (Grant, error) {
	g, sig, err := parseGrant(rawQuery)
	if err != nil {
		return Grant{}, err
	}
	g.Method, g.Key = method, key
	if !hmac.Equal(sig, s.mac(g)) {
		return Grant{}, ErrSignature
	}
	if !s.now().Before(g.Expires) {
		return Grant{}, ErrExpired
	}
	return g, nil
}

// parseGrant decodes the parameters of a signed URL strictly: each exactly once, no other,
// integers in canonical decimal form, ids of printable UTF-8.
func parseGrant(rawQuery string) (Grant, []byte, error) {
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return Grant{}, nil, errorsJoin(ErrUnsigned, "malformed query")
	}
	names := []string{ParamTask, ParamAgent, ParamExpires, ParamOffset, ParamLength, ParamSignature}
	if len(q) != len(names) {
		return Grant{}, nil, errorsJoin(ErrUnsigned, "missing or unknown parameters")
	}
	for _, n := range names {
		if len(q[n]) != 1 {
			return Grant{}, nil, errorsJoin(ErrUnsigned, "parameter "+n+" missing or repeated")
		}
	}
	g := Grant{Task: q.Get(ParamTask), Agent: q.Get(ParamAgent)}
	if !validID(g.Task) || !validID(g.Agent) {
		return Grant{}, nil, errorsJoin(ErrUnsigned, "malformed task or agent id")
	}
	var exp int64
	for _, f := range []struct {
		name string
		dst  *int64
	}{{ParamExpires, &exp}, {ParamOffset, &g.Offset}, {ParamLength, &g.Length}} {
		v := q.Get(f.name)
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 || strconv.FormatInt(n, 10) != v {
			return Grant{}, nil, errorsJoin(ErrUnsigned, "malformed "+f.name)
		}
		*f.dst = n
	}
	g.Expires = time.Unix(exp, 0)
	sig, err := base64.RawURLEncoding.Strict().DecodeString(q.Get(ParamSignature))
	if err != nil || len(sig) != sha256.Size {
		return Grant{}, nil, errorsJoin(ErrUnsigned, "malformed signature")
	}
	return g, sig, nil
}

// validID reports whether id can name a task or an agent in a grant: 1 to MaxIDBytes bytes
// of UTF-8 without control characters.
func validID(id string) bool {
	if id == "" || len(id) > MaxIDBytes || !utf8.ValidString(id) {
		return false
	}
	for _, r := range id {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// checkGrant checks the fields of a grant Sign is asked for.
func checkGrant(g Grant) error {
	switch {
	case g.Method != http.MethodGet && g.Method != http.MethodPut:
		return errors.New("blob: a grant is for GET or PUT")
	case !ValidKey(g.Key):
		return ErrInvalidKey
	case !validID(g.Task) || !validID(g.Agent):
		return fmt.Errorf("blob: task and agent ids must be 1 to %d bytes of printable UTF-8", MaxIDBytes)
	case g.Offset < 0 || g.Length < 0:
		return errorsJoin(ErrRange, "negative offset or length")
	}
	return nil
}
