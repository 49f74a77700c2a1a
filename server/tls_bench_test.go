package server

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/demo"
)

// BenchmarkTLSEndToEnd measures JSON-RPC→gRPC calls (calculator Subtract) through a
// boundary serving TLS against the same boundary in plaintext, over HTTP/1.1 and over
// HTTP/2 (h2 by ALPN against h2c), with connections kept alive: the figures of interest are
// calls/s over TLS ÷ plaintext per protocol (plaintext ns/op ÷ TLS ns/op), the steady-state
// price of encryption once handshakes are amortized.
func BenchmarkTLSEndToEnd(b *testing.B) {
	addr, stop, err := demo.StartCalculator("127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = stop() })
	f := newTLSFixture(b)
	routing := fmt.Sprintf(`
auth: {anonymous: {}}
routing:
  grpc:
    - name: calculator
      address: %q
      descriptors: {reflection: true}
      methods: {subtract: calculator.v1.CalculatorService/Subtract}
      unwrap: {subtract: result}
`, addr)
	tlsSection := fmt.Sprintf("{cert_file: %q, key_file: %q}", f.certFile, f.keyFile)
	for _, tt := range []struct {
		name, boundary string
		client         func() *http.Client
		major          int
	}{
		{"http1_tls", "tls: " + tlsSection, func() *http.Client { return f.benchTLSClient(false) }, 1},
		{"http1_plaintext", "", benchClient, 1},
		{"h2_tls", "tls: " + tlsSection, func() *http.Client { return f.benchTLSClient(true) }, 2},
		{"h2c_plaintext", "h2c: true", benchH2CClient, 2},
	} {
		b.Run(tt.name, func(b *testing.B) {
			cfg, err := Parse("bench.yaml", []byte(fmt.Sprintf(`
server: {boundary: {addr: "127.0.0.1:0", %s}, admin: {addr: "127.0.0.1:0"}}
log: {level: error}
`, tt.boundary)+routing))
			if err != nil {
				b.Fatal(err)
			}
			url := benchServe(b, cfg, Options{Logger: slog.New(slog.DiscardHandler)})
			if cfg.Server.Boundary.TLS != nil {
				url = "https" + strings.TrimPrefix(url, "http")
			}
			client := tt.client()
			waitBackendWith(b, client, url, tt.major)
			b.ReportAllocs()
			b.SetParallelism(benchParallelism)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := post(client, url, subtractBody, `"result":19`); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// benchTLSClient is benchClient over TLS trusting the fixture's CA, offering HTTP/2 by
// ALPN when h2 (else HTTP/1.1 only).
func (f *tlsFixture) benchTLSClient(h2 bool) *http.Client {
	tr := &http.Transport{MaxIdleConnsPerHost: 256, DisableCompression: true, ForceAttemptHTTP2: h2,
		TLSClientConfig: &tls.Config{RootCAs: f.roots, MinVersion: tls.VersionTLS12}}
	if !h2 {
		tr.TLSClientConfig.NextProtos = []string{"http/1.1"}
	}
	return &http.Client{Transport: tr}
}

// benchH2CClient speaks HTTP/2 without TLS (prior knowledge).
func benchH2CClient() *http.Client {
	p := new(http.Protocols)
	p.SetUnencryptedHTTP2(true)
	return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, DisableCompression: true, Protocols: p}}
}

// waitBackendWith waits until subtract answers through url with client (the backend's
// descriptors are loaded), then checks that client speaks HTTP/major with the boundary.
func waitBackendWith(b *testing.B, client *http.Client, url string, major int) {
	b.Helper()
	for i := 0; post(client, url, subtractBody, `"result":19`) != nil; i++ {
		if i > 200 {
			b.Fatal("backend never became ready")
		}
		time.Sleep(10 * time.Millisecond)
	}
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(subtractBody))
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.ProtoMajor != major {
		b.Fatalf("%s, want HTTP/%d", resp.Proto, major)
	}
}
