package sessionrpc

import "fmt"

// InvariantError is a frame that breaks the contract: the face ends the request with
// chat.error errorId "invariant_broken" and Reason in its detail.
type InvariantError struct{ Reason string }

func (e *InvariantError) Error() string { return "session invariant broken: " + e.Reason }

func broken(format string, args ...any) *InvariantError {
	return &InvariantError{Reason: fmt.Sprintf(format, args...)}
}

// MaxToolCalls bounds the tool-call ids one request may open (the Checker remembers each).
const MaxToolCalls = 4096

// Checker checks the frames of one request in order: every chat.event payload an object
// with a non-empty string "type"; tool-call with a non-empty string id, not used before;
// tool-output and tool-result naming an earlier tool-call id; exactly one terminal
// (chat.done or chat.error, whose payload is an object) and nothing after it. Unknown
// event types and unknown members pass.
type Checker struct {
	calls    map[string]struct{}
	terminal bool
}

// Done reports whether the terminal frame has been checked.
func (c *Checker) Done() bool { return c.terminal }

// checkLimits are those the Checker re-reads a payload with: the frame's decoder has
// applied the real ones.
var checkLimits = Limits{MaxBytes: 1 << 62, MaxDepth: 1 << 20, MaxStringBytes: 1 << 62}

// Check checks f, the next frame; terminal says it ended the request.
func (c *Checker) Check(f Frame) (terminal bool, err *InvariantError) {
	if c.terminal {
		return false, broken("a %s frame after the terminal one", f.Type)
	}
	if len(f.Payload) == 0 || f.Payload[0] != '{' {
		return false, broken("a %s frame whose payload is not an object", f.Type)
	}
	switch f.Type {
	case TypeChatDone, TypeChatError:
		c.terminal = true
		return true, nil
	case TypeChatEvent:
	default:
		return false, broken("a frame of type %q", f.Type)
	}
	head, derr := decodeObject(f.Payload, checkLimits, "type", "id")
	typ, ok := stringMember(head["type"])
	if derr != nil || !ok || typ == "" {
		return false, broken("an event without a type")
	}
	switch typ {
	case EventToolCall:
		id, ok := stringMember(head["id"])
		if !ok || id == "" {
			return false, broken("a tool-call without an id")
		}
		if _, dup := c.calls[id]; dup {
			return false, broken("tool-call id %q used twice", truncate(id))
		}
		if len(c.calls) >= MaxToolCalls {
			return false, broken("more than %d tool calls", MaxToolCalls)
		}
		if c.calls == nil {
			c.calls = make(map[string]struct{}, 4)
		}
		c.calls[id] = struct{}{}
	case EventToolOutput, EventToolResult:
		id, ok := stringMember(head["id"])
		if !ok {
			return false, broken("a %s without an id", typ)
		}
		if _, known := c.calls[id]; !known {
			return false, broken("a %s for %q, which no earlier tool-call named", typ, truncate(id))
		}
	}
	return false, nil
}
