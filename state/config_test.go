package state_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/gatehouse-dev/gatehouse/state"
)

func TestConfigDecodes(t *testing.T) {
	const doc = "backend: embedded\nembedded:\n  max_entries: 5000\n  sweep_interval: 250ms\n  bus_buffer: 8\n"
	var cfg state.Config
	if err := yaml.UnmarshalWithOptions([]byte(doc), &cfg, yaml.Strict()); err != nil {
		t.Fatal(err)
	}
	want := state.Config{Backend: "embedded", Embedded: state.EmbeddedConfig{MaxEntries: 5000, SweepInterval: 250 * time.Millisecond, BusBuffer: 8}}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("decoded %+v, want %+v", cfg, want)
	}
}

func TestOpen(t *testing.T) {
	tests := []struct {
		name    string
		cfg     state.Config
		wantErr string // "" for success
	}{
		{"Default", state.Config{}, ""},
		{"Embedded", state.Config{Backend: "embedded", Embedded: state.EmbeddedConfig{MaxEntries: 10, SweepInterval: time.Minute}}, ""},
		{"RedisNoAddrs", state.Config{Backend: "redis"}, "state: redis.addrs is empty: backend redis needs at least one address"},
		{"Unknown", state.Config{Backend: "memcached"}, `unknown backend "memcached": the allowed values are "embedded" (the default) and "redis"`},
		{"CaseMatters", state.Config{Backend: "Embedded"}, `unknown backend "Embedded"`},
		{"NegativeMaxEntries", state.Config{Embedded: state.EmbeddedConfig{MaxEntries: -1}}, "max_entries"},
		{"NegativeSweep", state.Config{Embedded: state.EmbeddedConfig{SweepInterval: -time.Second}}, "sweep_interval"},
		{"NegativeBusBuffer", state.Config{Embedded: state.EmbeddedConfig{BusBuffer: -1}}, "state: embedded.bus_buffer is -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kv, err := state.Open(tt.cfg)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Open error %v, want one containing %q", err, tt.wantErr)
				}
				if kv != nil {
					t.Errorf("Open returned a KV with an error")
				}
				return
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			if err := kv.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}
}

func TestOpenAppliesEmbeddedConfig(t *testing.T) {
	kv, err := state.Open(state.Config{Embedded: state.EmbeddedConfig{MaxEntries: 2}})
	if err != nil {
		t.Fatal(err)
	}
	defer kv.Close()
	ctx := t.Context()
	for _, k := range []string{"a", "b"} {
		if err := kv.Set(ctx, k, nil, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	if err := kv.Set(ctx, "c", nil, time.Hour); err == nil {
		t.Errorf("third entry with max_entries 2 was accepted")
	}
	if got, want := kv.(state.Limited).Limits(), state.DefaultLimits(); got != want {
		t.Errorf("Limits() = %+v, want the defaults %+v", got, want)
	}
}

func TestConfigDecodesRedis(t *testing.T) {
	const doc = `backend: redis
redis:
  addrs: [10.0.0.1:26379, 10.0.0.2:26379]
  master_name: mymaster
  username: gw
  password: secret
  sentinel_username: sentinel-user
  sentinel_password: sentinel-secret
  db: 2
  tls:
    enabled: true
    ca_file: /etc/ca.pem
    server_name: redis.internal
  key_prefix: "prod:"
  dial_timeout: 3s
  read_timeout: 500ms
  write_timeout: 700ms
  pool_size: 20
  max_key_bytes: 512
  max_value_bytes: 65536
  bus_buffer: 16
`
	var cfg state.Config
	if err := yaml.UnmarshalWithOptions([]byte(doc), &cfg, yaml.Strict()); err != nil {
		t.Fatal(err)
	}
	want := state.Config{Backend: "redis", Redis: state.RedisConfig{
		Addrs: []string{"10.0.0.1:26379", "10.0.0.2:26379"}, MasterName: "mymaster",
		Username: "gw", Password: "secret", SentinelUsername: "sentinel-user", SentinelPassword: "sentinel-secret", DB: 2,
		TLS:       state.RedisTLSConfig{Enabled: true, CAFile: "/etc/ca.pem", ServerName: "redis.internal"},
		KeyPrefix: "prod:", DialTimeout: 3 * time.Second, ReadTimeout: 500 * time.Millisecond, WriteTimeout: 700 * time.Millisecond,
		PoolSize: 20, MaxKeyBytes: 512, MaxValueBytes: 65536, BusBuffer: 16,
	}}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("decoded %+v, want %+v", cfg, want)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

func TestRedisConfigValidate(t *testing.T) {
	one := []string{"127.0.0.1:6379"}
	tests := []struct {
		name    string
		cfg     state.RedisConfig
		wantErr string // "" for valid
	}{
		{"Minimal", state.RedisConfig{Addrs: one}, ""},
		{"Sentinel", state.RedisConfig{Addrs: []string{"a:26379", "b:26379"}, MasterName: "m", DB: 3}, ""},
		{"Cluster", state.RedisConfig{Addrs: []string{"a:7000", "b:7001"}}, ""},
		{"ClusterFlag", state.RedisConfig{Addrs: one, Cluster: true}, ""},
		{"IPv6", state.RedisConfig{Addrs: []string{"[::1]:6379"}}, ""},
		{"TLS", state.RedisConfig{Addrs: one, TLS: state.RedisTLSConfig{Enabled: true, CertFile: "c", KeyFile: "k"}}, ""},
		{"NoAddrs", state.RedisConfig{}, "state: redis.addrs is empty: backend redis needs at least one address"},
		{"NoPort", state.RedisConfig{Addrs: []string{"localhost"}}, `state: redis.addrs[0] is "localhost": want host:port`},
		{"NoHost", state.RedisConfig{Addrs: []string{"x:1", ":6379"}}, `state: redis.addrs[1] is ":6379": want host:port`},
		{"SentinelAndCluster", state.RedisConfig{Addrs: one, MasterName: "m", Cluster: true}, "redis.master_name and redis.cluster are both set"},
		{"SentinelPassword", state.RedisConfig{Addrs: one, MasterName: "m", SentinelPassword: "p"}, ""},
		{"SentinelUserAndPassword", state.RedisConfig{Addrs: one, MasterName: "m", SentinelUsername: "u", SentinelPassword: "p"}, ""},
		{"SentinelUserWithoutPassword", state.RedisConfig{Addrs: one, MasterName: "m", SentinelUsername: "u"}, "state: redis.sentinel_username is set without redis.sentinel_password"},
		{"SentinelPasswordWithoutSentinel", state.RedisConfig{Addrs: one, SentinelPassword: "p"}, "state: redis.sentinel_password is set but redis.master_name is empty"},
		{"SentinelUserWithoutSentinel", state.RedisConfig{Addrs: []string{"a:1", "b:2"}, SentinelUsername: "u", SentinelPassword: "p"}, "state: redis.sentinel_username is set but redis.master_name is empty"},
		{"NegativeDB", state.RedisConfig{Addrs: one, DB: -1}, "state: redis.db is -1: it must not be negative"},
		{"ClusterDB", state.RedisConfig{Addrs: one, Cluster: true, DB: 1}, "state: redis.db is 1: Redis Cluster has only database 0"},
		{"ClusterAddrsDB", state.RedisConfig{Addrs: []string{"a:1", "b:2"}, DB: 1}, "Redis Cluster has only database 0"},
		{"NegativeDial", state.RedisConfig{Addrs: one, DialTimeout: -1}, "state: redis.dial_timeout is -1ns: it must not be negative"},
		{"NegativeRead", state.RedisConfig{Addrs: one, ReadTimeout: -time.Second}, "state: redis.read_timeout is -1s"},
		{"NegativeWrite", state.RedisConfig{Addrs: one, WriteTimeout: -time.Second}, "state: redis.write_timeout is -1s"},
		{"NegativePool", state.RedisConfig{Addrs: one, PoolSize: -2}, "state: redis.pool_size is -2"},
		{"NegativeKeyBytes", state.RedisConfig{Addrs: one, MaxKeyBytes: -1}, "state: redis.max_key_bytes is -1"},
		{"NegativeValueBytes", state.RedisConfig{Addrs: one, MaxValueBytes: -1}, "state: redis.max_value_bytes is -1"},
		{"HugeValueBytes", state.RedisConfig{Addrs: one, MaxValueBytes: 1 << 30}, "Redis's largest string"},
		{"TLSFileWithoutTLS", state.RedisConfig{Addrs: one, TLS: state.RedisTLSConfig{CAFile: "ca.pem"}}, "state: redis.tls.ca_file is set but redis.tls.enabled is false"},
		{"InsecureWithoutTLS", state.RedisConfig{Addrs: one, TLS: state.RedisTLSConfig{InsecureSkipVerify: true}}, "redis.tls.insecure_skip_verify is set but redis.tls.enabled is false"},
		{"NegativeBusBuffer", state.RedisConfig{Addrs: one, BusBuffer: -1}, "state: redis.bus_buffer is -1"},
		{"CertWithoutKey", state.RedisConfig{Addrs: one, TLS: state.RedisTLSConfig{Enabled: true, CertFile: "c"}}, "redis.tls.cert_file and redis.tls.key_file go together"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := state.Config{Backend: "redis", Redis: tt.cfg}.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Errorf("Validate: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Validate error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestRedisConfigNeverShowsPassword(t *testing.T) {
	b, err := json.Marshal(state.RedisConfig{Addrs: []string{"a:1"}, MasterName: "m", Password: "hunter2", SentinelPassword: "hunter3"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "hunter") {
		t.Errorf("JSON of the config shows a password: %s", b)
	}
}

func TestOpenRedis(t *testing.T) {
	dir := t.TempDir()
	caFile, certFile, keyFile := writeTLSFiles(t, dir)
	garbage := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := closedAddr(t)
	tls := func(c state.RedisTLSConfig) state.Config {
		c.Enabled = true
		return state.Config{Backend: "redis", Redis: state.RedisConfig{Addrs: []string{addr}, TLS: c}}
	}
	tests := []struct {
		name    string
		cfg     state.Config
		wantErr string
	}{
		{"Down", state.Config{Backend: "redis", Redis: state.RedisConfig{Addrs: []string{addr}}}, ""},
		{"TLSFiles", tls(state.RedisTLSConfig{CAFile: caFile, CertFile: certFile, KeyFile: keyFile}), ""},
		{"MissingCA", tls(state.RedisTLSConfig{CAFile: filepath.Join(dir, "none.pem")}), "state: redis.tls.ca_file:"},
		{"GarbageCA", tls(state.RedisTLSConfig{CAFile: garbage}), "holds no PEM certificate"},
		{"MissingKey", tls(state.RedisTLSConfig{CertFile: certFile, KeyFile: filepath.Join(dir, "none.pem")}), "state: redis.tls.cert_file and key_file:"},
		{"Malformed", state.Config{Backend: "redis", Redis: state.RedisConfig{Addrs: []string{"nope"}}}, "want host:port"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kv, err := state.Open(tt.cfg)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("Open error %v, want one containing %q", err, tt.wantErr)
				}
				if kv != nil {
					t.Errorf("Open returned a KV with an error")
				}
				return
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer kv.Close()
			p, ok := kv.(state.Pinger)
			if !ok {
				t.Fatalf("Open(redis) = %T, not a Pinger", kv)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			if err := p.Ping(ctx); !errors.Is(err, state.ErrUnavailable) {
				t.Errorf("Ping of a Redis that is down: %v, want ErrUnavailable", err)
			}
		})
	}
}

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// writeTLSFiles writes a self-signed CA certificate and a client certificate and key it
// signed, in PEM, and returns their paths.
func writeTLSFiles(t *testing.T, dir string) (caFile, certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, typ string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cert := write("cert.pem", "CERTIFICATE", der)
	return cert, cert, write("key.pem", "EC PRIVATE KEY", keyDER)
}
