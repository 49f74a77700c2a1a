package sessionrpc

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

// Transports of an upstream.
const (
	TransportWebSocket = "websocket"
	TransportSSE       = "sse"
)

// Defaults of UpstreamConfig.
const (
	DefaultUpstreamDialTimeout   = 10 * time.Second
	DefaultUpstreamMaxFrameBytes = 1 << 20
	DefaultUpstreamIdleTimeout   = 5 * time.Minute
	DefaultUpstreamAbortTimeout  = 2 * time.Second
	DefaultUpstreamRestartDelay  = time.Second
	DefaultUpstreamStopGrace     = 5 * time.Second
	// MaxUpstreamFrameBytes bounds max_frame_bytes.
	MaxUpstreamFrameBytes = 64 << 20
)

// UpstreamConfig is an agent server that speaks session RPC itself (upstream.go).
type UpstreamConfig struct {
	// URL is the upstream's WebSocket endpoint (ws:// or wss://, e.g.
	// ws://127.0.0.1:7391/session) or, for HTTP+SSE, its base URL (http:// or https://;
	// the requests go to <URL>/session/chat, /session/abort and /session/status).
	URL string `yaml:"url" json:"url"`
	// Transport is "websocket" or "sse"; empty chooses by the URL's scheme.
	Transport string `yaml:"transport" json:"transport,omitempty"`
	// DialTimeout bounds connecting to the upstream: TCP, TLS and the WebSocket handshake,
	// or the HTTP response headers of POST /session/chat (default 10s).
	DialTimeout time.Duration `yaml:"dial_timeout" json:"dial_timeout,omitempty"`
	// MaxFrameBytes bounds one message the upstream sends (a WebSocket message, one SSE
	// event's data); a larger one ends the request with PAYLOAD_TOO_LARGE (default 1 MiB,
	// at most 64 MiB).
	MaxFrameBytes int64 `yaml:"max_frame_bytes" json:"max_frame_bytes,omitempty"`
	// IdleTimeout is the longest the upstream may stay silent during a request before it
	// fails as UNAVAILABLE (default 5m).
	IdleTimeout time.Duration `yaml:"idle_timeout" json:"idle_timeout,omitempty"`
	// AbortTimeout bounds sending chat.abort upstream when a request is cancelled
	// (default 2s).
	AbortTimeout time.Duration `yaml:"abort_timeout" json:"abort_timeout,omitempty"`
	// AllowPlaintextHopToken lets a ws:// or http:// URL to a host that is not loopback
	// receive the hop token in the clear; refused otherwise.
	AllowPlaintextHopToken bool `yaml:"allow_plaintext_hop_token" json:"allow_plaintext_hop_token,omitempty"`
	// DownstreamToken is the credential the upstream receives on each request's hop
	// (default: a token minted for it, aud = the route's name).
	DownstreamToken gateway.DownstreamTokenConfig `yaml:"downstream_token" json:"downstream_token,omitzero"`

	// Command, when set, is started with Args, Env and Dir when the target is built and
	// kept running (started again RestartDelay after it exits) until the target is
	// closed: the default configuration runs `gatehouse demo-chat` this way. It must serve
	// URL.
	Command string `yaml:"command" json:"command,omitempty"`
	// Args are the command's arguments.
	Args []string `yaml:"args" json:"args,omitempty"`
	// Env is added to the command's environment (which otherwise holds only HOME, PATH,
	// USER, LANG, TMPDIR, TZ and the like of the gateway's).
	Env map[string]string `yaml:"env" json:"env,omitempty"`
	// Dir is the command's working directory (default: the gateway's).
	Dir string `yaml:"dir" json:"dir,omitempty"`
	// RestartDelay is waited before starting the command again after it exits (default 1s).
	RestartDelay time.Duration `yaml:"restart_delay" json:"restart_delay,omitempty"`
	// StopGrace is how long the command has to exit after SIGTERM on close before it is
	// killed (default 5s).
	StopGrace time.Duration `yaml:"stop_grace" json:"stop_grace,omitempty"`
}

// WithDefaults returns c with every unset limit at its default and Transport resolved.
func (c UpstreamConfig) WithDefaults() UpstreamConfig {
	if c.Transport == "" {
		if u, err := url.Parse(c.URL); err == nil && isHTTP(u.Scheme) {
			c.Transport = TransportSSE
		} else {
			c.Transport = TransportWebSocket
		}
	}
	setDefault(&c.DialTimeout, DefaultUpstreamDialTimeout)
	setDefault(&c.IdleTimeout, DefaultUpstreamIdleTimeout)
	setDefault(&c.AbortTimeout, DefaultUpstreamAbortTimeout)
	setDefault(&c.RestartDelay, DefaultUpstreamRestartDelay)
	setDefault(&c.StopGrace, DefaultUpstreamStopGrace)
	if c.MaxFrameBytes == 0 {
		c.MaxFrameBytes = DefaultUpstreamMaxFrameBytes
	}
	return c
}

func setDefault(d *time.Duration, def time.Duration) {
	if *d == 0 {
		*d = def
	}
}

// Validate checks the section: a URL whose scheme fits the transport, limits in range,
// the downstream token section, no hop token in the clear to a remote host.
func (c UpstreamConfig) Validate() error {
	u, err := url.Parse(c.URL)
	if err != nil || u.Host == "" {
		return errors.New("upstream.url must be an absolute ws://, wss://, http:// or https:// URL")
	}
	c = c.WithDefaults()
	switch c.Transport {
	case TransportWebSocket:
		if u.Scheme != "ws" && u.Scheme != "wss" {
			return fmt.Errorf("upstream.url: transport websocket needs a ws:// or wss:// URL, not %s://", u.Scheme)
		}
	case TransportSSE:
		if !isHTTP(u.Scheme) {
			return fmt.Errorf("upstream.url: transport sse needs an http:// or https:// URL, not %s://", u.Scheme)
		}
	default:
		return fmt.Errorf("upstream.transport: %q is not one of websocket, sse", c.Transport)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"dial_timeout", c.DialTimeout}, {"idle_timeout", c.IdleTimeout}, {"abort_timeout", c.AbortTimeout},
		{"restart_delay", c.RestartDelay}, {"stop_grace", c.StopGrace}} {
		if d.v < 0 {
			return fmt.Errorf("upstream.%s must not be negative", d.name)
		}
	}
	if c.MaxFrameBytes < 1024 || c.MaxFrameBytes > MaxUpstreamFrameBytes {
		return fmt.Errorf("upstream.max_frame_bytes must be between 1024 and %d", MaxUpstreamFrameBytes)
	}
	if err := c.DownstreamToken.Validate(); err != nil {
		return fmt.Errorf("upstream.%w", err)
	}
	if c.Command == "" && (len(c.Args) > 0 || len(c.Env) > 0 || c.Dir != "") {
		return errors.New("upstream: args, env and dir need a command")
	}
	if mode, _ := gateway.ParseHopMode(c.DownstreamToken.Mode); mode != gateway.HopNone && !c.AllowPlaintextHopToken &&
		(u.Scheme == "ws" || u.Scheme == schemeHTTP) && !isLoopback(u.Hostname()) {
		return fmt.Errorf("upstream.url %s is plain text to a host that is not loopback, and would carry a hop token in the clear: "+
			"use wss:// or https://, set downstream_token.mode: none, or set allow_plaintext_hop_token: true if the network path is trusted", u.Redacted())
	}
	return nil
}

// isLoopback reports whether host is localhost or a loopback address (names are not
// resolved).
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

const schemeHTTP = "http"

// isHTTP reports whether scheme is http or https.
func isHTTP(scheme string) bool { return scheme == schemeHTTP || scheme == "https" }
