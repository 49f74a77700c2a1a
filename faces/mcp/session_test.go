package mcpface

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/gatehouse-dev/gatehouse/state"
)

const testSessionKey = "0123456789abcdef0123456789abcdef-test"

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// TestMCPSessionExpiry: a session is valid until just before issue + session_ttl, and not
// from then on; its record and its revocation expire with it.
func TestMCPSessionExpiry(t *testing.T) {
	const ttl = time.Hour
	issued := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := &fakeClock{t: issued}
	kv := state.NewEmbedded(state.EmbeddedOptions{Now: clock.now})
	t.Cleanup(func() { _ = kv.Close() })
	m := newMCPSessions(Config{SessionKey: testSessionKey, SessionTTL: ttl}, kv, clock.now, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	id := m.signer.issue(sessionOwner{}, capSampling, "2025-06-18")
	tok, err := m.check(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.table.save(ctx, tok.name, sessionRecord{ProtocolVersion: "2025-06-18"}, m.remaining(tok)); err != nil {
		t.Fatal(err)
	}
	other := m.signer.issue(sessionOwner{}, 0, "")
	otherTok, _ := m.signer.verify(other)
	if _, err := (requestSessionIDs{m: m, ctx: ctx}).Terminate(other); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name       string
		at         time.Time
		err        error
		record     bool
		revocation bool
	}{
		{"at issue", issued, nil, true, true},
		{"a millisecond before the ttl", issued.Add(ttl - time.Millisecond), nil, true, true},
		{"at the ttl", issued.Add(ttl), errSessionExpired, false, false},
		{"after the ttl", issued.Add(2 * ttl), errSessionExpired, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clock.set(tt.at)
			if _, err := m.check(ctx, id); !errors.Is(err, tt.err) {
				t.Errorf("check: %v, want %v", err, tt.err)
			}
			if _, found, _ := m.table.load(ctx, tok.name); found != tt.record {
				t.Errorf("record present: %v, want %v", found, tt.record)
			}
			if revoked, _ := m.table.revoked(ctx, otherTok.name); revoked != tt.revocation {
				t.Errorf("revocation present: %v, want %v", revoked, tt.revocation)
			}
		})
	}
}

// TestSessionToken: what a token carries comes back out, and any change to it is refused.
func TestSessionToken(t *testing.T) {
	s := &sessionSigner{key: []byte(testSessionKey), ttl: time.Hour, now: time.Now}
	for _, tt := range []struct {
		caps    mcp.ClientCapabilities
		version string
	}{
		{mcp.ClientCapabilities{}, ""},
		{mcp.ClientCapabilities{}, "2025-11-25"},
		{capabilitiesOf(capSampling | capSamplingContext | capSamplingTools), "2025-06-18"},
		{capabilitiesOf(capElicitation | capElicitationForm | capElicitationURL), "2025-03-26"},
		{capabilitiesOf(capRoots | capRootsListChanged | capSampling), "2024-11-05"},
		{capabilitiesOf(0xff), "2025-11-25"},
	} {
		bits := capabilityBits(tt.caps)
		id := s.issue(sessionOwner{}, bits, tt.version)
		tok, err := s.verify(id)
		if err != nil || tok.caps != bits || tok.version != tt.version || capabilityBits(capabilitiesOf(tok.caps)) != bits {
			t.Errorf("issue(%08b, %q) → %+v, %v", bits, tt.version, tok, err)
		}
		for i := range id {
			if id[i] == '.' {
				continue
			}
			changed := id[:i] + string(rune('A'+(id[i]-'A'+1)%26)) + id[i+1:]
			if changed == id {
				continue
			}
			if _, err := s.verify(changed); !errors.Is(err, errSessionInvalid) {
				t.Fatalf("%q with byte %d changed: %v", id, i, err)
			}
		}
	}
	for _, bad := range []string{"", ".", "a.b", strings.Repeat("A", 200) + ".x"} {
		if _, err := s.verify(bad); !errors.Is(err, errSessionInvalid) {
			t.Errorf("verify(%q): %v", bad, err)
		}
	}
}

// TestMCPSessionDeleteWithoutID: a DELETE naming no session is a 400 the face answers
// itself (mcp-go would pass the empty ID to Terminate and answer 500); one naming a
// session goes on to be checked.
func TestMCPSessionDeleteWithoutID(t *testing.T) {
	kv := state.NewEmbedded(state.EmbeddedOptions{})
	t.Cleanup(func() { _ = kv.Close() })
	m := newMCPSessions(Config{SessionKey: testSessionKey, SessionTTL: time.Hour}, kv, time.Now, slog.New(slog.DiscardHandler))
	for _, tt := range []struct {
		name, method, id string
		admitted         bool
		status           int
	}{
		{"DELETE without a session", http.MethodDelete, "", false, http.StatusBadRequest},
		{"DELETE of an unknown session", http.MethodDelete, "nope", false, http.StatusNotFound},
		{"DELETE of a session", http.MethodDelete, m.signer.issue(sessionOwner{}, 0, "2025-11-25"), true, http.StatusOK},
		{"POST without a session (initialize)", http.MethodPost, "", true, http.StatusOK},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(tt.method, "/mcp", nil)
			if tt.id != "" {
				r.Header.Set("Mcp-Session-Id", tt.id)
			}
			w := httptest.NewRecorder()
			if got := m.admit(w, r); got != tt.admitted || w.Code != tt.status {
				t.Fatalf("admitted %v, status %d; want %v, %d (%s)", got, w.Code, tt.admitted, tt.status, w.Body)
			}
		})
	}
}
