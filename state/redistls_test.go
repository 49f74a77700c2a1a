package state_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/redistest"
	"github.com/gatehouse-dev/gatehouse/state"
)

// TestRedisTLS connects to a redis-server that speaks only TLS and requires a client
// certificate: the configured files must be used, and every wrong setting must show as an
// unreachable store, not succeed.
func TestRedisTLS(t *testing.T) {
	srv := redistest.StartTLS(t)
	files := srv.TLS
	otherCA, _, _ := writeTLSFiles(t, t.TempDir())
	tests := []struct {
		name string
		tls  state.RedisTLSConfig
		ok   bool
	}{
		{"MutualTLS", state.RedisTLSConfig{Enabled: true, CAFile: files.CAFile, CertFile: files.CertFile, KeyFile: files.KeyFile}, true},
		{"ServerName", state.RedisTLSConfig{Enabled: true, CAFile: files.CAFile, CertFile: files.CertFile, KeyFile: files.KeyFile, ServerName: "localhost"}, true},
		{"InsecureSkipVerify", state.RedisTLSConfig{Enabled: true, CertFile: files.CertFile, KeyFile: files.KeyFile, InsecureSkipVerify: true}, true},
		{"WrongServerName", state.RedisTLSConfig{Enabled: true, CAFile: files.CAFile, CertFile: files.CertFile, KeyFile: files.KeyFile, ServerName: "redis.example"}, false},
		{"UnknownCA", state.RedisTLSConfig{Enabled: true, CAFile: otherCA, CertFile: files.CertFile, KeyFile: files.KeyFile}, false},
		{"NoClientCertificate", state.RedisTLSConfig{Enabled: true, CAFile: files.CAFile}, false},
		{"PlainTCP", state.RedisTLSConfig{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := state.NewRedis(state.RedisConfig{
				Addrs: []string{srv.Addr}, KeyPrefix: srv.Prefix(t), TLS: tt.tls,
				DialTimeout: time.Second, ReadTimeout: 500 * time.Millisecond,
			})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			err = r.Set(ctx, "k", []byte("v"), time.Minute)
			if !tt.ok {
				if !errors.Is(err, state.ErrUnavailable) {
					t.Errorf("Set: %v, want ErrUnavailable", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Set: %v", err)
			}
			if v, ok, err := r.Get(ctx, "k"); err != nil || !ok || string(v) != "v" {
				t.Errorf("Get = %q, %v, %v; want v", v, ok, err)
			}
		})
	}
}
