package server

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/gatehouse-dev/gatehouse/auth/tlsconf"
	gatehousev1 "github.com/gatehouse-dev/gatehouse/schemas/gen/gatehouse/v1"
)

// TestNektePeerOverMTLS: with mTLS on the internal listener, replicas reach each other's
// persist: false envelopes over it, each presenting its own certificate (server and client
// auth, one CA); a plaintext caller is refused.
func TestNektePeerOverMTLS(t *testing.T) {
	f := newTLSFixture(t)
	certPEM, keyPEM, err := f.ca.Issue(tlsconf.Leaf{CommonName: "replica", IPs: []net.IP{net.IPv4(127, 0, 0, 1)},
		Server: true, Client: true, Validity: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	cert, key := filepath.Join(f.dir, "replica.pem"), filepath.Join(f.dir, "replica-key.pem")
	if err := os.WriteFile(cert, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	yaml := strings.Replace(peerConfig, `internal: {addr: "127.0.0.1:0"}`,
		`internal: {addr: "127.0.0.1:0", tls: {cert_file: "`+cert+`", key_file: "`+key+`", client_ca_file: "`+f.caFile+`"}}`, 1)
	kv := newWrittenKV(t)
	a := startOptions(t, mustParse(t, yaml), Options{State: kv}, nil)
	b := startOptions(t, mustParse(t, yaml), Options{State: kv}, nil)

	if m := result(t, a.rpc(t, contextCall("share", "prefs"))); m["status"] != "stored" {
		t.Fatalf("share: %v", m)
	}
	m := result(t, b.rpc(t, contextCall("request", "prefs")))
	if data, _ := json.Marshal(m["data"]); string(data) != `{"lang":"peer-marker"}` {
		t.Fatalf("request on the other replica, over mTLS: %v", m)
	}

	_, addr, secret := kv.locator(t)
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := gatehousev1.NewPeerServiceClient(conn).GetEnvelope(ctx,
		&gatehousev1.GetEnvelopeRequest{Ref: ctxRef(kvOwner(t, kv), "prefs", secret)}); err == nil {
		t.Fatal("a plaintext caller reached PeerService on the mTLS listener")
	}
}
