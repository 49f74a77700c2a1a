package nekte

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	nk "github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/state"
)

// TestStoreTellsStatusChanges checks Options.OnTaskStatus hears each change the store
// writes — creation, a move, a discard — and nothing for a change refused or unchanged.
func TestStoreTellsStatusChanges(t *testing.T) {
	kv := state.NewEmbedded(state.EmbeddedOptions{})
	defer kv.Close()
	s := newTaskStore(kv, Config{}.WithDefaults().Tasks)
	var got []string
	s.onStatus = func(from, to string) { got = append(got, from+">"+to) }
	ctx := context.Background()
	for _, id := range []string{"a", "b"} {
		if err := s.create(ctx, &record{ID: id, Owner: "o", Status: nk.TaskPending, Input: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.apply(ctx, "o", "a", func(r *record) error { return move(r, nk.TaskAccepted, "", 1) }); err != nil {
		t.Fatal(err)
	}
	if _, err := s.apply(ctx, "o", "a", func(r *record) error { return move(r, nk.TaskPending, "", 2) }); err == nil {
		t.Fatal("accepted → pending was allowed")
	}
	if _, err := s.apply(ctx, "o", "a", func(*record) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := s.discard(ctx, "o", "b"); err != nil {
		t.Fatal(err)
	}
	if err := s.discard(ctx, "o", "b"); err != nil { // gone already: nothing to tell
		t.Fatal(err)
	}
	want := []string{">pending", ">pending", "pending>accepted", "pending>"}
	if !slices.Equal(got, want) {
		t.Fatalf("told %v, want %v", got, want)
	}
}
