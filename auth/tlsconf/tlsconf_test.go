package tlsconf_test

import (
	"bytes"
	"crypto/tls"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/auth/tlsconf"
)

func TestValidate(t *testing.T) {
	base := tlsconf.Config{CertFile: "c.pem", KeyFile: "k.pem"}
	tests := []struct {
		name string
		cfg  tlsconf.Config
		path string // of the one problem; "-" for none
	}{
		{"defaults", base, "-"},
		{"no key", tlsconf.Config{CertFile: "c.pem"}, ""},
		{"require without CA", tlsconf.Config{CertFile: "c", KeyFile: "k", ClientAuth: "require"}, "client_ca_file"},
		{"verify_if_given without CA", tlsconf.Config{CertFile: "c", KeyFile: "k", ClientAuth: "verify_if_given"}, "client_ca_file"},
		{"request without CA", tlsconf.Config{CertFile: "c", KeyFile: "k", ClientAuth: "request"}, "-"},
		{"unknown client_auth", tlsconf.Config{CertFile: "c", KeyFile: "k", ClientAuth: "maybe"}, "client_auth"},
		{"TLS 1.1", tlsconf.Config{CertFile: "c", KeyFile: "k", MinVersion: "1.1"}, "min_version"},
		{"CA defaults to require", tlsconf.Config{CertFile: "c", KeyFile: "k", ClientCAFile: "ca"}, "-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.cfg.WithDefaults().Validate()
			if tt.path == "-" && len(got) != 0 || tt.path != "-" && (len(got) != 1 || got[0].Path != tt.path) {
				t.Fatalf("got %v, want a problem at %q", got, tt.path)
			}
		})
	}
	if d := (tlsconf.Config{ClientCAFile: "ca"}).WithDefaults(); d.ClientAuth != tlsconf.ClientAuthRequire || d.MinVersion != "1.2" || d.ReloadInterval != tlsconf.DefaultReloadInterval {
		t.Fatalf("defaults with a CA: %+v", d)
	}
	if d := (tlsconf.Config{}).WithDefaults(); d.ClientAuth != tlsconf.ClientAuthNone {
		t.Fatalf("defaults without a CA: %+v", d)
	}
	if got := (tlsconf.Config{CertFile: "c.pem", KeyFile: "/abs/k.pem"}).WithBaseDir("/etc/g"); got.CertFile != "/etc/g/c.pem" || got.KeyFile != "/abs/k.pem" || got.ClientCAFile != "" {
		t.Fatalf("WithBaseDir: %+v", got)
	}
}

// files is a CA and a server certificate's files in a directory.
type files struct {
	ca        *tlsconf.CA
	cert, key string
}

func newFiles(t *testing.T) *files {
	t.Helper()
	ca, err := tlsconf.NewCA("test", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	f := &files{ca: ca, cert: filepath.Join(dir, "c.pem"), key: filepath.Join(dir, "k.pem")}
	f.write(t)
	return f
}

// write issues a new certificate into the files and returns its serial number.
func (f *files) write(t *testing.T) string {
	t.Helper()
	c, k, err := f.ca.Issue(tlsconf.Leaf{CommonName: "localhost", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Server: true, Validity: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := tlsconf.WriteFileAtomic(f.cert, c, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := tlsconf.WriteFileAtomic(f.key, k, 0o600); err != nil {
		t.Fatal(err)
	}
	pair, _ := tls.X509KeyPair(c, k)
	return pair.Leaf.SerialNumber.String()
}

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func TestSourceReloadsChangedFiles(t *testing.T) {
	f := newFiles(t)
	clk := &clock{now: time.Unix(1_000_000, 0)}
	var logs bytes.Buffer
	src, err := tlsconf.Open(tlsconf.Config{CertFile: f.cert, KeyFile: f.key}.WithDefaults(),
		tlsconf.Options{Listener: "test", NextProtos: []string{"h2"}, Log: slog.New(slog.NewTextHandler(&logs, nil)), Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	first := src.Certificate().SerialNumber.String()
	served := func() string {
		c, err := src.ServerConfig().GetConfigForClient(&tls.ClientHelloInfo{})
		if err != nil {
			t.Fatal(err)
		}
		if c.MinVersion != tls.VersionTLS12 || c.NextProtos[0] != "h2" || c.ClientAuth != tls.NoClientCert {
			t.Fatalf("config %+v", c)
		}
		return c.Certificates[0].Leaf.SerialNumber.String()
	}
	second := f.write(t)
	if got := served(); got != first {
		t.Fatalf("reloaded before reload_interval: %s", got)
	}
	clk.add(tlsconf.DefaultReloadInterval)
	if got := served(); got != second {
		t.Fatalf("after reload_interval: %s, want %s", got, second)
	}

	// A key that does not match is refused, once, and the previous certificate stays.
	if err := os.WriteFile(f.key, []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if src.Reload() {
			t.Fatal("a bad key was served")
		}
	}
	if got := served(); got != second || strings.Count(logs.String(), "TLS files refused") != 1 {
		t.Fatalf("serving %s; logs:\n%s", got, logs.String())
	}
	third := f.write(t)
	if !src.Reload() || served() != third {
		t.Fatal("good files after bad ones not served")
	}
	if src.Reload() {
		t.Fatal("unchanged files reloaded")
	}
}

func TestOpenRefusesBadFiles(t *testing.T) {
	f := newFiles(t)
	other := newFiles(t)
	tests := []struct {
		name string
		cfg  tlsconf.Config
		want string
	}{
		{"missing cert", tlsconf.Config{CertFile: f.cert + ".absent", KeyFile: f.key}, "no such file"},
		{"key of another cert", tlsconf.Config{CertFile: f.cert, KeyFile: other.key}, "private key does not match"},
		{"CA file without certificate", tlsconf.Config{CertFile: f.cert, KeyFile: f.key, ClientCAFile: f.key}, "no PEM certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := tlsconf.Open(tt.cfg.WithDefaults(), tlsconf.Options{}); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
		})
	}
}

func TestWriteDevRefusesToOverwrite(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "client.pem"), []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := tlsconf.WriteDev(dir, false); err == nil {
		t.Fatal("an existing file was not refused")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "client.pem")); string(b) != "mine" {
		t.Fatal("existing file replaced")
	}
	if _, err := os.Stat(filepath.Join(dir, "ca.pem")); err == nil {
		t.Fatal("part of the set written after a refusal")
	}
	paths, err := tlsconf.WriteDev(dir, true)
	if err != nil || len(paths) != 6 {
		t.Fatalf("%v %v", paths, err)
	}
}
