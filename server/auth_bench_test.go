package server

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/gatehouse-dev/gatehouse/demo"
)

// authBenchRouting is the calculator backend behind a policy that requires calc:read of
// subtract; the callers of both sub-benchmarks hold it.
const authBenchRouting = `
routing:
  grpc:
    - name: calculator
      address: %q
      descriptors: {reflection: true}
      methods: {subtract: calculator.v1.CalculatorService/Subtract}
      unwrap: {subtract: result}
      downstream_token: {audience: calc}
policy:
  rules:
    - {id: subtract, match: {method: subtract}, scopes: ["calc:read"], mutation: READ_ONLY}
`

// BenchmarkAuthEndToEnd measures the cost of zero-trust auth on a JSON-RPC → gRPC call:
// "jwt" authenticates the caller's RS256 token (as an identity provider would sign it; the
// verified-token cache answers all but the first call) and mints an EdDSA hop token for the
// backend on every call; "jwt_nocache" verifies the signature on every call too;
// "anonymous" runs the same policy for an anonymous caller with the same scopes and mints
// nothing. The figures of interest are jwt calls/s ÷ anonymous calls/s, and jwt_nocache's.
func BenchmarkAuthEndToEnd(b *testing.B) {
	addr, stop, err := demo.StartCalculator("127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = stop() })
	routing := fmt.Sprintf(authBenchRouting, addr)

	b.Run("anonymous", func(b *testing.B) {
		url := benchGatewayConfig(b, `auth: {anonymous: {scopes: ["calc:read"]}}`+"\n"+routing)
		waitBackend(b, url)
		benchPost(b, url, subtractBody, `"result":19`)
	})
	for _, cache := range []string{"jwt", "jwt_nocache"} {
		b.Run(cache, func(b *testing.B) { benchJWT(b, routing, cache == "jwt") })
	}
}

// benchJWT measures JSON-RPC → gRPC calls of a caller presenting an RS256 token, with the
// verified-token cache on (the same token every call is verified once) or off.
func benchJWT(b *testing.B, routing string, cached bool) {
	cache := "{disabled: true}"
	if cached {
		cache = "{}"
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		b.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		b.Fatal(err)
	}
	pub := filepath.Join(b.TempDir(), "idp.pem")
	if err := os.WriteFile(pub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600); err != nil {
		b.Fatal(err)
	}
	tok, err := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{
		"iss": "https://idp.test", "aud": "gatehouse", "sub": "alice", "scope": "calc:read calc:write",
		"iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix(),
	}).SignedString(key)
	if err != nil {
		b.Fatal(err)
	}
	url := benchGatewayConfig(b, fmt.Sprintf(`auth:
  jwt: {issuers: [{issuer: "https://idp.test", audiences: [gatehouse], pem_files: [%q]}], cache: %s}
  keyring: {algorithm: EdDSA}
`, pub, cache)+routing)
	header := []string{"Authorization", "Bearer " + tok}
	waitBackend(b, url, header...)
	benchPost(b, url, subtractBody, `"result":19`, header...)
}

// waitBackend waits until subtract answers through url: descriptors load in the background.
func waitBackend(b *testing.B, url string, header ...string) {
	b.Helper()
	for i := 0; post(benchClient(), url, subtractBody, `"result":19`, header...) != nil; i++ {
		if i > 200 {
			b.Fatal("backend never became ready")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
