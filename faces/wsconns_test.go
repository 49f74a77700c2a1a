package faces_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/faces"
)

func TestOriginChecker(t *testing.T) {
	for _, tc := range []struct {
		origin  string
		allowed []string
		ok      bool
	}{
		{"", nil, true},                                              // not a browser
		{"http://gw.example", nil, true},                             // same host
		{"https://GW.example", nil, true},                            // hosts compare case-insensitively
		{"http://evil.example", nil, false},                          // another host
		{"http://app.example", []string{"http://app.example"}, true}, // listed
		{"http://evil.example", []string{"*"}, true},                 // any
		{"::bad", nil, false},                                        // unparsable
	} {
		r := httptest.NewRequest(http.MethodGet, "http://gw.example/ws", nil)
		if tc.origin != "" {
			r.Header.Set("Origin", tc.origin)
		}
		if got := faces.OriginChecker(tc.allowed)(r); got != tc.ok {
			t.Errorf("origin %q allowed %v: %v, want %v", tc.origin, tc.allowed, got, tc.ok)
		}
	}
}

type drainConn struct {
	done              chan struct{}
	began, aborted    bool
	finishOnBeginning bool
}

func (c *drainConn) BeginDrain() {
	c.began = true
	if c.finishOnBeginning {
		close(c.done)
	}
}
func (c *drainConn) Abort()                { c.aborted = true }
func (c *drainConn) Done() <-chan struct{} { return c.done }

// TestDrainConns: every connection is told to drain; finished ones are not aborted; when
// the grace period ends first, all are aborted and the error says what was busy.
func TestDrainConns(t *testing.T) {
	quick := []*drainConn{{done: make(chan struct{}), finishOnBeginning: true}, {done: make(chan struct{}), finishOnBeginning: true}}
	if err := faces.DrainConns(context.Background(), quick, "test connections"); err != nil {
		t.Fatal(err)
	}
	for _, c := range quick {
		if !c.began || c.aborted {
			t.Fatalf("drained %v, aborted %v", c.began, c.aborted)
		}
	}
	stuck := []*drainConn{{done: make(chan struct{}), finishOnBeginning: true}, {done: make(chan struct{})}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err := faces.DrainConns(ctx, stuck, "test connections")
	if err == nil || err.Error() != "test connections still busy at the end of the grace period" {
		t.Fatalf("err %v", err)
	}
	if !stuck[1].aborted || !stuck[0].aborted {
		t.Fatal("the connections were not aborted")
	}
}
