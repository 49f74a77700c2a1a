package a2aface

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/gatehouse-dev/gatehouse/codecs/a2a"
	nk "github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/capability"
)

// Prefixes of the ids the face makes.
const (
	taskIDPrefix    = "a2a-"
	contextIDPrefix = "ctx-"
)

// send serves SendMessage: the task starts, and unless the client asked for an answer at
// once (returnImmediately, 0.3 blocking: false) the response waits for it to end — until
// the call's deadline, when the task is answered as it stands.
func (x *exchange) send(ctx context.Context) {
	r, s, aerr := x.startTask(ctx)
	if aerr != nil {
		x.writeError(x.req.ID, aerr)
		return
	}
	defer func() { _ = s.Close() }()
	tr := newTracker(r, x.f.now)
	if !x.req.Send.Configuration.Immediate() {
		wctx, cancel := context.WithDeadline(ctx, x.ex.Deadline)
		for {
			msg, err := s.Recv(wctx)
			if err != nil {
				break // ended, or the deadline: the task as it stands
			}
			if _, final := tr.apply(msg); final {
				break
			}
		}
		cancel()
	}
	task := x.trimmed(tr.task, x.req.Send.Configuration.HistoryLen())
	b, err := a2a.MarshalSendResult(task, x.req.Version)
	if err != nil {
		x.writeError(x.req.ID, a2a.Errf(a2a.CodeInternal, "Internal error"))
		return
	}
	x.writeResult(b)
}

// sendStreaming serves SendStreamingMessage: the task, then its status and artifact
// updates as events, until it ends.
func (x *exchange) sendStreaming(ctx context.Context) {
	r, s, aerr := x.startTask(ctx)
	if aerr != nil {
		x.writeError(x.req.ID, aerr)
		return
	}
	defer func() { _ = s.Close() }()
	tr := newTracker(r, x.f.now)
	es := x.newEventStream()
	task := x.trimmed(tr.task, x.req.Send.Configuration.HistoryLen())
	if es.send(a2a.Event{Task: &task}) {
		es.follow(ctx, s, tr)
	}
}

// startTask resolves the message's skill and input, records the task and delegates it to
// NEKTE as the caller; it returns the task's record and its NEKTE event stream.
func (x *exchange) startTask(ctx context.Context) (*record, gateway.Stream, *a2a.Error) {
	p := x.req.Send
	m := p.Message
	if m.TaskID != "" {
		return nil, nil, x.continued(ctx, m.TaskID)
	}
	c, aerr := x.skill(p)
	if aerr != nil {
		return nil, nil, aerr
	}
	input, aerr := inputOf(m, c)
	if aerr != nil {
		return nil, nil, aerr
	}
	push := p.Configuration.PushConfig()
	if push != nil {
		field := "configuration.taskPushNotificationConfig.url"
		if x.req.Version == a2a.V03 {
			field = "configuration.pushNotificationConfig.url"
		}
		if aerr := x.checkPush(push, field); aerr != nil {
			return nil, nil, aerr
		}
	}
	r := &record{ID: newID(taskIDPrefix), ContextID: m.ContextID, Owner: x.owner, Skill: c.ID, CreatedAt: x.f.now().UnixMilli()}
	if r.ContextID == "" {
		r.ContextID = newID(contextIDPrefix)
	}
	m.TaskID, m.ContextID = r.ID, r.ContextID
	r.History = []a2a.Message{*m}
	st := x.store()
	if err := st.create(ctx, r); err != nil {
		return nil, nil, fromGateway(gateway.AsError(err))
	}
	params, _ := json.Marshal(map[string]any{"task": map[string]any{ // strings and checked JSON always marshal
		"id": r.ID, "desc": describe(m), "cap": c.ID, "in": input,
	}})
	out := x.call(ctx, nk.MethodDelegate, params)
	if out.Err != nil {
		st.remove(context.WithoutCancel(ctx), r)
		return nil, nil, fromGateway(out.Err)
	}
	if out.Res == nil || out.Res.Stream == nil {
		st.remove(context.WithoutCancel(ctx), r)
		return nil, nil, a2a.Errf(a2a.CodeInvalidAgentResponse, "The task did not start")
	}
	if push != nil {
		if _, aerr := x.addPush(ctx, r, *push); aerr != nil {
			// The task started, but nobody would hear of it: it is canceled.
			_ = out.Res.Stream.Close()
			cancel, _ := json.Marshal(nk.TaskCancelParams{TaskID: r.ID, Reason: "its push notification config was refused"})
			x.call(context.WithoutCancel(ctx), nk.MethodTaskCancel, cancel)
			return nil, nil, aerr
		}
	}
	return r, out.Res.Stream, nil
}

// continued answers a message that names a task: this agent's tasks take one message, so
// a further one is refused — as TaskNotFound when the task is not the caller's.
func (x *exchange) continued(ctx context.Context, id string) *a2a.Error {
	if _, err := x.store().get(ctx, x.owner, id); err != nil {
		return x.lookupError(err, id)
	}
	return a2a.UnsupportedOperation("This agent's tasks take one message; send a new message without taskId")
}

func (x *exchange) store() store {
	return store{kv: x.f.kv, ttl: x.cfg.TaskTTL, max: x.cfg.MaxTasksPerPrincipal}
}

// skill returns the capability the message names (metadata "skill" or "skillId", of the
// message or of the request) or a2a.default_skill, among those the caller may see.
func (x *exchange) skill(p *a2a.SendMessageRequest) (capability.Capability, *a2a.Error) {
	id := metaString(p.Message.Metadata, "skill", "skillId")
	if id == "" {
		id = metaString(p.Metadata, "skill", "skillId")
	}
	if id == "" {
		id = x.cfg.DefaultSkill
	}
	if id == "" {
		return capability.Capability{}, a2a.InvalidParams("message.metadata.skill", "is required: this agent has no default skill")
	}
	for _, c := range x.rt.Skills(&x.ex.Principal) {
		if c.ID == id {
			return c, nil
		}
	}
	return capability.Capability{}, a2a.InvalidParams("message.metadata.skill", "names no skill of this agent")
}

// metaString returns the first of names that metadata (an object) holds as a string.
func metaString(metadata json.RawMessage, names ...string) string {
	if len(metadata) == 0 {
		return ""
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(metadata, &m) != nil {
		return ""
	}
	for _, n := range names {
		var s string
		if json.Unmarshal(m[n], &s) == nil && s != "" {
			return s
		}
	}
	return ""
}

// inputOf returns the capability input a message carries: its first data part; else its
// text, when it is a JSON object or array, or as the one string property of the skill's
// input schema, or nothing for a skill that takes no input.
func inputOf(m *a2a.Message, c capability.Capability) (json.RawMessage, *a2a.Error) {
	var texts []string
	files := 0
	for _, p := range m.Parts {
		switch {
		case len(p.Data) > 0 && !bytes.Equal(bytes.TrimSpace(p.Data), []byte("null")):
			return p.Data, nil
		case p.Text != nil:
			texts = append(texts, *p.Text)
		case len(p.Raw) > 0 || p.URL != "":
			files++
		}
	}
	text := strings.Join(texts, "\n")
	if t := strings.TrimSpace(text); (strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[")) && json.Valid([]byte(t)) {
		return json.RawMessage(t), nil
	}
	shape := schemaShape(c.Input)
	switch {
	case len(texts) > 0 && shape.textProp != "":
		b, _ := json.Marshal(map[string]string{shape.textProp: text})
		return b, nil
	case shape.empty:
		return json.RawMessage("{}"), nil
	case len(texts) == 0 && files > 0:
		return nil, a2a.Errf(a2a.CodeContentTypeNotSupported, "Incompatible content types").
			At("message.parts", "skill "+c.ID+" takes a JSON object (a data part), not files")
	}
	return nil, a2a.InvalidParams("message.parts", "skill "+c.ID+" takes a JSON object: send it as a data part")
}

// shape is what the face reads of an input schema.
type shape struct {
	// textProp is the property a text message fills: the only required property, or the
	// only property, when it is a string.
	textProp string
	// empty says the schema has no properties.
	empty bool
}

func schemaShape(schema json.RawMessage) shape {
	var s struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if len(schema) == 0 || json.Unmarshal(schema, &s) != nil {
		return shape{empty: len(schema) == 0}
	}
	isString := func(name string) bool {
		p, ok := s.Properties[name]
		return ok && p.Type == "string"
	}
	switch {
	case len(s.Properties) == 0:
		return shape{empty: true}
	case len(s.Required) == 1 && isString(s.Required[0]):
		return shape{textProp: s.Required[0]}
	case len(s.Properties) == 1:
		for name := range s.Properties {
			if isString(name) {
				return shape{textProp: name}
			}
		}
	}
	return shape{}
}

// describe is the NEKTE task's description: the message's text, bounded.
func describe(m *a2a.Message) string {
	var b strings.Builder
	for _, p := range m.Parts {
		if p.Text != nil {
			b.WriteString(*p.Text)
			b.WriteByte(' ')
		}
	}
	s := strings.TrimSpace(b.String())
	if s == "" {
		s = "A2A message " + m.MessageID
	}
	const maxDesc = 512
	for len(s) > maxDesc || !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s[:min(len(s), maxDesc)], "")
	}
	return s
}

// trimmed returns t with at most historyLength messages of history (0: none), and never
// more than a2a.max_history.
func (x *exchange) trimmed(t a2a.Task, historyLength *int32) a2a.Task {
	n := x.cfg.MaxHistory
	if historyLength != nil && int(*historyLength) < n {
		n = int(*historyLength)
	}
	if len(t.History) > n {
		t.History = t.History[len(t.History)-n:]
	}
	if len(t.History) == 0 {
		t.History = nil
	}
	return t
}
