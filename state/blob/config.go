package blob

import (
	"fmt"
	"time"
)

// Store kinds (blobs.store).
const (
	StoreDir = "dir"
	StoreS3  = "s3"
)

// Defaults and bounds of the blobs section.
const (
	DefaultURLTTL    = 5 * time.Minute
	DefaultScope     = "blobs:write"
	DefaultReadScope = "blobs:read"
	MinURLTTL        = time.Second
	MaxURLTTL        = 7 * 24 * time.Hour // the longest an S3 presigned URL may live
	DefaultS3Presign = true
)

// Config is the blobs section of the configuration file: the store of DataRefs and the
// URLs agents reach it by. Absent, the blob endpoint answers 404 and no DataRef is issued.
type Config struct {
	// Store is "dir" (the default) or "s3".
	Store string `yaml:"store" json:"store,omitempty"`
	// Dir is the store's directory (store dir; required there).
	Dir string `yaml:"dir" json:"dir,omitempty"`
	// S3 is the object store (store s3; required there).
	S3 *S3Config `yaml:"s3" json:"s3,omitempty"`
	// MaxObjectBytes bounds one object (default DefaultMaxObjectBytes).
	MaxObjectBytes int64 `yaml:"max_object_bytes" json:"max_object_bytes,omitempty"`
	// MaxRangeBytes bounds one read (default: MaxObjectBytes).
	MaxRangeBytes int64 `yaml:"max_range_bytes" json:"max_range_bytes,omitempty"`
	// URLTTL is how long an issued URL works (default DefaultURLTTL).
	URLTTL time.Duration `yaml:"url_ttl" json:"url_ttl,omitempty"`
	// PublicURL is the base URL agents reach the boundary listener by (default: http(s)://
	// and the boundary's address); set it when agents come through NAT or a proxy.
	PublicURL string `yaml:"public_url" json:"public_url,omitempty"`
	// SigningKey signs the URLs (at least MinKeyBytes bytes, usually ${ENV}); never logged
	// nor written to JSON output. Replicas
	// that serve each other's URLs must share it. Empty: a random key per process, which
	// only a single replica can use.
	SigningKey string `yaml:"signing_key" json:"-"`
	// WriteScope is the scope a caller needs to upload through the endpoint (default
	// DefaultScope).
	WriteScope string `yaml:"write_scope" json:"write_scope,omitempty"`
	// ReadScope is the scope a caller needs to read an object through the endpoint without
	// a signed URL, e.g. an agent's output (default DefaultReadScope).
	ReadScope string `yaml:"read_scope" json:"read_scope,omitempty"`
}

// S3Config is the blobs.s3 section.
type S3Config struct {
	Endpoint  string `yaml:"endpoint" json:"endpoint"`
	Bucket    string `yaml:"bucket" json:"bucket"`
	Region    string `yaml:"region" json:"region,omitempty"`
	AccessKey string `yaml:"access_key" json:"-"`
	SecretKey string `yaml:"secret_key" json:"-"`
	// Secure speaks HTTPS to the endpoint (default true).
	Secure *bool `yaml:"secure" json:"secure,omitempty"`
	// Prefix is prepended to every key in the bucket.
	Prefix string `yaml:"prefix" json:"prefix,omitempty"`
	// Presign serves agents' reads with presigned object-store URLs (default true); off,
	// reads go through the gateway's endpoint.
	Presign *bool `yaml:"presign" json:"presign,omitempty"`
	// SpoolDir holds objects being hashed before they are sent (default: the system's
	// temporary directory).
	SpoolDir string `yaml:"spool_dir" json:"spool_dir,omitempty"`
}

// ConfigError is one problem of the section, at Path relative to it.
type ConfigError struct{ Path, Msg string }

// WithDefaults returns c with its defaults applied.
func (c Config) WithDefaults() Config {
	if c.Store == "" {
		c.Store = StoreDir
	}
	if c.MaxObjectBytes == 0 {
		c.MaxObjectBytes = DefaultMaxObjectBytes
	}
	if c.MaxRangeBytes == 0 {
		c.MaxRangeBytes = c.MaxObjectBytes
	}
	if c.URLTTL == 0 {
		c.URLTTL = DefaultURLTTL
	}
	if c.WriteScope == "" {
		c.WriteScope = DefaultScope
	}
	if c.ReadScope == "" {
		c.ReadScope = DefaultReadScope
	}
	return c
}

// Validate reports every problem of c (with defaults applied).
func (c Config) Validate() []ConfigError {
	var errs []ConfigError
	bad := func(path, format string, args ...any) {
		errs = append(errs, ConfigError{Path: path, Msg: fmt.Sprintf(format, args...)})
	}
	switch c.Store {
	case StoreDir:
		if c.Dir == "" {
			bad("dir", "is required with store %q", StoreDir)
		}
	case StoreS3:
		if c.S3 == nil || c.S3.Endpoint == "" || c.S3.Bucket == "" {
			bad("s3", "endpoint and bucket are required with store %q", StoreS3)
		}
	default:
		bad("store", "must be %q or %q", StoreDir, StoreS3)
	}
	if c.MaxObjectBytes < 1 {
		bad("max_object_bytes", "must be at least 1")
	}
	if c.MaxRangeBytes < 1 {
		bad("max_range_bytes", "must be at least 1")
	}
	if c.URLTTL < MinURLTTL || c.URLTTL > MaxURLTTL {
		bad("url_ttl", "must be between %v and %v", MinURLTTL, MaxURLTTL)
	}
	if c.PublicURL != "" {
		if _, err := ParsePublicURL(c.PublicURL); err != nil {
			bad("public_url", "%v", err)
		}
	}
	if c.SigningKey != "" && len(c.SigningKey) < MinKeyBytes {
		bad("signing_key", "has %d bytes; it needs at least %d", len(c.SigningKey), MinKeyBytes)
	}
	return errs
}

// Limits returns the store limits c sets.
func (c Config) Limits() Limits {
	return Limits{MaxObjectBytes: c.MaxObjectBytes, MaxRangeBytes: c.MaxRangeBytes}.WithDefaults()
}

// OpenStore returns the store c names (with defaults applied). now is the clock (nil:
// time.Now).
func (c Config) OpenStore(now func() time.Time) (Store, error) {
	if c.Store == StoreS3 {
		if c.S3 == nil {
			return nil, fmt.Errorf("blob: store %q without an s3 section", StoreS3)
		}
		return OpenS3(S3Options{
			Endpoint: c.S3.Endpoint, Bucket: c.S3.Bucket, Region: c.S3.Region,
			AccessKey: c.S3.AccessKey, SecretKey: c.S3.SecretKey, Secure: c.S3.Secure == nil || *c.S3.Secure,
			Prefix: c.S3.Prefix, SpoolDir: c.S3.SpoolDir,
		}, c.Limits())
	}
	return OpenDir(c.Dir, c.Limits(), now)
}

// Presign reports whether reads of an S3 store are presigned.
func (c Config) Presign() bool {
	return c.Store == StoreS3 && c.S3 != nil && (c.S3.Presign == nil || *c.S3.Presign)
}
