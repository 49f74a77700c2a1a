package agentlink

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend/inputschema"
	agentlinkv1 "github.com/gatehouse-dev/gatehouse/schemas/gen/agentlink/v1"
)

// Bounds of agent messages that are not configurable: they only keep strings short.
const (
	maxAgentIDLen     = 64
	maxOperatorIDLen  = 64
	maxTaskIDLen      = 128
	maxDescriptionLen = 256
	maxVersions       = 16
	maxReasonLen      = 1024
	maxDiagnosticsLen = 4096
	maxRefs           = 64
	maxURILen         = 4096
	maxSchemaDepth    = 64
	maxSignalBytes    = 16 << 10
)

// protocolError is a breach of the protocol by an agent: it is disconnected with Reason.
type protocolError struct{ Reason string }

func (e *protocolError) Error() string { return e.Reason }

func breach(format string, args ...any) error {
	return &protocolError{Reason: fmt.Sprintf(format, args...)}
}

func isIDRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-'
}

// validAgentID: 1–64 characters of A–Z a–z 0–9 . _ -.
func validAgentID(s string) bool {
	if s == "" || len(s) > maxAgentIDLen {
		return false
	}
	for _, r := range s {
		if !isIDRune(r) && r != '.' {
			return false
		}
	}
	return true
}

// validOperatorID: 1–64 characters of a–z 0–9 . _ -, starting with a letter.
func validOperatorID(s string) bool {
	if s == "" || len(s) > maxOperatorIDLen || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for _, r := range s {
		if (r >= 'A' && r <= 'Z') || (!isIDRune(r) && r != '.') {
			return false
		}
	}
	return true
}

// validTaskID is what a task id an agent echoes must look like before it is looked up.
func validTaskID(s string) bool {
	return s != "" && len(s) <= maxTaskIDLen && utf8.ValidString(s)
}

// clipText shortens s to at most n bytes for a reason or a log line.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// checkFrame checks one agent message's size and that exactly one member is set.
func checkFrame(m *agentlinkv1.ConnectRequest, maxBytes int) error {
	if n := proto.Size(m); n > maxBytes {
		return breach("a message of %d bytes is larger than the %d allowed (agents.max_frame_bytes)", n, maxBytes)
	}
	if m.GetMessage() == nil {
		return breach("a message with no member set")
	}
	return nil
}

// operatorSpec is one operator as a validated descriptor declares it, its schemas compiled.
type operatorSpec struct {
	id, description string
	input, output   json.RawMessage
	inSchema        *inputschema.Schema
	outSchema       *inputschema.Schema // nil when no output schema is declared
	cost            *agentlinkv1.CostHint
}

// checkDescriptor checks a node descriptor and compiles its operators' schemas.
func checkDescriptor(d *agentlinkv1.NodeDescriptor, cfg *Config) ([]*operatorSpec, error) {
	if !validAgentID(d.GetAgentId()) {
		return nil, breach("agent_id %q is not 1–64 characters of A–Z a–z 0–9 . _ -", clipText(d.GetAgentId(), 64))
	}
	if n := len(d.GetProtocolVersions()); n == 0 || n > maxVersions {
		return nil, breach("protocol_versions lists %d versions; 1 to %d are allowed", n, maxVersions)
	}
	for _, s := range []string{d.GetArch(), d.GetOs()} {
		if len(s) > 64 || !utf8.ValidString(s) {
			return nil, breach("arch and os are at most 64 characters of UTF-8")
		}
	}
	if t := d.GetTrust(); t != nil && (len(t.GetSignedDescriptor()) > maxSignalBytes || len(t.GetSignature()) > maxSignalBytes || len(t.GetAttestationRef()) > maxURILen) {
		return nil, breach("trust signals larger than %d bytes", maxSignalBytes)
	}
	ops := d.GetOperators()
	if len(ops) == 0 || len(ops) > cfg.MaxOperators {
		return nil, breach("the descriptor advertises %d operators; 1 to %d are allowed (agents.max_operators)", len(ops), cfg.MaxOperators)
	}
	seen := make(map[string]bool, len(ops))
	out := make([]*operatorSpec, 0, len(ops))
	for _, op := range ops {
		spec, err := checkOperator(op, cfg)
		if err != nil {
			return nil, err
		}
		if seen[spec.id] {
			return nil, breach("operator %q is advertised twice", spec.id)
		}
		seen[spec.id] = true
		out = append(out, spec)
	}
	return out, nil
}

func checkOperator(op *agentlinkv1.Operator, cfg *Config) (*operatorSpec, error) {
	id := op.GetId()
	if !validOperatorID(id) {
		return nil, breach("operator id %q is not 1–64 characters of a–z 0–9 . _ - starting with a letter", clipText(id, 64))
	}
	if len(op.GetDescription()) > maxDescriptionLen || !utf8.ValidString(op.GetDescription()) {
		return nil, breach("operator %q: the description is more than %d bytes or not UTF-8", id, maxDescriptionLen)
	}
	lim := inputschema.Limits{MaxBytes: cfg.MaxSchemaBytes, MaxDepth: maxSchemaDepth, RequireObject: true}
	in, err := inputschema.Compile([]byte(op.GetInputSchemaJson()), lim)
	if err != nil {
		return nil, breach("operator %q: input schema: %v", id, err)
	}
	spec := &operatorSpec{id: id, description: op.GetDescription(), input: json.RawMessage(op.GetInputSchemaJson()), inSchema: in, cost: op.GetCost()}
	if out := op.GetOutputSchemaJson(); out != "" {
		lim.RequireObject = false
		if spec.outSchema, err = inputschema.Compile([]byte(out), lim); err != nil {
			return nil, breach("operator %q: output schema: %v", id, err)
		}
		spec.output = json.RawMessage(out)
	}
	return spec, nil
}

// checkAck checks a TaskAck's fields (the task is looked up by the caller).
func checkAck(a *agentlinkv1.TaskAck) error {
	if !validTaskID(a.GetTaskId()) {
		return breach("an acknowledgement with an invalid task_id")
	}
	if len(a.GetReason()) > maxReasonLen || !utf8.ValidString(a.GetReason()) {
		return breach("an acknowledgement's reason is more than %d bytes or not UTF-8", maxReasonLen)
	}
	return nil
}

// checkProgress checks a TaskProgress's fields.
func checkProgress(p *agentlinkv1.TaskProgress) error {
	if !validTaskID(p.GetTaskId()) {
		return breach("a progress report with an invalid task_id")
	}
	if len(p.GetMessage()) > maxReasonLen || !utf8.ValidString(p.GetMessage()) {
		return breach("a progress message is more than %d bytes or not UTF-8", maxReasonLen)
	}
	if p.GetProgress() < 0 || p.GetTotal() < 0 || p.GetProgress() != p.GetProgress() || p.GetTotal() != p.GetTotal() {
		return breach("progress and total must be non-negative numbers")
	}
	return nil
}

// checkResult checks a TaskResult's fields: status set, output JSON well-formed, refs and
// diagnostics within bounds. The output is checked against the operator's schema by the
// dispatcher, which knows the operator.
func checkResult(r *agentlinkv1.TaskResult) error {
	if !validTaskID(r.GetTaskId()) {
		return breach("a result with an invalid task_id")
	}
	switch r.GetStatus() {
	case agentlinkv1.TaskStatus_TASK_STATUS_SUCCEEDED, agentlinkv1.TaskStatus_TASK_STATUS_FAILED:
	default:
		return breach("a result for task %q without a valid status", clipText(r.GetTaskId(), 64))
	}
	if out := r.GetOutputJson(); len(out) > 0 && !json.Valid(out) {
		return breach("the output of task %q is not valid JSON", clipText(r.GetTaskId(), 64))
	}
	if len(r.GetDiagnostics()) > maxDiagnosticsLen || !utf8.ValidString(r.GetDiagnostics()) {
		return breach("diagnostics are more than %d bytes or not UTF-8", maxDiagnosticsLen)
	}
	if err := checkRefs(r.GetOutputRefs()); err != nil {
		return err
	}
	if rc := r.GetReceipt(); rc != nil && (len(rc.GetValidator()) > 256 || len(rc.GetMethod()) > 64 || len(rc.GetSignature()) > maxSignalBytes) {
		return breach("a validation receipt over its bounds")
	}
	return nil
}

// checkRefs checks DataRefs an agent returns.
func checkRefs(refs []*agentlinkv1.DataRef) error {
	if len(refs) > maxRefs {
		return breach("%d data refs; at most %d are allowed", len(refs), maxRefs)
	}
	for _, r := range refs {
		if r.GetUri() == "" || len(r.GetUri()) > maxURILen || !utf8.ValidString(r.GetUri()) {
			return breach("a data ref without a URI, or with one over %d bytes", maxURILen)
		}
		if len(r.GetName()) > 256 || len(r.GetMediaType()) > 256 || len(r.GetSha256()) > 64 || len(r.GetHeaders()) > 16 {
			return breach("a data ref over its bounds")
		}
	}
	return nil
}
