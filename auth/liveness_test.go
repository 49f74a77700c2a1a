package auth_test

import (
	"context"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/auth"
	"github.com/gatehouse-dev/gatehouse/gateway"
)

// ended records the error a watch ended with.
type ended chan error

func (e ended) end(err error) { e <- err }

func (e ended) wait(t *testing.T, want auth.Reason) {
	t.Helper()
	select {
	case err := <-e:
		if got := auth.ReasonOf(err); got != want {
			t.Fatalf("ended with %q, want %q", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("not ended (want %q)", want)
	}
}

func (e ended) none(t *testing.T) {
	t.Helper()
	select {
	case err := <-e:
		t.Fatalf("ended with %v", err)
	default:
	}
}

// TestLiveness: a watch ends at its principal's expiry (by timer) and when its jti or
// subject is revoked (by the list's change notice), each once; Principal refuses a dead
// one; Renew takes the same subject's credential only.
func TestLiveness(t *testing.T) {
	r := openRevocations(t, nil, nil, nil, nil)
	l := auth.NewLiveness(r, nil)
	defer l.Close()
	tests := []struct {
		name   string
		p      gateway.Principal
		act    func()
		reason auth.Reason
	}{
		{"expires", func() gateway.Principal {
			p := holder("ann", "j-1")
			p.Expires = time.Now().Add(50 * time.Millisecond)
			return p
		}(), func() {}, auth.ReasonExpired},
		{"jti revoked", holder("bob", "j-2"), func() {
			if _, err := r.Revoke(context.Background(), auth.RevokeRequest{JTI: "j-2", TTL: time.Hour}); err != nil {
				t.Fatal(err)
			}
		}, auth.ReasonRevoked},
		{"subject revoked", holder("cat", ""), func() {
			if _, err := r.Revoke(context.Background(), auth.RevokeRequest{Subject: "cat", TTL: time.Hour}); err != nil {
				t.Fatal(err)
			}
		}, auth.ReasonRevoked},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := make(ended, 2)
			w := l.Watch(tt.p, e.end)
			if _, err := w.Principal(); err != nil {
				t.Fatalf("a live principal refused: %v", err)
			}
			tt.act()
			e.wait(t, tt.reason)
			if _, err := w.Principal(); auth.ReasonOf(err) != tt.reason {
				t.Fatalf("Principal after the end: %v", err)
			}
			w.End(err4001(tt.reason))
			e.none(t)
		})
	}
	if n := l.Watching(); n != 0 {
		t.Fatalf("%d watches left", n)
	}

	t.Run("renew", func(t *testing.T) {
		e := make(ended, 1)
		old := holder("dan", "j-3")
		old.Expires = time.Now().Add(100 * time.Millisecond)
		w := l.Watch(old, e.end)
		defer w.Stop()
		other := holder("eve", "j-4")
		if err := w.Renew(other); auth.ReasonOf(err) != auth.ReasonOtherSubject {
			t.Fatalf("another subject's renewal: %v", err)
		}
		renewed := holder("dan", "j-5")
		renewed.Scopes = []string{"write"}
		renewed.Expires = time.Now().Add(time.Hour)
		if err := w.Renew(renewed); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond) // past the old expiry: its timer was replaced
		e.none(t)
		if p, err := w.Principal(); err != nil || len(p.Scopes) != 1 || p.Scopes[0] != "write" {
			t.Fatalf("after renewal: %+v %v", p, err)
		}
	})
	t.Run("dead at once", func(t *testing.T) {
		e := make(ended, 1)
		p := holder("fay", "j-6")
		p.Expires = time.Now().Add(-time.Second)
		l.Watch(p, e.end)
		e.wait(t, auth.ReasonExpired)
	})
}

func err4001(r auth.Reason) error {
	return gateway.NewError(4001).With(auth.DataReason, string(r))
}
