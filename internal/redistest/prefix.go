package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/redis/go-redis/v9"
)

// Prefix returns a key prefix no other test uses, "test:<test name>:<random>:", for tests
// that share one server, and deletes the keys under it at the test's end (when the server
// is then running). Its characters are letters, digits, '-', '_' and ':', so it is also a
// literal SCAN pattern.
func (s *Server) Prefix(t testing.TB) string {
	t.Helper()
	prefix := newPrefix(t)
	t.Cleanup(func() { s.FlushPrefix(t, prefix) })
	return prefix
}

// newPrefix returns "test:<test name>:<random>:", the name reduced to letters, digits,
// '-' and '_'.
func newPrefix(t testing.TB) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := strings.Map(func(r rune) rune {
		if r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_') {
			return r
		}
		return '_'
	}, t.Name())
	return "test:" + name + ":" + hex.EncodeToString(b[:]) + ":"
}

// FlushPrefix deletes every key starting with prefix, which must be a literal SCAN
// pattern (no '*', '?', '[' or '\'). It does nothing when the server is not running.
func (s *Server) FlushPrefix(t testing.TB, prefix string) {
	t.Helper()
	s.mu.Lock()
	running := s.proc != nil
	s.mu.Unlock()
	if !running {
		return
	}
	if strings.ContainsAny(prefix, `*?[\`) {
		t.Fatalf("FlushPrefix(%q): the prefix must not hold glob characters", prefix)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	opts := &redis.Options{Addr: s.Addr, MaxRetries: -1, DisableIdentity: true}
	if s.TLS != nil {
		opts.TLSConfig = s.TLS.config
	}
	c := redis.NewClient(opts)
	defer func() { _ = c.Close() }()
	iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	for iter.Next(ctx) {
		if err := c.Del(ctx, iter.Val()).Err(); err != nil {
			t.Errorf("FlushPrefix(%q): DEL: %v", prefix, err)
			return
		}
	}
	if err := iter.Err(); err != nil {
		t.Errorf("FlushPrefix(%q): SCAN: %v", prefix, err)
	}
}
