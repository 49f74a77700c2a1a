package auth_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"

	"github.com/gatehouse-dev/gatehouse/auth"
	"github.com/gatehouse-dev/gatehouse/gateway"
)

// now is the fixed clock of the tests that do not need time to pass.
var now = time.Unix(1_800_000_000, 0)

func clock() time.Time { return now }

// Test keys, generated once per test binary.
var (
	rsaKey      = sync.OnceValue(func() *rsa.PrivateKey { return must(rsa.GenerateKey(rand.Reader, 2048)) })
	rsaKey2     = sync.OnceValue(func() *rsa.PrivateKey { return must(rsa.GenerateKey(rand.Reader, 2048)) })
	attackerRSA = sync.OnceValue(func() *rsa.PrivateKey { return must(rsa.GenerateKey(rand.Reader, 2048)) })
	ecKey       = sync.OnceValue(func() *ecdsa.PrivateKey { return must(ecdsa.GenerateKey(elliptic.P256(), rand.Reader)) })
	edKey       = sync.OnceValue(func() ed25519.PrivateKey {
		_, k, err := ed25519.GenerateKey(rand.Reader)
		return must(k, err)
	})
)

// secret is the HMAC secret of the secret issuer (48 bytes: HS256 and HS384 allowed).
const secret = "0123456789abcdef0123456789abcdef0123456789abcdef"

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

var seg = base64.RawURLEncoding.EncodeToString

// signRaw signs header and payload, exactly as given, with alg and key.
func signRaw(t testing.TB, alg string, key any, header, payload string) string {
	t.Helper()
	in := seg([]byte(header)) + "." + seg([]byte(payload))
	sig, err := jwt.GetSigningMethod(alg).Sign(in, key)
	if err != nil {
		t.Fatalf("signing %s: %v", alg, err)
	}
	return in + "." + seg(sig)
}

// sign signs claims with a header of alg, kid (when not empty) and extra members.
func sign(t testing.TB, alg, kid string, key any, claims map[string]any, extraHeader ...any) string {
	t.Helper()
	h := map[string]any{"alg": alg, "typ": "JWT"}
	if kid != "" {
		h["kid"] = kid
	}
	for i := 0; i+1 < len(extraHeader); i += 2 {
		h[extraHeader[i].(string)] = extraHeader[i+1]
	}
	return signRaw(t, alg, key, string(must(json.Marshal(h))), string(must(json.Marshal(claims))))
}

// claims returns valid claims of iss, with overrides: a nil value deletes the claim.
func claims(iss string, overrides ...any) map[string]any {
	c := map[string]any{
		"iss": iss, "sub": "alice", "aud": "gatehouse",
		"iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(), "scope": "read write",
	}
	for i := 0; i+1 < len(overrides); i += 2 {
		if overrides[i+1] == nil {
			delete(c, overrides[i].(string))
		} else {
			c[overrides[i].(string)] = overrides[i+1]
		}
	}
	return c
}

// jwk returns the public JWK of key.
func jwk(t testing.TB, key crypto.PublicKey, kid, alg string) jwkset.JWKMarshal {
	t.Helper()
	j, err := jwkset.NewJWKFromKey(key, jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{KID: kid, ALG: jwkset.ALG(alg), USE: jwkset.UseSig}})
	if err != nil {
		t.Fatalf("jwk: %v", err)
	}
	return j.Marshal()
}

// jwksServer serves a JWK Set that tests may change, counting requests.
type jwksServer struct {
	*httptest.Server
	hits atomic.Int64
	mu   sync.Mutex
	keys []jwkset.JWKMarshal
}

func newJWKSServer(t testing.TB, keys ...jwkset.JWKMarshal) *jwksServer {
	t.Helper()
	s := &jwksServer{keys: keys}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s.hits.Add(1)
		s.mu.Lock()
		body := must(json.Marshal(jwkset.JWKSMarshal{Keys: s.keys}))
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *jwksServer) set(keys ...jwkset.JWKMarshal) {
	s.mu.Lock()
	s.keys = keys
	s.mu.Unlock()
}

// logBuffer is a concurrency-safe log destination.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// open opens an Authenticator on the fixed clock, logging to logs, closed at cleanup.
func open(t testing.TB, cfg auth.Config, logs *logBuffer) *auth.Authenticator {
	t.Helper()
	opts := auth.Options{Now: clock}
	if logs != nil {
		opts.Logger = logs.logger()
	}
	a, err := auth.Open(context.Background(), cfg, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = a.Close() })
	return a
}

// writeFile writes data to name in a test directory and returns its path.
func writeFile(t testing.TB, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func publicPEM(t testing.TB, key crypto.PublicKey) []byte {
	t.Helper()
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: must(x509.MarshalPKIXPublicKey(key))})
}

func privatePEM(t testing.TB, key crypto.Signer) []byte {
	t.Helper()
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: must(x509.MarshalPKCS8PrivateKey(key))})
}

// bearer authenticates a bearer token.
func bearer(a gateway.Authenticator, tok string) (gateway.Principal, error) {
	return a.Authenticate(context.Background(), gateway.Credentials{Bearer: tok})
}

// leaks returns the parts of tok found in any of texts: the whole token, or any of its
// segments of 8 characters or more.
func leaks(tok string, texts ...string) []string {
	var found []string
	parts := append([]string{tok}, strings.Split(tok, ".")...)
	for _, text := range texts {
		for _, p := range parts {
			if len(p) >= 8 && strings.Contains(text, p) {
				found = append(found, p)
			}
		}
	}
	return found
}
