package server

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/gatehouse-dev/gatehouse/auth"
)

// devJWTConfig is baseConfig accepting tokens of the development issuer of configs/examples
// instead of anonymous callers.
func devJWTConfig(t *testing.T) string {
	t.Helper()
	jwks, err := filepath.Abs("../configs/examples/dev-jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Replace(baseConfig, "  anonymous: {}\n",
		"  jwt:\n    issuers:\n      - {issuer: gatehouse-dev, audiences: [gatehouse], jwks_file: "+jwks+"}\n", 1)
}

// devToken mints a development token of sub (an hour long) with the development key, as
// `gatehouse token` does.
func devToken(t *testing.T, sub string) string {
	t.Helper()
	now := time.Now()
	return signDev(t, map[string]any{"iss": "gatehouse-dev", "sub": sub, "aud": "gatehouse",
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix()})
}

// apiKeyHash is the auth.api_keys hash of key.
func apiKeyHash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// signDev signs claims with configs/examples/dev-signing-key.pem.
func signDev(t *testing.T, claims map[string]any) string {
	t.Helper()
	pem, err := os.ReadFile("../configs/examples/dev-signing-key.pem")
	if err != nil {
		t.Fatal(err)
	}
	key, err := auth.ParsePrivateKeyPEM(pem)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := auth.NewSigner(key, "")
	if err != nil {
		t.Fatal(err)
	}
	tok, err := signer.Sign(claims)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestWSBearerSubprotocol: a browser's bearer token offered as Sec-WebSocket-Protocol
// bearer.<token> authenticates the upgrade, and the server selects an offered subprotocol;
// a bad token, or one beside an Authorization header, is refused before the upgrade with
// 401 and a JSON-RPC error, without the token in the logs.
func TestWSBearerSubprotocol(t *testing.T) {
	ts := start(t, devJWTConfig(t), nil)
	url := "ws" + strings.TrimPrefix(ts.base, "http") + "/ws"
	tok := devToken(t, "alice")

	d := websocket.Dialer{Subprotocols: []string{"unknown.v1", "bearer." + tok}}
	c, resp, err := d.Dial(url, nil)
	if err != nil {
		t.Fatalf("dial with the bearer subprotocol: %v", err)
	}
	_ = resp.Body.Close()
	defer func() { _ = c.Close() }()
	if got := c.Subprotocol(); got != "bearer."+tok {
		t.Fatalf("selected subprotocol %q, want the offered bearer entry", got)
	}
	wsSend(t, c, `{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}`)
	if _, msg, err := c.ReadMessage(); err != nil || !strings.Contains(string(msg), `"result":19`) {
		t.Fatalf("call over the authenticated socket: %s, %v", msg, err)
	}

	tests := []struct {
		name      string
		protocols []string
		header    http.Header
		reason    string
	}{
		{"invalid token", []string{"bearer." + tok[:len(tok)-4] + "AAAA"}, nil, string(auth.ReasonBadSignature)},
		{"not a JWT", []string{"bearer.nope"}, nil, string(auth.ReasonMalformed)},
		{"empty token", []string{"bearer."}, nil, string(auth.ReasonMalformed)},
		{"two tokens", []string{"bearer." + tok, "bearer." + tok}, nil, string(auth.ReasonAmbiguous)},
		{"header and subprotocol", []string{"bearer." + tok}, http.Header{"Authorization": {"Bearer " + tok}}, string(auth.ReasonAmbiguous)},
		{"no credential", nil, nil, string(auth.ReasonNoCredential)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := websocket.Dialer{Subprotocols: tt.protocols}
			c, resp, err := d.Dial(url, tt.header)
			if c != nil {
				_ = c.Close()
				t.Fatal("upgraded")
			}
			if resp == nil {
				t.Fatalf("no response: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer ") {
				t.Fatalf("status %d, WWW-Authenticate %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
			}
			var r response
			if err := json.Unmarshal(body, &r); err != nil || r.Error == nil || r.Error.Code != 4001 || r.Error.Data["reason"] != tt.reason {
				t.Fatalf("body %s: want 4001 %q", body, tt.reason)
			}
		})
	}
	if strings.Contains(ts.logs.String(), tok[strings.LastIndexByte(tok, '.')+1:]) {
		t.Fatal("the logs contain the token")
	}
}
