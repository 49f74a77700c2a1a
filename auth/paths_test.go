package auth_test

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/gatehouse-dev/gatehouse/auth"
)

// TestWithBaseDir: every relative file path of the auth section is joined to the
// configuration file's directory; absolute paths, URLs, secrets and unset paths are kept,
// an empty directory changes nothing, and the original section is left as it was.
func TestWithBaseDir(t *testing.T) {
	abs := filepath.Join(t.TempDir(), "abs.pem")
	section := func() auth.Config {
		return auth.Config{
			JWT: &auth.JWTConfig{Issuers: []auth.IssuerConfig{
				{Issuer: "file", JWKSFile: "keys/jwks.json"},
				{Issuer: "pem", PEMFiles: []string{"a.pem", abs, "./sub/../b.pem"}},
				{Issuer: "url", JWKSURL: "https://idp.example.com/jwks.json"},
				{Issuer: "secret", Secret: "s3cr3t-s3cr3t-s3cr3t-s3cr3t-s3cr3t"},
			}},
			APIKeys: []auth.APIKeyConfig{{Name: "ci", Hash: "sha256:00"}},
			KeyRing: &auth.KeyRingConfig{KeyFiles: []string{"ring/1.pem", abs}, KeyDir: "ring"},
		}
	}
	tests := []struct {
		name string
		dir  string
		want func(auth.Config) auth.Config
	}{
		{"relative paths join the directory", "/etc/gatehouse", func(c auth.Config) auth.Config {
			c.JWT.Issuers[0].JWKSFile = "/etc/gatehouse/keys/jwks.json"
			c.JWT.Issuers[1].PEMFiles = []string{"/etc/gatehouse/a.pem", abs, "/etc/gatehouse/b.pem"}
			c.KeyRing.KeyFiles = []string{"/etc/gatehouse/ring/1.pem", abs}
			c.KeyRing.KeyDir = "/etc/gatehouse/ring"
			return c
		}},
		{"a relative directory stays relative", "configs/examples", func(c auth.Config) auth.Config {
			c.JWT.Issuers[0].JWKSFile = "configs/examples/keys/jwks.json"
			c.JWT.Issuers[1].PEMFiles = []string{"configs/examples/a.pem", abs, "configs/examples/b.pem"}
			c.KeyRing.KeyFiles = []string{"configs/examples/ring/1.pem", abs}
			c.KeyRing.KeyDir = "configs/examples/ring"
			return c
		}},
		{"no directory: the working directory", "", func(c auth.Config) auth.Config { return c }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := section()
			got := in.WithBaseDir(tt.dir)
			if want := tt.want(section()); !reflect.DeepEqual(got, want) {
				t.Fatalf("got  %+v %+v %+v\nwant %+v %+v %+v", got.JWT.Issuers, got.KeyRing, got.APIKeys, want.JWT.Issuers, want.KeyRing, want.APIKeys)
			}
			if !reflect.DeepEqual(in, section()) {
				t.Fatalf("the original section changed: %+v %+v", in.JWT.Issuers, in.KeyRing)
			}
		})
	}
}

// TestWithBaseDirEmptySection: a section without JWT issuers or key ring stays without them.
func TestWithBaseDirEmptySection(t *testing.T) {
	for _, c := range []auth.Config{{}, {Anonymous: &auth.AnonymousConfig{}}} {
		if got := c.WithBaseDir("/etc/gatehouse"); !reflect.DeepEqual(got, c) {
			t.Errorf("WithBaseDir(%+v) = %+v", c, got)
		}
	}
}
