package redistest_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/gatehouse-dev/gatehouse/internal/redistest"
)

func newClient(t *testing.T, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DisableIdentity: true, DialTimeout: time.Second})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestServerLifecycle(t *testing.T) {
	s := redistest.Start(t)
	if !strings.HasPrefix(s.Addr, "127.0.0.1:") {
		t.Fatalf("Addr = %q, want 127.0.0.1:port", s.Addr)
	}
	ctx := t.Context()
	c := newClient(t, s.Addr)
	if err := c.Set(ctx, "k", "v", time.Minute).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	for _, tt := range []struct{ param, want string }{{"save", ""}, {"appendonly", "no"}, {"bind", "127.0.0.1"}} {
		got, err := c.ConfigGet(ctx, tt.param).Result()
		if err != nil {
			t.Fatalf("CONFIG GET %s: %v", tt.param, err)
		}
		if got[tt.param] != tt.want {
			t.Errorf("CONFIG GET %s = %q, want %q", tt.param, got[tt.param], tt.want)
		}
	}

	s.Kill()
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatalf("PING after Kill succeeded")
	}
	s.Restart(t)
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := c.Ping(ctx).Err()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("PING after Restart: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := c.Get(ctx, "k").Err(); err != redis.Nil { //nolint:errorlint // redis.Nil is returned as is
		t.Errorf("GET after Restart = %v, want redis.Nil: the data must not persist", err)
	}
}

func TestPrefix(t *testing.T) {
	s := redistest.Start(t)
	c := newClient(t, s.Addr)
	var p1, p2 string
	t.Run("First", func(t *testing.T) {
		p1 = s.Prefix(t)
		if err := c.Set(context.Background(), p1+"k", "v", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("Second", func(t *testing.T) { p2 = s.Prefix(t) })
	if p1 == p2 || !strings.HasPrefix(p1, "test:TestPrefix_First:") {
		t.Errorf("prefixes %q and %q: want distinct, named after the test", p1, p2)
	}
	if n, err := c.Exists(t.Context(), p1+"k").Result(); err != nil || n != 0 {
		t.Errorf("EXISTS after the subtest = %d, %v; want 0: its keys are flushed", n, err)
	}
}

func TestServerTLS(t *testing.T) {
	s := redistest.StartTLS(t)
	if s.TLS == nil || s.TLS.CAFile == "" || s.TLS.CertFile == "" || s.TLS.KeyFile == "" {
		t.Fatalf("TLS files = %+v, want all set", s.TLS)
	}
	plain := newClient(t, s.Addr)
	if err := plain.Ping(t.Context()).Err(); err == nil {
		t.Errorf("a plain TCP PING to a TLS-only server succeeded")
	}
	pool := x509.NewCertPool()
	ca, err := os.ReadFile(s.TLS.CAFile)
	if err != nil || !pool.AppendCertsFromPEM(ca) {
		t.Fatalf("reading the CA: %v", err)
	}
	cert, err := tls.LoadX509KeyPair(s.TLS.CertFile, s.TLS.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1, DisableIdentity: true,
		TLSConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}})
	t.Cleanup(func() { _ = c.Close() })
	p := s.Prefix(t)
	if err := c.Set(t.Context(), p+"k", "v", time.Minute).Err(); err != nil {
		t.Fatalf("SET over TLS: %v", err)
	}
	s.FlushPrefix(t, p)
	if n, err := c.Exists(t.Context(), p+"k").Result(); err != nil || n != 0 {
		t.Errorf("EXISTS after FlushPrefix over TLS = %d, %v; want 0", n, err)
	}
	s.Kill()
	s.Restart(t) // waits for a PING over TLS
}
