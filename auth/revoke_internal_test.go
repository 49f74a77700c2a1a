package auth

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/state"
)

// TestRevocationIndexFits: the largest index max_entries allows — every entry with the
// longest expiry — fits one value of the state store.
func TestRevocationIndexFits(t *testing.T) {
	idx := storedIndex{Version: storedIndexVersion, Stamp: strings.Repeat("S", maxStampBytes)}
	for i := range MaxRevocationEntries {
		k := keyOf(revKindJTI, strings.Repeat("x", i%100)+string(rune(i)))
		idx.Entries = append(idx.Entries, storedEntry{Kind: "j", Digest: digestText(k), Expires: math.MaxInt64})
	}
	val, err := json.Marshal(idx)
	if err != nil {
		t.Fatal(err)
	}
	if len(val) > state.DefaultMaxValueBytes {
		t.Fatalf("%d entries encode to %d bytes, over the store's %d", MaxRevocationEntries, len(val), state.DefaultMaxValueBytes)
	}
	if _, err := decodeIndex(val); err != nil {
		t.Fatalf("decoding it: %v", err)
	}
}

// TestRevokedAllocates nothing: it runs on every authenticated call.
func TestRevokedAllocatesNothing(t *testing.T) {
	kv := state.NewEmbedded(state.EmbeddedOptions{})
	defer func() { _ = kv.Close() }()
	r, err := OpenRevocations(t.Context(), kv, nil, RevocationOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close() }()
	if _, err := r.Revoke(t.Context(), RevokeRequest{Subject: "mallory"}); err != nil {
		t.Fatal(err)
	}
	p := gateway.Principal{Subject: "alice-with-a-rather-long-subject-name@example.com",
		Claims: map[string]any{"jti": "0f8fad5b-d9cb-469f-a165-70867728950e"}}
	if n := testing.AllocsPerRun(100, func() { _ = r.Revoked(p) }); n != 0 {
		t.Fatalf("Revoked allocates %v times", n)
	}
}

// FuzzDecodeRevocationIndex: whatever the store holds, decoding never panics, and what it
// accepts re-encodes to an index that decodes the same and snapshots without a panic.
func FuzzDecodeRevocationIndex(f *testing.F) {
	k := keyOf(revKindSub, "alice")
	good := storedIndex{Version: 1, Stamp: "S", Entries: []storedEntry{{Kind: "s", Digest: digestText(k), Expires: 1}}}
	seed, _ := json.Marshal(good)
	f.Add(string(seed))
	for _, s := range []string{
		`{"v":1,"stamp":"S","e":[]}`, `{"v":1,"stamp":"S"}`, `{"v":2,"stamp":"S","e":[]}`, `{"v":1,"stamp":"","e":[]}`,
		`{"v":1,"stamp":"S","e":[{"k":"j","d":"AAAAAAAAAAAAAAAAAAAAAA","x":5},{"k":"j","d":"AAAAAAAAAAAAAAAAAAAAAA","x":6}]}`,
		`{"v":1,"stamp":"S","e":[{"k":"x","d":"AAAAAAAAAAAAAAAAAAAAAA","x":5}]}`,
		`{"v":1,"stamp":"S","e":[{"k":"j","d":"AAAAAAAAAAAAAAAAAAAAAB","x":5}]}`,
		`{"v":1,"stamp":"S","e":[{"k":"j","d":"AAAA","x":5}]}`,
		`{"v":1,"stamp":"S","e":[{"k":"s","d":"AAAAAAAAAAAAAAAAAAAAAA","x":-1}]}`,
		`{"v":1,"stamp":"S","e":[{"k":"","d":"","x":0}]}`, `[]`, `null`, ``, `{"v":1,"stamp":"S","e":null}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		idx, err := decodeIndex([]byte(data))
		if err != nil {
			return
		}
		s := newSnapshot(idx, 0)
		if len(s.entries) != len(idx.Entries) {
			t.Fatalf("%d entries, snapshot of %d", len(idx.Entries), len(s.entries))
		}
		enc, err := json.Marshal(idx)
		if err != nil {
			t.Fatal(err)
		}
		again, err := decodeIndex(enc)
		if err != nil || !reflect.DeepEqual(newSnapshot(again, 0), s) {
			t.Fatalf("re-encoded index: %v", err)
		}
		_ = s.pruned(time.Now().UnixMilli())
	})
}
