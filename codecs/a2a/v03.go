package a2a

import (
	"encoding/base64"
	"strings"
)

// The 0.3 spellings of what 1.0 names differently: lowercase kebab states, lowercase roles,
// and a kind member on every polymorphic object.

// states03 maps each state to its 0.3 name.
var states03 = map[TaskState]string{
	StateSubmitted: "submitted", StateWorking: "working", StateCompleted: "completed",
	StateFailed: "failed", StateCanceled: "canceled", StateInputRequired: "input-required",
	StateRejected: "rejected", StateAuthRequired: "auth-required", StateUnspecified: "unknown",
}

// In returns the name of s in version v.
func (s TaskState) In(v Version) string {
	if v == V10 {
		return string(s)
	}
	return states03[s]
}

// ParseState reads a state named in version v; false when it names none.
func ParseState(name string, v Version) (TaskState, bool) {
	if v == V10 {
		if _, ok := states03[TaskState(name)]; ok {
			return TaskState(name), true
		}
		return "", false
	}
	for s, n := range states03 {
		if n == name {
			return s, true
		}
	}
	return "", false
}

// In returns m as version v writes it.
func (m Message) In(v Version) Message {
	if v == V10 {
		return m
	}
	m.Kind = "message"
	m.Role = Role(strings.ToLower(strings.TrimPrefix(string(m.Role), "ROLE_")))
	parts := make([]Part, len(m.Parts))
	for i, p := range m.Parts {
		parts[i] = p.in03()
	}
	m.Parts = parts
	return m
}

// in03 returns the 0.3 spelling of a 1.0 part.
func (p Part) in03() Part {
	switch {
	case p.Text != nil:
		return Part{Kind: "text", Text: p.Text, Metadata: p.Metadata}
	case len(p.Raw) > 0 || p.URL != "":
		f := &FileV03{Name: p.Filename, MimeType: p.MediaType, URI: p.URL}
		if len(p.Raw) > 0 {
			f.Bytes = base64.StdEncoding.EncodeToString(p.Raw)
		}
		return Part{Kind: "file", File: f, Metadata: p.Metadata}
	default:
		return Part{Kind: "data", Data: p.Data, Metadata: p.Metadata}
	}
}

// In returns s as version v writes it (its state is written by MarshalIn).
func (s TaskStatus) In(v Version) TaskStatus {
	if s.Message != nil {
		m := s.Message.In(v)
		s.Message = &m
	}
	s.State = TaskState(s.State.In(v))
	return s
}

// In returns a as version v writes it.
func (a Artifact) In(v Version) Artifact {
	if v == V10 {
		return a
	}
	parts := make([]Part, len(a.Parts))
	for i, p := range a.Parts {
		parts[i] = p.in03()
	}
	a.Parts = parts
	return a
}

// In returns t as version v writes it.
func (t Task) In(v Version) Task {
	t.Status = t.Status.In(v)
	if v == V10 {
		return t
	}
	t.Kind = "task"
	t.Artifacts = mapSlice(t.Artifacts, func(a Artifact) Artifact { return a.In(v) })
	t.History = mapSlice(t.History, func(m Message) Message { return m.In(v) })
	return t
}

// In returns e as version v writes it; final is 0.3's end-of-stream flag.
func (e TaskStatusUpdateEvent) In(v Version, final bool) TaskStatusUpdateEvent {
	e.Status = e.Status.In(v)
	if v == V03 {
		e.Kind, e.Final = "status-update", final
	}
	return e
}

// In returns e as version v writes it.
func (e TaskArtifactUpdateEvent) In(v Version) TaskArtifactUpdateEvent {
	e.Artifact = e.Artifact.In(v)
	if v == V03 {
		e.Kind = "artifact-update"
	}
	return e
}

func mapSlice[T any](in []T, f func(T) T) []T {
	if in == nil {
		return nil
	}
	out := make([]T, len(in))
	for i, x := range in {
		out[i] = f(x)
	}
	return out
}

// decodeBase64 reads standard or URL-safe base64, padded or not.
func decodeBase64(s string) ([]byte, error) {
	s = strings.TrimRight(s, "=")
	if strings.ContainsAny(s, "-_") {
		return base64.RawURLEncoding.DecodeString(s)
	}
	return base64.RawStdEncoding.DecodeString(s)
}
