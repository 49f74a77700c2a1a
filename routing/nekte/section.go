package nekte

import (
	"errors"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/gatehouse-dev/gatehouse/routing/capability"
)

// Section is the nekte section of the configuration file: NEKTE on the boundary — the
// nekte.* methods, the agent card at /.well-known/nekte.json and the receipt key in
// /.well-known/jwks.json. Absent, NEKTE is off. Tasks, Contexts and Receipts are read at
// start (tasks belong to the process and outlive reloads: NeedsRestart); Catalog and
// Endpoint follow every reload. The fields are those of Config (the Service's), beside
// Endpoint (the Route's).
type Section struct {
	// Endpoint is the URL the agent card announces for JSON-RPC: the externally visible
	// URL of POST /rpc, for a gateway behind a proxy that terminates TLS or rewrites paths.
	// Empty: the URL of /rpc as the card's request addressed the boundary (RouteParams.Endpoint).
	Endpoint string `yaml:"endpoint" json:"endpoint,omitempty"`
	// Tasks bounds delegated tasks (TasksConfig).
	Tasks TasksConfig `yaml:"tasks" json:"tasks"`
	// Contexts bounds context envelopes (ContextsConfig).
	Contexts ContextsConfig `yaml:"contexts" json:"contexts"`
	// Receipts configures the key that signs task receipts (ReceiptsConfig).
	Receipts ReceiptsConfig `yaml:"receipts" json:"receipts"`
	// Catalog configures the capability catalog (capability.Config).
	Catalog capability.Config `yaml:"catalog" json:"catalog"`
}

// Service returns the Service's configuration of the section.
func (s *Section) Service() Config {
	return Config{Tasks: s.Tasks, Contexts: s.Contexts, Receipts: s.Receipts, Catalog: s.Catalog}
}

// WithBaseDir returns s with a relative receipts.key_file resolved against dir, the
// directory of the configuration file.
func (s Section) WithBaseDir(dir string) Section {
	if s.Receipts.KeyFile != "" && !filepath.IsAbs(s.Receipts.KeyFile) {
		s.Receipts.KeyFile = filepath.Join(dir, s.Receipts.KeyFile)
	}
	return s
}

// ConfigError is one problem of the section, at a dotted path inside it ("tasks.lease");
// an empty Path is the section as a whole.
type ConfigError struct {
	Path string
	Msg  string
}

func (e ConfigError) Error() string { return e.Path + ": " + e.Msg }

// errEndpoint refuses an endpoint that is not an absolute http(s) URL.
var errEndpoint = errors.New("must be an absolute http:// or https:// URL, e.g. https://agents.example.com/rpc")

// Validate reports every problem of the section: an endpoint that is not an absolute
// http(s) URL (empty is valid), then each problem Config.Validate finds, at the key its
// message starts with (else at the section).
func (s *Section) Validate() []ConfigError {
	var out []ConfigError
	if s.Endpoint != "" {
		u, err := url.Parse(s.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			out = append(out, ConfigError{Path: "endpoint", Msg: errEndpoint.Error()})
		}
	}
	return append(out, problems(s.Service().Validate())...)
}

// problems splits what Config.Validate returned into one problem per key, each at <key>
// when its message starts with the key's dotted name (else at the section).
func problems(err error) []ConfigError {
	if err == nil {
		return nil
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	out := make([]ConfigError, 0, len(errs))
	for _, e := range errs {
		msg := strings.TrimPrefix(e.Error(), "nekte: ")
		var path string
		if key, _, _ := strings.Cut(msg, " "); strings.Contains(key, ".") && !strings.ContainsAny(key, ":()") {
			path = key
		}
		out = append(out, ConfigError{Path: path, Msg: msg})
	}
	return out
}

// NeedsRestart reports whether next differs from c in the settings a running Service keeps
// until restart: tasks, contexts and receipts. The catalog follows every reload.
func (c Config) NeedsRestart(next Config) bool {
	return c.Tasks != next.Tasks || c.Contexts != next.Contexts || c.Receipts != next.Receipts
}
