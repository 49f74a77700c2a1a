package state

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Defaults of the Redis backend.
const (
	DefaultRedisKeyPrefix    = "gatehouse:"
	DefaultRedisDialTimeout  = 2 * time.Second
	DefaultRedisReadTimeout  = time.Second
	DefaultRedisWriteTimeout = time.Second
	// maxRedisValueBytes is the largest string Redis stores (proto-max-bulk-len's default).
	maxRedisValueBytes = 512 << 20
)

// RedisConfig configures the Redis backend (state.redis). The standard go-redis universal
// client picks the topology: MasterName set means Sentinel (Addrs are the sentinels, however
// many); else several Addrs, or Cluster, means Redis Cluster (Addrs are seed nodes); else one
// server. Several addresses of standalone servers are therefore not load-balanced: they are
// taken for a Cluster, and calls fail. Zero fields take their defaults.
type RedisConfig struct {
	// Addrs are host:port addresses: the server, the sentinels or the cluster's seed nodes.
	Addrs []string `yaml:"addrs" json:"addrs,omitempty"`
	// MasterName is the Sentinel master set's name; it makes Addrs the sentinels.
	MasterName string `yaml:"master_name" json:"master_name,omitempty"`
	// Cluster makes a single address a Redis Cluster seed node; several Addrs without
	// MasterName are a Cluster anyway.
	Cluster bool `yaml:"cluster" json:"cluster,omitempty"`
	// Username is the ACL user (Redis 6+); empty for the default user.
	Username string `yaml:"username" json:"username,omitempty"`
	// Password authenticates the connection to the servers (use ${ENV}); never logged.
	// Sentinels are reached with SentinelUsername and SentinelPassword, not these.
	Password string `yaml:"password" json:"-"`
	// SentinelUsername is the ACL user on the Sentinels; it needs SentinelPassword, and
	// both need MasterName. Empty for the default user.
	SentinelUsername string `yaml:"sentinel_username" json:"sentinel_username,omitempty"`
	// SentinelPassword authenticates the connections to the Sentinels (their requirepass
	// or the ACL user's password; use ${ENV}); never logged. Empty: the Sentinels are
	// reached without credentials.
	SentinelPassword string `yaml:"sentinel_password" json:"-"`
	// DB is the database number; Redis Cluster has only 0.
	DB int `yaml:"db" json:"db,omitempty"`
	// TLS configures encrypted connections.
	TLS RedisTLSConfig `yaml:"tls" json:"tls,omitzero"`
	// KeyPrefix is put before every key and channel name (default
	// [DefaultRedisKeyPrefix]), so that deployments sharing a Redis stay apart.
	KeyPrefix string `yaml:"key_prefix" json:"key_prefix,omitempty"`
	// DialTimeout bounds opening a connection (default [DefaultRedisDialTimeout]).
	DialTimeout time.Duration `yaml:"dial_timeout" json:"dial_timeout,omitempty"`
	// ReadTimeout bounds waiting for a reply (default [DefaultRedisReadTimeout]); a
	// caller's earlier context deadline wins.
	ReadTimeout time.Duration `yaml:"read_timeout" json:"read_timeout,omitempty"`
	// WriteTimeout bounds sending a command (default [DefaultRedisWriteTimeout]).
	WriteTimeout time.Duration `yaml:"write_timeout" json:"write_timeout,omitempty"`
	// PoolSize is the most connections per server (default 10 × GOMAXPROCS, as go-redis).
	PoolSize int `yaml:"pool_size" json:"pool_size,omitempty"`
	// MaxKeyBytes bounds a key's length, prefix excluded (default [DefaultMaxKeyBytes]).
	MaxKeyBytes int `yaml:"max_key_bytes" json:"max_key_bytes,omitempty"`
	// MaxValueBytes bounds a value's length (default [DefaultMaxValueBytes], at most 512 MiB).
	MaxValueBytes int `yaml:"max_value_bytes" json:"max_value_bytes,omitempty"`
	// BusBuffer is how many undelivered messages each [Bus] subscription holds before it
	// drops the oldest (default [DefaultBusBuffer]).
	BusBuffer int `yaml:"bus_buffer" json:"bus_buffer,omitempty"`
}

// RedisTLSConfig configures TLS to Redis (state.redis.tls).
type RedisTLSConfig struct {
	// Enabled turns TLS on; the other fields need it.
	Enabled bool `yaml:"enabled" json:"enabled,omitempty"`
	// CAFile is a PEM bundle of the CAs that sign the server's certificate (default: the
	// system's roots).
	CAFile string `yaml:"ca_file" json:"ca_file,omitempty"`
	// CertFile and KeyFile are the client's certificate and key in PEM, for mutual TLS;
	// both or neither.
	CertFile string `yaml:"cert_file" json:"cert_file,omitempty"`
	KeyFile  string `yaml:"key_file" json:"key_file,omitempty"`
	// ServerName is the name checked in the server's certificate (default: the address's
	// host).
	ServerName string `yaml:"server_name" json:"server_name,omitempty"`
	// InsecureSkipVerify accepts any server certificate: for tests only.
	InsecureSkipVerify bool `yaml:"insecure_skip_verify" json:"insecure_skip_verify,omitempty"`
}

// Validate reports the first setting of the redis section that [NewRedis] would refuse.
// It does not read the TLS files: NewRedis does.
func (c RedisConfig) Validate() error {
	if len(c.Addrs) == 0 {
		return errors.New("state: redis.addrs is empty: backend redis needs at least one address")
	}
	for i, a := range c.Addrs {
		if host, port, err := net.SplitHostPort(a); err != nil || host == "" || port == "" {
			return fmt.Errorf("state: redis.addrs[%d] is %q: want host:port", i, a)
		}
	}
	if c.MasterName != "" && c.Cluster {
		return errors.New("state: redis.master_name and redis.cluster are both set: choose Sentinel or Cluster")
	}
	if err := c.validateSentinelAuth(); err != nil {
		return err
	}
	if c.DB < 0 {
		return fmt.Errorf("state: redis.db is %d: it must not be negative", c.DB)
	}
	if c.DB != 0 && c.MasterName == "" && (c.Cluster || len(c.Addrs) > 1) {
		return fmt.Errorf("state: redis.db is %d: Redis Cluster has only database 0", c.DB)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"dial_timeout", c.DialTimeout}, {"read_timeout", c.ReadTimeout}, {"write_timeout", c.WriteTimeout}} {
		if d.v < 0 {
			return fmt.Errorf("state: redis.%s is %v: it must not be negative", d.name, d.v)
		}
	}
	if c.PoolSize < 0 {
		return fmt.Errorf("state: redis.pool_size is %d: it must not be negative", c.PoolSize)
	}
	if c.MaxKeyBytes < 0 {
		return fmt.Errorf("state: redis.max_key_bytes is %d: it must not be negative", c.MaxKeyBytes)
	}
	if c.MaxValueBytes < 0 || c.MaxValueBytes > maxRedisValueBytes {
		return fmt.Errorf("state: redis.max_value_bytes is %d: it must be between 0 (the default) and %d (Redis's largest string)", c.MaxValueBytes, maxRedisValueBytes)
	}
	if c.BusBuffer < 0 {
		return fmt.Errorf("state: redis.bus_buffer is %d: it must not be negative", c.BusBuffer)
	}
	return c.TLS.validate()
}

// validateSentinelAuth checks the Sentinel credentials: only with master_name, and a
// user only with a password.
func (c RedisConfig) validateSentinelAuth() error {
	if c.MasterName == "" {
		for _, f := range []struct{ name, v string }{{"sentinel_username", c.SentinelUsername}, {"sentinel_password", c.SentinelPassword}} {
			if f.v != "" {
				return fmt.Errorf("state: redis.%s is set but redis.master_name is empty: Sentinel credentials need Sentinel", f.name)
			}
		}
		return nil
	}
	if c.SentinelUsername != "" && c.SentinelPassword == "" {
		return errors.New("state: redis.sentinel_username is set without redis.sentinel_password: an ACL user needs its password")
	}
	return nil
}

func (c RedisTLSConfig) validate() error {
	if !c.Enabled {
		for _, f := range []struct{ name, v string }{{"ca_file", c.CAFile}, {"cert_file", c.CertFile}, {"key_file", c.KeyFile}, {"server_name", c.ServerName}} {
			if f.v != "" {
				return fmt.Errorf("state: redis.tls.%s is set but redis.tls.enabled is false", f.name)
			}
		}
		if c.InsecureSkipVerify {
			return errors.New("state: redis.tls.insecure_skip_verify is set but redis.tls.enabled is false")
		}
		return nil
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		return errors.New("state: redis.tls.cert_file and redis.tls.key_file go together: set both or neither")
	}
	return nil
}

// withDefaults returns c with defaults in its zero fields.
func (c RedisConfig) withDefaults() RedisConfig {
	if c.KeyPrefix == "" {
		c.KeyPrefix = DefaultRedisKeyPrefix
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = DefaultRedisDialTimeout
	}
	if c.ReadTimeout == 0 {
		c.ReadTimeout = DefaultRedisReadTimeout
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = DefaultRedisWriteTimeout
	}
	if c.PoolSize == 0 {
		c.PoolSize = 10 * runtime.GOMAXPROCS(0)
	}
	if c.MaxKeyBytes == 0 {
		c.MaxKeyBytes = DefaultMaxKeyBytes
	}
	if c.MaxValueBytes == 0 {
		c.MaxValueBytes = DefaultMaxValueBytes
	}
	if c.BusBuffer == 0 {
		c.BusBuffer = DefaultBusBuffer
	}
	return c
}

// options returns the go-redis options of c, which has its defaults, reading the TLS files.
func (c RedisConfig) options() (*redis.UniversalOptions, error) {
	tlsConfig, err := c.TLS.load()
	if err != nil {
		return nil, err
	}
	return &redis.UniversalOptions{
		// A copy: go-redis's cluster client appends the nodes it discovers to this slice, in
		// place when it has room, which would race with every other client made from it.
		Addrs:         slices.Clone(c.Addrs),
		MasterName:    c.MasterName,
		IsClusterMode: c.Cluster,
		Username:      c.Username,
		Password:      c.Password,
		// Used only to reach the Sentinels (MasterName set).
		SentinelUsername: c.SentinelUsername,
		SentinelPassword: c.SentinelPassword,
		DB:               c.DB,
		TLSConfig:        tlsConfig,
		DialTimeout:      c.DialTimeout,
		ReadTimeout:      c.ReadTimeout,
		WriteTimeout:     c.WriteTimeout,
		PoolSize:         c.PoolSize,
		// A caller's deadline bounds the network wait too.
		ContextTimeoutEnabled: true,
		// No retry: SetNX, CompareAndSwap and Incr are not idempotent, and a command resent
		// after its reply was lost would report a lost race it won or count twice.
		MaxRetries:      -1,
		DisableIdentity: true,
		// Maintenance notifications are a Redis Enterprise handshake this backend does not use.
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	}, nil
}

// load returns the tls.Config c describes, or nil when TLS is off.
func (c RedisTLSConfig) load() (*tls.Config, error) {
	if !c.Enabled {
		return nil, nil //nolint:nilnil // no TLS is a valid outcome, not an error
	}
	cfg := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         c.ServerName,
		InsecureSkipVerify: c.InsecureSkipVerify, //nolint:gosec // an explicit, documented setting for tests
	}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("state: redis.tls.ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("state: redis.tls.ca_file %q holds no PEM certificate", c.CAFile)
		}
		cfg.RootCAs = pool
	}
	if c.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("state: redis.tls.cert_file and key_file: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}
