package mcpface

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// TestRefusalRecordedWhileResponseStarts: a tool handler records its call's refusal while
// mcp-go, on a goroutine of its own, starts the POST's event stream (a progress
// notification came first) — the race detector sees no unsynchronized access.
func TestRefusalRecordedWhileResponseStarts(t *testing.T) {
	fr := &faceRequest{}
	ctx := context.WithValue(context.Background(), faceRequestKey{}, fr)
	rec := httptest.NewRecorder()
	rec.Header().Set("Content-Type", "text/event-stream")
	w := &refusalWriter{ResponseWriter: rec, fr: fr}
	started := make(chan struct{})
	go func() {
		defer close(started)
		w.WriteHeader(http.StatusOK)
	}()
	if _, err := toolResult(ctx, nil, gateway.Errorf(schemas.CodeOverloaded, "busy"), "trace"); err == nil {
		t.Fatal("a refused call gave no error")
	}
	<-started
	if r := fr.refusal.Load(); r == nil || r.err.Code() != schemas.CodeOverloaded {
		t.Fatalf("refusal %+v", r)
	}
	if w.held || rec.Code != http.StatusOK {
		t.Fatalf("an event stream was held (%v, %d)", w.held, rec.Code)
	}
}
