package sessionrpc

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	wire "github.com/gatehouse-dev/gatehouse/codecs/sessionrpc"
)

// GRPCConfig is a routed gRPC server-streaming method whose messages map onto events
// (grpcstream.go). docs/session-grpc.md describes every key with an example.
type GRPCConfig struct {
	// Method is the routed JSON-RPC method of the server-streaming gRPC method.
	Method string `yaml:"method" json:"method"`
	// Request builds the method's request params from the chat.start payload: request
	// field (a dotted path for a nested field) → where its value comes from. Absent, the
	// request is the empty message.
	Request map[string]RequestField `yaml:"request" json:"request,omitempty"`
	// Events are the rules that turn each streamed message into events, tried in order;
	// every rule that applies to a message emits one event.
	Events []EventRule `yaml:"events" json:"events"`
	// Unmapped says what happens to a message no rule applies to: "drop" (the default)
	// skips it; "refuse" ends the request with chat.error (errorId "unmapped_message")
	// and cancels the gRPC stream.
	Unmapped string `yaml:"unmapped" json:"unmapped,omitempty"`
	// Done is the final reply (the chat.done payload) once the stream ends with OK.
	Done DoneMapping `yaml:"done" json:"done"`
}

// RequestField is the source of one request field: exactly one of From and Value.
type RequestField struct {
	// From is a dotted path in the chat.start payload ("message", "sessionId",
	// "options.limit"); when the payload has nothing there the field takes Default, or is
	// left out.
	From string `yaml:"from" json:"from,omitempty"`
	// Value is a constant (any JSON value).
	Value any `yaml:"value" json:"value,omitempty"`
	// Default is the value of a From field the payload does not have.
	Default any `yaml:"default" json:"default,omitempty"`
}

// EventRule turns a streamed message into one event.
type EventRule struct {
	// Type is the event type, a constant. Exactly one of Type and TypeFrom is set.
	Type string `yaml:"type" json:"type,omitempty"`
	// TypeFrom is a dotted path in the message whose value (its text for a string, its
	// JSON otherwise) chooses the event type through Types; a message whose value is not
	// in the table (and with no Types["*"]) is not mapped by this rule.
	TypeFrom string `yaml:"type_from" json:"type_from,omitempty"`
	// Types is TypeFrom's table: field value → event type; the key "*" matches any
	// other value.
	Types map[string]string `yaml:"types" json:"types,omitempty"`
	// Has, when set, applies the rule only to messages that have a non-null value at
	// this dotted path.
	Has string `yaml:"has" json:"has,omitempty"`
	// Every, when above 1, applies the rule only to every Every-th message of the stream
	// (the Every-th, the 2·Every-th, …; messages are counted from 1, mapped or not).
	Every int `yaml:"every" json:"every,omitempty"`
	// Fields fill event members from the message: event member (a dotted path for a
	// nested member) → dotted path in the message ("." for the whole message). A member
	// whose source the message does not have is left out.
	Fields map[string]string `yaml:"fields" json:"fields,omitempty"`
	// Templates fill event members with text: event member → a string in which each
	// {path} is replaced by the text of the message's value at that dotted path (empty
	// when absent); {{ and }} stand for literal braces.
	Templates map[string]string `yaml:"templates" json:"templates,omitempty"`
	// Const fills event members with constants: event member → any JSON value.
	Const map[string]any `yaml:"const" json:"const,omitempty"`
}

// DoneMapping builds the chat.done payload from the stream's end.
type DoneMapping struct {
	// Text, when true, puts the concatenated text of the request's text-delta events in
	// the member "text".
	Text bool `yaml:"text" json:"text,omitempty"`
	// Fields fill members from the last message of the stream: member → dotted path in
	// the message ("." for the whole message). Left out when the stream had no message.
	Fields map[string]string `yaml:"fields" json:"fields,omitempty"`
	// Const fills members with constants.
	Const map[string]any `yaml:"const" json:"const,omitempty"`
}

// Values of GRPCConfig.Unmapped.
const (
	UnmappedDrop   = "drop"
	UnmappedRefuse = "refuse"
)

// eventTypes are the event types of the contract, and the members a mapped event of
// each type must fill.
var eventTypes = map[string][]string{
	wire.EventStatus:     nil,
	wire.EventReasoning:  {"text"},
	wire.EventToolCall:   {"id", "name"},
	wire.EventToolOutput: {"id"},
	wire.EventToolResult: {"id", "success"},
	wire.EventTextDelta:  {"text"},
	wire.EventUsage:      nil,
	wire.EventChecklist:  {"groupId", "title", "items"},
	wire.EventError:      {"message"},
}

// Validate checks c: a method, well-formed paths, known event types with the members they
// require, constants that encode as JSON. Its errors name the offending key.
func (c *GRPCConfig) Validate() error {
	_, err := compileGRPC(c)
	return err
}

// compileGRPC checks c and turns it into the mapping GRPCStream runs.
func compileGRPC(c *GRPCConfig) (*mapping, error) {
	if c == nil {
		return nil, errors.New("grpc: the section is empty")
	}
	if strings.TrimSpace(c.Method) == "" {
		return nil, errors.New("grpc.method is required")
	}
	m := &mapping{refuse: c.Unmapped == UnmappedRefuse}
	switch c.Unmapped {
	case "", UnmappedDrop, UnmappedRefuse:
	default:
		return nil, fmt.Errorf("grpc.unmapped: %q is not one of drop, refuse", c.Unmapped)
	}
	req, err := compileRequest(c.Request)
	if err != nil {
		return nil, err
	}
	m.request = req
	if len(c.Events) == 0 {
		return nil, errors.New("grpc.events: at least one rule is required")
	}
	for i := range c.Events {
		r, err := compileRule(&c.Events[i])
		if err != nil {
			return nil, fmt.Errorf("grpc.events[%d]%w", i, err)
		}
		m.rules = append(m.rules, r)
	}
	if m.done, err = compileDone(&c.Done); err != nil {
		return nil, err
	}
	return m, nil
}

// compileRequest checks the request mapping and orders it into a member tree.
func compileRequest(fields map[string]RequestField) (*tree, error) {
	t := &tree{}
	for _, name := range sortedKeys(fields) {
		f := fields[name]
		key := "grpc.request." + name
		dst, err := parsePath(name)
		if err != nil || len(dst) == 0 {
			return nil, fmt.Errorf("%s: the request field %w", key, pathErr(name, err))
		}
		var s source
		switch {
		case f.From != "" && f.Value != nil:
			return nil, fmt.Errorf("%s: set one of from, value", key)
		case f.From != "":
			if s.path, err = parsePath(f.From); err != nil || len(s.path) == 0 {
				return nil, fmt.Errorf("%s.from: %w", key, pathErr(f.From, err))
			}
			if f.Default != nil {
				if s.fallback, err = constJSON(f.Default); err != nil {
					return nil, fmt.Errorf("%s.default: %w", key, err)
				}
			}
		case f.Value != nil:
			if f.Default != nil {
				return nil, fmt.Errorf("%s.default: only a from field has a default", key)
			}
			if s.constant, err = constJSON(f.Value); err != nil {
				return nil, fmt.Errorf("%s.value: %w", key, err)
			}
		default:
			return nil, fmt.Errorf("%s: set one of from, value", key)
		}
		if err := t.add(dst, s); err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
	}
	return t, nil
}

// compileRule checks one event rule; its errors continue "grpc.events[i]".
func compileRule(r *EventRule) (*rule, error) {
	out := &rule{every: r.Every}
	var err error
	if r.Every < 0 {
		return nil, fmt.Errorf(".every: %d must not be negative", r.Every)
	}
	if r.Has != "" {
		if out.has, err = parsePath(r.Has); err != nil || len(out.has) == 0 {
			return nil, fmt.Errorf(".has: %w", pathErr(r.Has, err))
		}
	}
	var types []string
	switch {
	case r.Type != "" && r.TypeFrom != "":
		return nil, errors.New(": set one of type, type_from")
	case r.Type != "":
		if len(r.Types) > 0 {
			return nil, errors.New(".types: only a type_from rule has a table")
		}
		out.typ = r.Type
		types = []string{r.Type}
	case r.TypeFrom != "":
		if out.typeFrom, err = parsePath(r.TypeFrom); err != nil || len(out.typeFrom) == 0 {
			return nil, fmt.Errorf(".type_from: %w", pathErr(r.TypeFrom, err))
		}
		if len(r.Types) == 0 {
			return nil, errors.New(".types: a type_from rule needs its table (field value → event type)")
		}
		out.types = r.Types
		for _, k := range sortedKeys(r.Types) {
			types = append(types, r.Types[k])
		}
	default:
		return nil, errors.New(": set one of type, type_from")
	}
	for _, typ := range types {
		if _, ok := eventTypes[typ]; !ok {
			return nil, fmt.Errorf(": unknown event type %q (one of %s)", typ, strings.Join(sortedKeys(eventTypes), ", "))
		}
	}
	if out.members, err = compileMembers(r.Fields, r.Templates, r.Const); err != nil {
		return nil, err
	}
	for _, typ := range types {
		for _, req := range eventTypes[typ] {
			if !out.members.has(req) {
				return nil, fmt.Errorf(": a %s event needs the member %q (set it in fields, templates or const)", typ, req)
			}
		}
	}
	return out, nil
}

// compileMembers checks fields, templates and constants and orders them into a member
// tree; its errors continue the key of the section holding them.
func compileMembers(fields, templates map[string]string, consts map[string]any) (*tree, error) {
	t := &tree{}
	add := func(section, member string, s source) error {
		dst, err := parsePath(member)
		switch {
		case err != nil || len(dst) == 0:
			return fmt.Errorf(".%s: the member %w", section, pathErr(member, err))
		case dst[0] == "type":
			return fmt.Errorf(".%s.%s: the member type is the rule's event type", section, member)
		}
		if err := t.add(dst, s); err != nil {
			return fmt.Errorf(".%s.%s: %w", section, member, err)
		}
		return nil
	}
	for _, member := range sortedKeys(fields) {
		p, err := parsePath(fields[member])
		if err != nil {
			return nil, fmt.Errorf(".fields.%s: %w", member, pathErr(fields[member], err))
		}
		if err := add("fields", member, source{path: p, whole: len(p) == 0}); err != nil {
			return nil, err
		}
	}
	for _, member := range sortedKeys(templates) {
		tpl, err := parseTemplate(templates[member])
		if err != nil {
			return nil, fmt.Errorf(".templates.%s: %w", member, err)
		}
		if err := add("templates", member, source{template: tpl}); err != nil {
			return nil, err
		}
	}
	for _, member := range sortedKeys(consts) {
		v, err := constJSON(consts[member])
		if err != nil {
			return nil, fmt.Errorf(".const.%s: %w", member, err)
		}
		if err := add("const", member, source{constant: v}); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// compileDone checks the final-reply mapping.
func compileDone(d *DoneMapping) (*doneMapping, error) {
	members, err := compileMembers(d.Fields, nil, d.Const)
	if err != nil {
		return nil, fmt.Errorf("grpc.done%w", err)
	}
	if d.Text && members.has("text") {
		return nil, errors.New("grpc.done.text: the member text is also set in done.fields or done.const")
	}
	return &doneMapping{text: d.Text, members: members}, nil
}

// parsePath splits a dotted path; "." is the empty path (the whole value).
func parsePath(s string) ([]string, error) {
	switch s {
	case "":
		return nil, errEmptyPath
	case ".":
		return nil, nil
	}
	p := strings.Split(s, ".")
	if slices.Contains(p, "") {
		return nil, errEmptySegment
	}
	return p, nil
}

var (
	errEmptyPath    = errors.New("path is empty")
	errEmptySegment = errors.New("path has an empty segment")
)

// pathErr describes a path that parsePath refused, or that named the whole value where a
// member is needed.
func pathErr(s string, err error) error {
	if err == nil {
		return fmt.Errorf("%q must name a field, not the whole value", s)
	}
	return fmt.Errorf("%q: %w", s, err)
}

// constJSON encodes a configured constant.
func constJSON(v any) (json.RawMessage, error) {
	b, err := json.Marshal(normalize(v))
	if err != nil {
		return nil, fmt.Errorf("not a JSON value: %w", err)
	}
	return b, nil
}

// normalize turns the map[any]any a YAML decoder may produce into map[string]any.
func normalize(v any) any {
	switch x := v.(type) {
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[fmt.Sprint(k)] = normalize(e)
		}
		return m
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = normalize(e)
		}
		return m
	case []any:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = normalize(e)
		}
		return s
	}
	return v
}

// sortedKeys returns m's keys in order, so compiled mappings and errors are deterministic.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
