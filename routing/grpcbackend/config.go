package grpcbackend

import (
	"fmt"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/tlsclient"
)

// Config is one gRPC backend (an entry of routing.grpc).
type Config struct {
	// Name identifies the backend in logs, metrics, readiness and errors.
	Name string `yaml:"name" json:"name"`
	// Address is the backend's target: host:port, or any gRPC target URI (dns:///…).
	Address string `yaml:"address" json:"address"`
	// TLS configures transport security; absent means plaintext.
	TLS *TLSConfig `yaml:"tls" json:"tls,omitempty"`
	// Descriptors says where the backend's protobuf descriptors come from.
	Descriptors DescriptorsConfig `yaml:"descriptors" json:"descriptors"`
	// Methods maps JSON-RPC method names to RPCs: "agent.submitTask: agent.v1.AgentService/SubmitTask".
	Methods map[string]string `yaml:"methods" json:"methods,omitempty"`
	// Services exposes whole services under a method-name prefix.
	Services []ServiceConfig `yaml:"services" json:"services,omitempty"`
	// Unwrap returns one field of a method's response as the bare JSON-RPC result
	// (method name → response field name).
	Unwrap map[string]string `yaml:"unwrap" json:"unwrap,omitempty"`
	// DeadlineReserve is kept back from the call's deadline for the response's trip back:
	// the backend gets the deadline minus the reserve (default: deadline.reserve; at most
	// gateway.MaxReserve).
	DeadlineReserve time.Duration `yaml:"deadline_reserve" json:"deadline_reserve,omitempty"`
	// MaxRecvBytes and MaxSendBytes bound message sizes (default 4 MiB each).
	MaxRecvBytes int `yaml:"max_recv_bytes" json:"max_recv_bytes,omitempty"`
	MaxSendBytes int `yaml:"max_send_bytes" json:"max_send_bytes,omitempty"`
	// Keepalive pings an idle connection to detect a dead backend (absent: no pings).
	Keepalive *KeepaliveConfig `yaml:"keepalive" json:"keepalive,omitempty"`
	// DiscardUnknown ignores params fields the request message does not have, instead of
	// refusing the call with -32602.
	DiscardUnknown bool `yaml:"discard_unknown" json:"discard_unknown,omitempty"`
	// StrictNumbers refuses, with -32602 naming the field, an integer field's value sent as
	// a string ("42"), which proto3 JSON accepts; only JSON numbers are integers then.
	// Default false: proto3 JSON writes 64-bit integers as strings, so a client that sends
	// back what it received (and JavaScript clients past 2^53) relies on the quoted form.
	StrictNumbers bool `yaml:"strict_numbers" json:"strict_numbers,omitempty"`
	// SurfaceMetadata lists response header and trailer keys surfaced to the caller: in
	// error.data.metadata, and on success as Grpc-Metadata-<key> HTTP response headers.
	SurfaceMetadata []string `yaml:"surface_metadata" json:"surface_metadata,omitempty"`
	// DownstreamToken is the credential the backend receives on each call (default: a
	// token minted for it, with the backend's name as audience).
	DownstreamToken gateway.DownstreamTokenConfig `yaml:"downstream_token" json:"downstream_token"`
}

// TLSConfig is transport security for a backend connection.
type TLSConfig = tlsclient.Config

// KeepaliveConfig is gRPC client keepalive.
type KeepaliveConfig struct {
	Time    time.Duration `yaml:"time" json:"time,omitempty"`
	Timeout time.Duration `yaml:"timeout" json:"timeout,omitempty"`
}

// DescriptorsConfig names exactly one source of descriptors.
type DescriptorsConfig struct {
	// File is a compiled FileDescriptorSet (buf build -o, protoc --descriptor_set_out
	// --include_imports).
	File string `yaml:"file" json:"file,omitempty"`
	// Protos are .proto sources compiled at start-up.
	Protos *ProtosConfig `yaml:"protos" json:"protos,omitempty"`
	// Reflection asks the backend's gRPC server reflection (v1, falling back to v1alpha).
	Reflection bool `yaml:"reflection" json:"reflection,omitempty"`
	// Timeout bounds loading them (default 5s); a backend that cannot be loaded is retried
	// in the background and reported not ready meanwhile.
	Timeout time.Duration `yaml:"timeout" json:"timeout,omitempty"`
}

// ProtosConfig lists .proto sources.
type ProtosConfig struct {
	ImportPaths []string `yaml:"import_paths" json:"import_paths,omitempty"`
	Files       []string `yaml:"files" json:"files"`
}

// ServiceConfig exposes every method of a service as prefix + name.
type ServiceConfig struct {
	// Service is the full service name, e.g. agent.v2.AgentService.
	Service string `yaml:"service" json:"service"`
	// Prefix is put before each method's name, e.g. "v2.agent.".
	Prefix string `yaml:"prefix" json:"prefix"`
	// Naming is how RPC names become method names: lowerCamel (SubmitTask → submitTask, the
	// default) or snake (SubmitTask → submit_task).
	Naming string `yaml:"naming" json:"naming,omitempty"`
	// Deprecated marks the service's methods deprecated.
	Deprecated *DeprecationConfig `yaml:"deprecated" json:"deprecated,omitempty"`
}

// DeprecationConfig is the deprecation of a versioned service.
type DeprecationConfig struct {
	// Sunset is the date (YYYY-MM-DD, UTC) from which calls are refused with DEPRECATED_VERSION.
	Sunset string `yaml:"sunset" json:"sunset"`
	// Hint tells callers where to go instead; it is returned in error.data.migration_hint.
	Hint string `yaml:"hint" json:"hint"`
}

// Defaults.
const (
	DefaultMaxMessageBytes    = 4 << 20
	DefaultDescriptorsTimeout = 5 * time.Second
)

func (c Config) withDefaults() Config {
	if c.MaxRecvBytes == 0 {
		c.MaxRecvBytes = DefaultMaxMessageBytes
	}
	if c.MaxSendBytes == 0 {
		c.MaxSendBytes = DefaultMaxMessageBytes
	}
	if c.Descriptors.Timeout == 0 {
		c.Descriptors.Timeout = DefaultDescriptorsTimeout
	}
	return c
}

// Validate checks what the schema cannot.
func (c Config) Validate() error {
	d := c.Descriptors
	n := 0
	for _, set := range []bool{d.File != "", d.Protos != nil, d.Reflection} {
		if set {
			n++
		}
	}
	if n != 1 {
		return fmt.Errorf("backend %q: descriptors needs exactly one of file, protos, reflection", c.Name)
	}
	if c.DeadlineReserve < 0 || c.DeadlineReserve > gateway.MaxReserve {
		return fmt.Errorf("backend %q: deadline_reserve must be between 0 and %s", c.Name, gateway.MaxReserve)
	}
	if err := c.DownstreamToken.Validate(); err != nil {
		return fmt.Errorf("backend %q: %w", c.Name, err)
	}
	for name, rpc := range c.Methods {
		if _, _, err := splitRPC(rpc); err != nil {
			return fmt.Errorf("backend %q: method %q: %w", c.Name, name, err)
		}
	}
	for _, s := range c.Services {
		if s.Naming != "" && s.Naming != namingCamel && s.Naming != namingSnake {
			return fmt.Errorf("backend %q: service %s: naming must be %s or %s", c.Name, s.Service, namingCamel, namingSnake)
		}
		if s.Deprecated != nil {
			if _, err := time.Parse(time.DateOnly, s.Deprecated.Sunset); err != nil {
				return fmt.Errorf("backend %q: service %s: sunset must be a date YYYY-MM-DD", c.Name, s.Service)
			}
		}
	}
	return nil
}

// splitRPC splits "pkg.Service/Method".
func splitRPC(rpc string) (service, method string, err error) {
	service, method, ok := strings.Cut(strings.TrimPrefix(rpc, "/"), "/")
	if !ok || service == "" || method == "" || strings.Contains(method, "/") {
		return "", "", fmt.Errorf("%q is not of the form package.Service/Method", rpc)
	}
	return service, method, nil
}

const (
	namingCamel = "lowerCamel"
	namingSnake = "snake"
)
