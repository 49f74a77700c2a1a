package auth

import (
	"path/filepath"
	"slices"
)

// WithBaseDir returns c with every relative file path of the section — each issuer's
// jwks_file and pem_files, the key ring's key_files and key_dir — joined to dir, the
// directory of the configuration file that names them, so that a file loads the same keys
// whatever the process's working directory. Absolute paths, URLs (jwks_url) and unset
// paths are left as they are; an empty dir (the embedded default configuration, which has
// no file) leaves paths relative to the working directory. c itself is not changed: the
// result shares no slice or pointer that it changes with c.
func (c Config) WithBaseDir(dir string) Config {
	if dir == "" {
		return c
	}
	if c.JWT != nil {
		jwt := *c.JWT
		jwt.Issuers = slices.Clone(jwt.Issuers)
		for i := range jwt.Issuers {
			iss := &jwt.Issuers[i]
			iss.JWKSFile = under(dir, iss.JWKSFile)
			iss.PEMFiles = underAll(dir, iss.PEMFiles)
		}
		c.JWT = &jwt
	}
	if c.KeyRing != nil {
		ring := *c.KeyRing
		ring.KeyFiles = underAll(dir, ring.KeyFiles)
		ring.KeyDir = under(dir, ring.KeyDir)
		c.KeyRing = &ring
	}
	return c
}

// under joins a relative path to dir; empty and absolute paths are returned as they are.
func under(dir, path string) string {
	if path == "" || filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(dir, path)
}

// underAll is under for each of paths, in a new slice (nil for none).
func underAll(dir string, paths []string) []string {
	if len(paths) == 0 {
		return paths
	}
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = under(dir, p)
	}
	return out
}
