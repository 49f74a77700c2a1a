package capability

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/gatehouse-dev/gatehouse/codecs/nekte"
)

// Problem is a capability a snapshot left out or renamed.
type Problem struct {
	// ID is the capability's id as its source gave it.
	ID string
	// Source names where it came from: its kind and source ("mcp:everything").
	Source string
	// Reason says what happened.
	Reason string
}

// snapshot is one immutable state of the catalog.
type snapshot struct {
	entries     []*entry // sorted by id
	byID        map[string]*entry
	index       *index // documents in the order of entries
	version     string
	generations []uint64 // of each source, when built
	problems    []Problem
}

// entry is one capability as served: normalised, hashed and named for the wire.
type entry struct {
	Capability
	desc      string   // the description as sent (at most nekte.MaxDescLen)
	schemaKey [32]byte // SHA-256 of the input schema: the validator cache key
	cost      *costCell
	validator atomic.Pointer[validator] // the compiled input schema, once needed
}

// capability returns the entry's capability with its current cost hint.
func (e *entry) capability() Capability {
	c := e.Capability
	c.Cost = e.cost.hint()
	return c
}

// emptySchema stands for a schema the source did not give: any value.
var emptySchema = json.RawMessage(`{}`)

// newSnapshot normalises caps (in order: earlier ones win a contested id) and indexes them.
// Cost cells of capabilities already in prev are carried over.
func newSnapshot(cfg *Config, caps []Capability, gens []uint64, prev *snapshot) *snapshot {
	s := &snapshot{byID: make(map[string]*entry, len(caps)), generations: gens}
	var entries []*entry
	for _, c := range caps {
		e, reason := normalise(cfg, c)
		if reason != "" {
			s.problems = append(s.problems, Problem{ID: c.ID, Source: origin(c), Reason: reason})
			continue
		}
		entries = append(entries, e)
	}
	entries = s.resolveIDs(entries)
	slices.SortFunc(entries, func(a, b *entry) int { return strings.Compare(a.ID, b.ID) })
	for _, e := range entries {
		e.cost = newCostCell()
		if prev != nil {
			if old, ok := prev.byID[e.ID]; ok {
				e.cost = old.cost
				if old.schemaKey == e.schemaKey {
					e.validator.Store(old.validator.Load())
				}
			}
		}
		s.byID[e.ID] = e
	}
	s.entries = entries
	s.index = newIndex(entries)
	s.version = catalogVersion(entries, cfg.HashLength)
	return s
}

// origin names a capability's source for problems: "mcp:everything".
func origin(c Capability) string {
	if c.Source == "" {
		return kindPrefix(c.Kind)
	}
	return kindPrefix(c.Kind) + ":" + c.Source
}

// normalise checks a capability and completes it: category, compact schemas (an absent
// schema is {}), hash, wire description and a valid id. It returns the reason when the
// capability cannot be served.
func normalise(cfg *Config, c Capability) (*entry, string) {
	if c.ID == "" || c.Method == "" {
		return nil, "a capability needs an id and a method"
	}
	in, err := compactSchema(c.Input)
	if err != nil {
		return nil, "input schema: " + err.Error()
	}
	out, err := compactSchema(c.Output)
	if err != nil {
		return nil, "output schema: " + err.Error()
	}
	h, err := nekte.Hash(in, out, cfg.HashLength)
	if err != nil {
		return nil, "hashing the schemas: " + err.Error()
	}
	examples, err := compactExamples(c.Examples)
	if err != nil {
		return nil, err.Error()
	}
	c.Examples = examples
	if c.Category == "" {
		c.Category = cfg.category(c.Kind, c.Source)
	}
	c.Category = clip(c.Category, nekte.MaxCategoryLen, "")
	c.ID = shortID(c.ID)
	c.Input, c.Output, c.Hash = in, out, h
	return &entry{Capability: c, desc: clip(c.Description, nekte.MaxDescLen, "…"), schemaKey: sha256.Sum256(in)}, ""
}

// compactSchema returns a schema without insignificant white space; empty is {}. A schema
// must be an object or a boolean.
func compactSchema(s json.RawMessage) (json.RawMessage, error) {
	s = bytes.TrimSpace(s)
	if len(s) == 0 || string(s) == "null" {
		return emptySchema, nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, s); err != nil {
		return nil, errNotJSON
	}
	if c := buf.Bytes()[0]; c != '{' && c != 't' && c != 'f' {
		return nil, errNotSchema
	}
	return buf.Bytes(), nil
}

// compactExamples returns examples with their JSON compacted; each needs an in and an
// out.
func compactExamples(exs []Example) ([]Example, error) {
	if len(exs) == 0 {
		return nil, nil
	}
	out := make([]Example, len(exs))
	for i, ex := range exs {
		for _, f := range []struct {
			src json.RawMessage
			dst *json.RawMessage
		}{{ex.In, &out[i].In}, {ex.Out, &out[i].Out}} {
			var buf bytes.Buffer
			if err := json.Compact(&buf, f.src); err != nil {
				return nil, fmt.Errorf("example %d: %w", i, errNotJSON)
			}
			*f.dst = buf.Bytes()
		}
	}
	return out, nil
}

// resolveIDs keeps ids unique: capabilities that share an id are each renamed
// "<category>.<id>"; a clash left after that keeps the first capability only.
func (s *snapshot) resolveIDs(entries []*entry) []*entry {
	count := map[string]int{}
	for _, e := range entries {
		count[e.ID]++
	}
	seen := map[string]bool{}
	out := entries[:0]
	for _, e := range entries {
		if count[e.ID] > 1 {
			renamed := shortID(e.Category + "." + e.ID)
			s.problems = append(s.problems, Problem{ID: e.ID, Source: origin(e.Capability),
				Reason: "id claimed by more than one source; served as " + renamed})
			e.ID = renamed
		}
		if seen[e.ID] {
			s.problems = append(s.problems, Problem{ID: e.ID, Source: origin(e.Capability), Reason: "duplicate id; left out"})
			continue
		}
		seen[e.ID] = true
		out = append(out, e)
	}
	return out
}

// shortID returns id if it fits the wire's limit; else its longest prefix that leaves room
// for "~" and 8 hex digits of the id's SHA-256, so that long ids stay distinct.
func shortID(id string) string {
	if utf16Len(id) <= nekte.MaxIDLen {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	suffix := "~" + hex.EncodeToString(sum[:4])
	return clip(id, nekte.MaxIDLen-len(suffix), "") + suffix
}

// clip cuts s to at most limit UTF-16 code units (the wire's unit), ending it with mark
// (which counts toward the limit) when it was cut, never splitting a character.
func clip(s string, limit int, mark string) string {
	if utf16Len(s) <= limit {
		return s
	}
	room := limit - utf16Len(mark)
	n, cut := 0, 0
	for i, r := range s {
		if n+utf16.RuneLen(r) > room {
			cut = i
			break
		}
		n += utf16.RuneLen(r)
		cut = i + utf8.RuneLen(r)
	}
	return strings.TrimRight(s[:cut], " ") + mark
}

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// catalogVersion hashes what discover shows of every entry but its cost.
func catalogVersion(entries []*entry, hexLen int) string {
	h := sha256.New()
	for _, e := range entries {
		for _, f := range []string{e.ID, e.Category, e.Hash, e.Description} {
			h.Write([]byte(f))
			h.Write([]byte{0})
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:max(hexLen, nekte.HashLen)]
}
