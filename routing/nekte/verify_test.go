package nekte_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/capability"
	rn "github.com/gatehouse-dev/gatehouse/routing/nekte"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func TestVerifyChecks(t *testing.T) {
	e := newEnv(t)
	s := e.service(fastTasks())
	mustDelegate(t, s, "alice", delegate("t-1", "echo", `{"b": 2, "a": 1}`))
	out := sha(`{"text":"hi"}`)
	tests := []struct {
		name, params string
		code         schemas.Code
		want         []string // substrings of the result, or of the error's message
	}{
		{"hash", `{"task_id":"t-1","checks":["hash"]}`, 0,
			[]string{`{"task_id":"t-1","checks":["hash"],"status":"verified","hash":"` + out + `","hash_valid":true}`}},
		{"hash with result_hash", `{"task_id":"t-1","checks":["hash"],"result_hash":"` + strings.ToUpper(out) + `"}`, 0,
			[]string{`"hash_valid":true`}},
		{"hash mismatch", `{"task_id":"t-1","checks":["hash"],"result_hash":"` + sha("other") + `"}`, schemas.CodeVerificationFailed,
			[]string{"Verification failed: t-1: result_hash does not match the receipt's output hash"}},
		{"result_hash malformed", `{"task_id":"t-1","checks":["hash"],"result_hash":"abc"}`, schemas.CodeInvalidParams,
			[]string{"result_hash: must be the 64 hex digits of a SHA-256"}},
		{"sample", `{"task_id":"t-1","checks":["sample"],"budget":{"max_tokens":50,"detail_level":"minimal"}}`, 0,
			[]string{`"sample":{"matched":true,"output_sha256":"` + out + `","out":"text: hi","resolved_level":"minimal","ms":0}`}},
		{"source", `{"task_id":"t-1","checks":["source"]}`, 0,
			[]string{`"source":{"capability":"echo","kind":"builtin","source":"fake","h":"h-echo","input_sha256":"` + sha(`{"a":1,"b":2}`) + `","output_sha256":"` + out + `"`, `"alg":"EdDSA"`, `"receipt":"ey`}},
		{"all", `{"task_id":"t-1","checks":["source","hash","sample","hash"]}`, 0,
			[]string{`"checks":["source","hash","sample","hash"]`, `"hash_valid":true`, `"matched":true`, `"kid":"`}},
		{"no checks", `{"task_id":"t-1","checks":[]}`, schemas.CodeInvalidParams, []string{"checks: must name at least one check"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := call(t, s, "alice", nekte.MethodVerify, tt.params)
			got := ""
			if tt.code != 0 {
				got = wantCode(t, err, tt.code).Message()
			} else if err != nil {
				t.Fatal(err)
			} else {
				got = string(res.Value)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Fatalf("got %s\nwant it to contain %s", got, w)
				}
			}
		})
	}
}

func TestVerifyRefused(t *testing.T) {
	e := newEnv(t)
	var n atomic.Int32
	e.capability("drift", func(context.Context, json.RawMessage) (*gateway.Result, error) {
		return gateway.NewResult(fmt.Appendf(nil, `{"n":%d}`, n.Add(1))), nil
	}, deterministic)
	e.capability("random", returns(`{"r":4}`))
	e.capability("changes", returns(`{"c":1}`), deterministic)
	b := newBlocker(`{}`)
	e.capability("wait", b.run)
	s := e.service(fastTasks())
	for _, id := range []string{"drift", "random", "changes"} {
		mustDelegate(t, s, "alice", delegate("t-"+id, id, `{}`))
	}
	e.capability("changes", returns(`{"c":1}`), deterministic, func(c *capability.Capability) { c.Hash = "h-new" })
	openStream(t)(call(t, s, "alice", nekte.MethodDelegate, delegate("t-wait", "wait", `{}`)))
	waitFor(t, b.started, "the task to start")
	tests := []struct {
		name, params string
		code         schemas.Code
		message      string
	}{
		{"sample differs", `{"task_id":"t-drift","checks":["sample"]}`, schemas.CodeVerificationFailed,
			"Verification failed: t-drift: re-running the capability on the recorded input gave a different output"},
		{"not deterministic", `{"task_id":"t-random","checks":["sample"]}`, schemas.CodeInvalidParams,
			"Invalid params: the sample check re-runs only deterministic capabilities, and random is not; use hash or source"},
		{"capability changed", `{"task_id":"t-changes","checks":["sample"]}`, schemas.CodeVerificationFailed,
			"Verification failed: t-changes: capability changes changed since the task ran (h h-changes, now h-new)"},
		{"not completed", `{"task_id":"t-wait","checks":["hash"]}`, schemas.CodeVerificationFailed,
			"Verification failed: t-wait: the task has no receipt (it is running; only completed tasks have one)"},
		{"unknown task", `{"task_id":"nope","checks":["hash"]}`, schemas.CodeTaskNotFound, "Task not found: nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := call(t, s, "alice", nekte.MethodVerify, tt.params)
			if ge := wantCode(t, err, tt.code); ge.Message() != tt.message {
				t.Fatalf("message %q, want %q", ge.Message(), tt.message)
			}
		})
	}
	close(b.release)
}

// TestReceiptVerifiesWithThePublishedKey checks a receipt with the public key ReceiptKey
// publishes, and its claims against the task.
func TestReceiptVerifiesWithThePublishedKey(t *testing.T) {
	e := newEnv(t)
	s := e.service(fastTasks())
	mustDelegate(t, s, "alice", delegate("t-1", "echo", `{}`))
	var src struct {
		Source struct {
			Receipt string `json:"receipt"`
			KeyID   string `json:"kid"`
		} `json:"source"`
	}
	if err := json.Unmarshal([]byte(mustCall(t, s, "alice", nekte.MethodVerify, `{"task_id":"t-1","checks":["source"]}`)), &src); err != nil {
		t.Fatal(err)
	}
	var jwk map[string]string
	if err := json.Unmarshal(s.ReceiptKey(), &jwk); err != nil {
		t.Fatal(err)
	}
	if jwk["kty"] != "OKP" || jwk["crv"] != "Ed25519" || jwk["alg"] != "EdDSA" || jwk["use"] != "sig" || jwk["kid"] != src.Source.KeyID {
		t.Fatalf("jwk %v (kid of the receipt %s)", jwk, src.Source.KeyID)
	}
	x, err := base64.RawURLEncoding.DecodeString(jwk["x"])
	if err != nil {
		t.Fatal(err)
	}
	claims := jwt.MapClaims{}
	_, err = jwt.ParseWithClaims(src.Source.Receipt, claims, func(*jwt.Token) (any, error) { return ed25519.PublicKey(x), nil },
		jwt.WithValidMethods([]string{"EdDSA"}))
	if err != nil {
		t.Fatal(err)
	}
	ms := float64(e.clock.Now().UnixMilli())
	want := map[string]any{
		"iss": "gatehouse", "jti": "t-1", "task_id": "t-1", "cap": "echo", "h": "h-echo",
		"input_sha256": sha(`{}`), "output_sha256": sha(`{"text":"hi"}`), "created_at": ms, "completed_at": ms,
	}
	for k, v := range want {
		if claims[k] != v {
			t.Fatalf("claim %s = %v, want %v (claims %v)", k, claims[k], v, claims)
		}
	}
}

// writeKey writes key as PEM of blockType into a temporary file.
func writeKey(t *testing.T, blockType string, der []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "key.pem")
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: blockType, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func pkcs8(t *testing.T, key any) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

func TestReceiptKeysAcrossServices(t *testing.T) {
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	p256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	sec1, _ := x509.MarshalECPrivateKey(p256)
	tests := []struct {
		name, keyFile, alg string
		verifies           bool
	}{
		{"shared Ed25519", writeKey(t, "PRIVATE KEY", pkcs8(t, ed)), "EdDSA", true},
		{"shared P-256, PKCS #8", writeKey(t, "PRIVATE KEY", pkcs8(t, p256)), "ES256", true},
		{"shared P-256, SEC 1", writeKey(t, "EC PRIVATE KEY", sec1), "ES256", true},
		{"generated per process", "", "EdDSA", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			cfg := fastTasks()
			cfg.Receipts.KeyFile = tt.keyFile
			a, other := e.service(cfg), e.serviceWith(cfg, e.invoker)
			mustDelegate(t, a, "alice", delegate("t-1", "echo", `{}`))
			got := mustCall(t, a, "alice", nekte.MethodVerify, `{"task_id":"t-1","checks":["source"]}`)
			if !strings.Contains(got, `"alg":"`+tt.alg+`"`) {
				t.Fatalf("source %s, want alg %s", got, tt.alg)
			}
			_, err := call(t, other, "alice", nekte.MethodVerify, `{"task_id":"t-1","checks":["hash"]}`)
			if tt.verifies {
				if err != nil {
					t.Fatalf("verify on another service: %v", err)
				}
				return
			}
			ge := wantCode(t, err, schemas.CodeVerificationFailed)
			if !strings.Contains(ge.Message(), "signed by another gateway key") {
				t.Fatalf("message %q", ge.Message())
			}
		})
	}
}

func TestReceiptKeyFileRefused(t *testing.T) {
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	notPEM := filepath.Join(t.TempDir(), "x.pem")
	if err := os.WriteFile(notPEM, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, file, want string }{
		{"missing", filepath.Join(t.TempDir(), "none.pem"), "no such file"},
		{"not PEM", notPEM, "holds no PEM block"},
		{"public key block", writeKey(t, "PUBLIC KEY", []byte{1}), `PEM block "PUBLIC KEY" is not a private key`},
		{"RSA", writeKey(t, "PRIVATE KEY", pkcs8(t, rsaKey)), "cannot sign receipts"},
		{"P-384", writeKey(t, "PRIVATE KEY", pkcs8(t, p384)), "must be on P-256"},
		{"garbage DER", writeKey(t, "PRIVATE KEY", []byte{1, 2, 3}), "receipts.key_file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			cfg := fastTasks()
			cfg.Receipts.KeyFile = tt.file
			_, err := rn.New(cfg, rn.Options{KV: e.kv, Catalog: e.catalog, Invoker: e.invoker})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New: %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
