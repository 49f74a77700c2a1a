package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	grpccreds "google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/gatehouse-dev/gatehouse/auth/tlsconf"
	"github.com/gatehouse-dev/gatehouse/demo"
	gatehousev1 "github.com/gatehouse-dev/gatehouse/schemas/gen/gatehouse/v1"
)

// tlsFixture is a local CA with a server certificate for loopback in files, and client
// certificates: one the CA issued for the development SPIFFE id, one for another id, and one
// from a CA the gateway does not trust.
type tlsFixture struct {
	dir                       string
	ca                        *tlsconf.CA
	roots                     *x509.CertPool
	caFile, certFile, keyFile string
	client, other, stranger   tls.Certificate
}

func newTLSFixture(t testing.TB) *tlsFixture {
	t.Helper()
	f := &tlsFixture{dir: t.TempDir()}
	var err error
	if f.ca, err = tlsconf.NewCA("test CA", time.Hour); err != nil {
		t.Fatal(err)
	}
	f.roots = x509.NewCertPool()
	f.roots.AddCert(f.ca.Cert)
	f.caFile = filepath.Join(f.dir, "ca.pem")
	f.certFile = filepath.Join(f.dir, "server.pem")
	f.keyFile = filepath.Join(f.dir, "server-key.pem")
	if err := os.WriteFile(f.caFile, f.ca.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	f.rotate(t)
	f.client = f.clientCert(t, f.ca, tlsconf.DevClientID)
	f.other = f.clientCert(t, f.ca, "spiffe://gatehouse.local/other")
	foreign, err := tlsconf.NewCA("foreign CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	f.stranger = f.clientCert(t, foreign, tlsconf.DevClientID)
	return f
}

// rotate writes a new server certificate and key (each file replaced atomically, one after
// the other, as a cert manager does) and returns the new certificate's serial number.
func (f *tlsFixture) rotate(t testing.TB) string {
	t.Helper()
	certPEM, keyPEM, err := f.ca.Issue(tlsconf.Leaf{CommonName: "localhost", DNSNames: []string{"localhost"},
		IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Server: true, Validity: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := tlsconf.WriteFileAtomic(f.certFile, certPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := tlsconf.WriteFileAtomic(f.keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return c.Leaf.SerialNumber.String()
}

func (f *tlsFixture) clientCert(t testing.TB, ca *tlsconf.CA, id string) tls.Certificate {
	t.Helper()
	u, _ := url.Parse(id)
	certPEM, keyPEM, err := ca.Issue(tlsconf.Leaf{CommonName: "client", URIs: []*url.URL{u}, Client: true, Validity: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// tlsSection is a listener's tls section over the fixture's files.
func (f *tlsFixture) tlsSection(extra string) string {
	return fmt.Sprintf(`{cert_file: %q, key_file: %q, client_ca_file: %q%s}`, f.certFile, f.keyFile, f.caFile, extra)
}

// httpClient returns a client trusting the fixture's CA, presenting certs, speaking
// HTTP/2 when h2 (else HTTP/1.1 only), opening a connection per call unless keepAlive.
func (f *tlsFixture) httpClient(h2, keepAlive bool, certs ...tls.Certificate) *http.Client {
	tr := &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: f.roots, Certificates: certs, MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2: h2,
		DisableKeepAlives: !keepAlive,
	}
	if !h2 {
		tr.TLSClientConfig.NextProtos = []string{"http/1.1"}
	}
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// grpcClient dials the internal listener over TLS, presenting certs.
func (f *tlsFixture) grpcClient(t *testing.T, addr string, certs ...tls.Certificate) gatehousev1.GatewayServiceClient {
	t.Helper()
	creds := grpccreds.NewTLS(&tls.Config{RootCAs: f.roots, Certificates: certs, MinVersion: tls.VersionTLS12})
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return gatehousev1.NewGatewayServiceClient(conn)
}

// startTLS starts yaml (whose admin listener stays plaintext, for the readiness probe) and
// returns it with its boundary URL in https.
func startTLS(t *testing.T, yaml string) *testServer {
	t.Helper()
	ts := start(t, yaml, nil)
	ts.waitReadyWithin(20 * time.Second)
	ts.base = "https://" + ts.BoundaryAddr().String()
	return ts
}

// postWith sends a JSON-RPC body to url with client and returns the response's protocol and
// body.
func postWith(client *http.Client, url, body string) (string, string, error) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return "", "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return "", "", err
	}
	defer func() { _ = resp.Body.Close() }()
	out, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return resp.Proto, string(out), fmt.Errorf("%w: HTTP %d", errUnexpected, resp.StatusCode)
	}
	return resp.Proto, string(out), err
}

// tlsCalcConfig serves the calculator backend at %[1]s on a TLS boundary (%[2]s) and an mTLS
// internal listener (%[3]s), with the WebSocket and MCP faces on.
const tlsCalcConfig = `
server:
  boundary: {addr: "127.0.0.1:0", tls: %[2]s}
  admin: {addr: "127.0.0.1:0"}
  internal: {addr: "127.0.0.1:0", tls: %[3]s}
  shutdown_grace: 5s
websocket: {}
mcp_face: {}
auth: {anonymous: {}}
log: {level: debug}
routing:
  grpc:
    - name: calculator
      address: "%[1]s"
      descriptors: {reflection: true}
      methods: {subtract: calculator.v1.CalculatorService/Subtract}
      services:
        - {service: calculator.v1.CalculatorService, prefix: "calc.", naming: snake}
      unwrap: {subtract: result}
`

func startCalcBackend(t *testing.T) string {
	t.Helper()
	addr, stop, err := demo.StartCalculator("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stop() })
	return addr
}

// TestTLSEveryFace serves every face of the boundary over TLS (JSON-RPC over HTTP/1.1 and
// HTTP/2, SSE, WebSocket, MCP) and the internal gRPC face over mTLS.
func TestTLSEveryFace(t *testing.T) {
	f := newTLSFixture(t)
	ts := startTLS(t, fmt.Sprintf(tlsCalcConfig, startCalcBackend(t), f.tlsSection(", client_auth: none"), f.tlsSection("")))
	subtract := `{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}`

	for _, tt := range []struct {
		name  string
		h2    bool
		proto string
	}{{"rpc over HTTP/1.1", false, "HTTP/1.1"}, {"rpc over HTTP/2", true, "HTTP/2.0"}} {
		t.Run(tt.name, func(t *testing.T) {
			proto, body, err := postWith(f.httpClient(tt.h2, true), ts.base+"/rpc", subtract)
			if err != nil || proto != tt.proto || !strings.Contains(body, `"result":19`) {
				t.Fatalf("%s %s %v, want %s and result 19", proto, body, err, tt.proto)
			}
		})
	}
	t.Run("plaintext to the TLS boundary", func(t *testing.T) {
		if _, body, err := postWith(http.DefaultClient, "http://"+ts.BoundaryAddr().String()+"/rpc", subtract); err == nil {
			t.Fatalf("plaintext call answered: %s", body)
		}
	})
	t.Run("SSE over HTTP/2", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodPost, ts.base+"/rpc", strings.NewReader(`{"jsonrpc":"2.0","method":"calc.count","params":{"from":1,"to":3},"id":7}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "text/event-stream")
		resp, err := f.httpClient(true, true).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		var events []string
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				events = append(events, d)
			}
		}
		if resp.ProtoMajor != 2 || resp.Header.Get("Content-Type") != "text/event-stream" || len(events) != 4 ||
			events[3] != `{"jsonrpc":"2.0","result":{"messages":3},"id":7}` {
			t.Fatalf("%s %q: %q", resp.Proto, resp.Header.Get("Content-Type"), events)
		}
	})
	t.Run("WebSocket over TLS", func(t *testing.T) {
		d := websocket.Dialer{TLSClientConfig: &tls.Config{RootCAs: f.roots, MinVersion: tls.VersionTLS12}, HandshakeTimeout: 5 * time.Second}
		c, resp, err := d.Dial("wss://"+ts.BoundaryAddr().String()+"/ws", nil)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		defer func() { _ = c.Close() }()
		wsSend(t, c, subtract)
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, msg, err := c.ReadMessage()
		if err != nil || !strings.Contains(string(msg), `"result":19`) {
			t.Fatalf("%s %v", msg, err)
		}
	})
	t.Run("MCP over TLS", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodPost, ts.base+"/mcp", strings.NewReader(
			`{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}},"id":1}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := f.httpClient(true, true).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") == "" || !strings.Contains(string(body), `"protocolVersion"`) {
			t.Fatalf("HTTP %d %v: %s", resp.StatusCode, resp.Header, body)
		}
	})
	t.Run("internal gRPC over mTLS", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r, err := f.grpcClient(t, ts.InternalAddr().String(), f.client).Invoke(ctx, &gatehousev1.InvokeRequest{Method: "subtract", Params: []byte(`[42,23]`)})
		if err != nil || string(r.GetResult()) != "19" {
			t.Fatalf("%v %v", r, err)
		}
	})
}

// TestMTLSRefusesAtTheHandshake: a listener requiring client certificates refuses a client
// without one, or with one from a CA it does not trust, before any call.
func TestMTLSRefusesAtTheHandshake(t *testing.T) {
	f := newTLSFixture(t)
	ts := startTLS(t, fmt.Sprintf(tlsCalcConfig, startCalcBackend(t), f.tlsSection(""), f.tlsSection(", client_auth: require")))
	subtract := `{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}`
	tests := []struct {
		name  string
		certs []tls.Certificate
		ok    bool
	}{
		{"trusted client certificate", []tls.Certificate{f.client}, true},
		{"no client certificate", nil, false},
		{"certificate of another CA", []tls.Certificate{f.stranger}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name+" (boundary)", func(t *testing.T) {
			_, body, err := postWith(f.httpClient(false, false, tt.certs...), ts.base+"/rpc", subtract)
			if ok := err == nil && strings.Contains(body, `"result":19`); ok != tt.ok {
				t.Fatalf("answered %v (%s %v), want %v", ok, body, err, tt.ok)
			}
		})
		t.Run(tt.name+" (internal)", func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			r, err := f.grpcClient(t, ts.InternalAddr().String(), tt.certs...).Invoke(ctx, &gatehousev1.InvokeRequest{Method: "subtract", Params: []byte(`[42,23]`)})
			if tt.ok && (err != nil || string(r.GetResult()) != "19") {
				t.Fatalf("%v %v", r, err)
			}
			if !tt.ok && status.Code(err) != codes.Unavailable {
				t.Fatalf("%v %v, want the connection refused (Unavailable)", r, err)
			}
		})
	}
}

// TestClientCertIdentityReachesPolicy: a verified client certificate's SPIFFE id is the
// caller's subject, which a policy rule can name, on the internal face (mTLS required) and
// on the boundary (certificates verified when given).
func TestClientCertIdentityReachesPolicy(t *testing.T) {
	f := newTLSFixture(t)
	cfg := fmt.Sprintf(tlsCalcConfig, startCalcBackend(t), f.tlsSection(", client_auth: verify_if_given"), f.tlsSection("")) + `
policy:
  zones:
    external: {reach: [builtin, grpc, nekte]}
  rules:
    - id: dev-client-only
      match: {method: subtract}
      mutation: READ_ONLY
      when: 'principal.sub == "` + tlsconf.DevClientID + `" && claims.cert.spiffe_id == principal.sub'
`
	ts := startTLS(t, cfg)
	subtract := `{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}`
	tests := []struct {
		name  string
		certs []tls.Certificate
		ok    bool
	}{
		{"the SPIFFE id the rule names", []tls.Certificate{f.client}, true},
		{"another SPIFFE id of the same CA", []tls.Certificate{f.other}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name+" (internal)", func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			r, err := f.grpcClient(t, ts.InternalAddr().String(), tt.certs...).Invoke(ctx, &gatehousev1.InvokeRequest{Method: "subtract", Params: []byte(`[42,23]`)})
			if tt.ok && (err != nil || string(r.GetResult()) != "19") {
				t.Fatalf("%v %v", r, err)
			}
			if !tt.ok && status.Code(err) != codes.PermissionDenied {
				t.Fatalf("%v %v, want PermissionDenied", r, err)
			}
		})
		t.Run(tt.name+" (boundary)", func(t *testing.T) {
			_, body, err := postWith(f.httpClient(true, false, tt.certs...), ts.base+"/rpc", subtract)
			if err != nil {
				t.Fatal(err)
			}
			r := decodeOne(t, body)
			if tt.ok != (r.Error == nil) || !tt.ok && r.Error.Code != 4000 {
				t.Fatalf("%s, want allowed %v", body, tt.ok)
			}
		})
	}
	t.Run("anonymous (no certificate) is not the SPIFFE id", func(t *testing.T) {
		_, body, err := postWith(f.httpClient(true, false), ts.base+"/rpc", subtract)
		if err != nil {
			t.Fatal(err)
		}
		if r := decodeOne(t, body); r.Error == nil || r.Error.Code != 4000 {
			t.Fatalf("%s, want 4000", body)
		}
	})
}

// TestTLSCertRotationUnderLoad rewrites the boundary's certificate and key while 8 callers
// loop (half opening a connection per call, so every call is a handshake; half keeping
// theirs): no call fails, and new handshakes get the last certificate written.
func TestTLSCertRotationUnderLoad(t *testing.T) {
	f := newTLSFixture(t)
	ts := startTLS(t, fmt.Sprintf(tlsCalcConfig, startCalcBackend(t), f.tlsSection(", client_auth: none, reload_interval: 10ms"), f.tlsSection("")))
	subtract := `{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}`
	const callers, maxCalls, rotations = 8, 2000, 10
	var calls, failed atomic.Int64
	var firstErr atomic.Value
	var seen sync.Map // serial numbers of the certificates callers' connections got
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range callers {
		client := f.httpClient(i%4 == 1, i%2 == 0)
		wg.Go(func() {
			for range maxCalls {
				select {
				case <-stop:
					return
				default:
				}
				serial, err := tlsCall(client, ts.base+"/rpc", subtract)
				calls.Add(1)
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				seen.Store(serial, true)
			}
		})
	}
	var last string
	for range rotations {
		time.Sleep(80 * time.Millisecond)
		last = f.rotate(t)
	}
	time.Sleep(80 * time.Millisecond)
	close(stop)
	wg.Wait()
	distinct := 0
	seen.Range(func(any, any) bool { distinct++; return true })
	if failed.Load() != 0 || calls.Load() < 4*callers || distinct < 3 {
		t.Fatalf("%d of %d calls failed (first: %v); %d certificates seen", failed.Load(), calls.Load(), firstErr.Load(), distinct)
	}
	served := func() string {
		conn, err := tls.Dial("tcp", ts.BoundaryAddr().String(), &tls.Config{RootCAs: f.roots, MinVersion: tls.VersionTLS12})
		if err != nil {
			return err.Error()
		}
		defer func() { _ = conn.Close() }()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
	}
	deadline := time.Now().Add(5 * time.Second)
	for got := served(); got != last; got = served() {
		if time.Now().After(deadline) {
			t.Fatalf("serving certificate %s, want the last written %s", got, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("%d calls, none failed, %d certificates served to them", calls.Load(), distinct)
}

// tlsCall posts body to url with client and returns the serial number of the certificate
// the connection got; any answer but result 19 is an error.
func tlsCall(client *http.Client, url, body string) (string, error) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(out), `"result":19`) {
		return "", fmt.Errorf("%w: HTTP %d %s", errUnexpected, resp.StatusCode, out)
	}
	return resp.TLS.PeerCertificates[0].SerialNumber.String(), nil
}
