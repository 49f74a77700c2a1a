package grpcface

// The JSON forms of the nekte.* params and results, and their nekte.v1 counterparts.

import (
	"encoding/json"
	"math"
	"strconv"

	nk "github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
	nektev1 "github.com/gatehouse-dev/gatehouse/schemas/gen/nekte/v1"
)

// discoverParams are nekte.discover's params with the additive cursor, which Discover
// follows page after page.
type discoverParams struct {
	Level  int32              `json:"level"`
	Filter *nk.DiscoverFilter `json:"filter,omitempty"`
	Cursor string             `json:"cursor,omitempty"`
}

// discoverPage is one page of nekte.discover's result, its entries read at any level.
type discoverPage struct {
	Agent      string         `json:"agent"`
	V          string         `json:"v"`
	Caps       []nk.CapSchema `json:"caps"`
	NextCursor string         `json:"next_cursor"`
}

// discoverFilter returns the filter's params, nil when it filters nothing. The float32
// threshold is written with the digits it was given (0.3, not 0.30000001192092896).
func discoverFilter(f *nektev1.DiscoverFilter) *nk.DiscoverFilter {
	out := nk.DiscoverFilter{Category: f.GetCategory(), Query: f.GetQuery(), ID: f.GetId(), TopK: int(f.GetTopK())}
	if t := f.GetThreshold(); t != 0 {
		out.Threshold, _ = strconv.ParseFloat(strconv.FormatFloat(float64(t), 'g', -1, 32), 64)
	}
	if out == (nk.DiscoverFilter{}) {
		return nil
	}
	return &out
}

// addCaps adds a page's entries to the list of the level asked for.
func addCaps(resp *nektev1.DiscoverResponse, level int32, caps []nk.CapSchema) {
	for i := range caps {
		c := &caps[i]
		switch level {
		case nk.LevelCatalog:
			resp.Refs = append(resp.Refs, &nektev1.CapabilityRef{Id: c.ID, Cat: c.Cat, H: c.H})
		case nk.LevelSummary:
			resp.Summaries = append(resp.Summaries, &nektev1.CapabilitySummary{Id: c.ID, Cat: c.Cat, H: c.H, Desc: c.Desc, Cost: costHint(c.Cost)})
		default:
			resp.Schemas = append(resp.Schemas, capabilityFull(c))
		}
	}
}

func capabilityFull(c *nk.CapSchema) *nektev1.CapabilityFull {
	full := &nektev1.CapabilityFull{Id: c.ID, Cat: c.Cat, H: c.H, Desc: c.Desc, Cost: costHint(c.Cost),
		InputSchema: c.Input, OutputSchema: c.Output}
	for _, ex := range c.Examples {
		full.Examples = append(full.Examples, &nektev1.Example{Input: ex.In, Output: ex.Out})
	}
	return full
}

func costHint(c *nk.Cost) *nektev1.CostHint {
	if c == nil {
		return nil
	}
	return &nektev1.CostHint{AvgMs: clamp32(c.AvgMs), AvgTokens: clamp32(c.AvgTokens)}
}

func resultMeta(m *nk.Meta) *nektev1.ResultMeta {
	if m == nil {
		return nil
	}
	return &nektev1.ResultMeta{Ms: clamp32(m.Ms), TokensUsed: clamp32(m.TokensUsed)}
}

// budget returns a token budget's params; unset is nil (the primitive's default).
func budget(b *nektev1.TokenBudget) *nk.Budget {
	if b == nil {
		return nil
	}
	return &nk.Budget{MaxTokens: int(b.GetMaxTokens()), DetailLevel: nk.DetailLevel(b.GetDetailLevel())}
}

// jsonBytes returns a bytes field as the JSON value of the params member field: nil when
// empty, INVALID_PARAMS when it is not UTF-8 JSON.
func jsonBytes(field string, b []byte) (json.RawMessage, *gateway.Error) {
	if len(b) == 0 {
		return nil, nil
	}
	if !json.Valid(b) {
		return nil, gateway.Errorf(schemas.CodeInvalidParams, "Invalid params: %s must be UTF-8 JSON", field).
			With("field", field).With("reason", "must be UTF-8 JSON")
	}
	return b, nil
}

// envelopeParams returns a context envelope's params (nil for nil), field naming it in
// errors.
func envelopeParams(field string, e *nektev1.ContextEnvelope) (*nk.Envelope, *gateway.Error) {
	if e == nil {
		return nil, nil
	}
	data, err := jsonBytes(field+".data", e.GetData())
	if err != nil {
		return nil, err
	}
	p := e.GetPermissions()
	return &nk.Envelope{
		ID: e.GetId(), Data: data, Compression: nk.Compression(e.GetCompression()),
		Permissions: nk.Permissions{Forward: p.GetForward(), Persist: p.GetPersist(), Derive: p.GetDerive()},
		TTLSeconds:  int64(e.GetTtlS()), BudgetHint: int(e.GetBudgetHint()),
	}, nil
}

// delegateParams returns nekte.delegate's params of a request.
func delegateParams(req *nektev1.DelegateRequest) (nk.DelegateParams, *gateway.Error) {
	t := req.GetTask()
	env, err := envelopeParams("context", req.GetContext())
	return nk.DelegateParams{
		Task:    nk.Task{ID: t.GetId(), Desc: t.GetDesc(), TimeoutMs: int64(t.GetTimeoutMs()), Budget: budget(t.GetBudget())},
		Context: env,
	}, err
}

// contextResult is nekte.context's result: {id, status, ttl_s?}, or the stored envelope.
type contextResult struct {
	ID          string          `json:"id"`
	Status      string          `json:"status"`
	TTLSeconds  int64           `json:"ttl_s"`
	Data        json.RawMessage `json:"data"`
	Compression string          `json:"compression"`
	Permissions nk.Permissions  `json:"permissions"`
	BudgetHint  int             `json:"budget_hint"`
}

func (r *contextResult) response() *nektev1.ContextResponse {
	resp := &nektev1.ContextResponse{Id: r.ID, Status: r.Status}
	switch nk.ContextStatus(r.Status) {
	case "":
		resp.Envelope = &nektev1.ContextEnvelope{
			Id: r.ID, Data: r.Data, Compression: r.Compression, TtlS: clamp32(r.TTLSeconds), BudgetHint: clamp32(r.BudgetHint),
			Permissions: &nektev1.ContextPermissions{Forward: r.Permissions.Forward, Persist: r.Permissions.Persist, Derive: r.Permissions.Derive},
		}
	case nk.ContextStored:
		resp.Envelope = &nektev1.ContextEnvelope{Id: r.ID, TtlS: clamp32(r.TTLSeconds)}
	}
	return resp
}

// taskStatusResult is nekte.task.status's result with the gateway's progress member.
type taskStatusResult struct {
	nk.TaskStatusResult

	Progress struct {
		Processed int `json:"processed"`
		Total     int `json:"total"`
	} `json:"progress"`
}

// delegateEvent returns the DelegateEvent of one message of a delegate stream
// ({"event": name, "data": payload}); nil for an event this contract has no member for.
func delegateEvent(msg []byte) (*nektev1.DelegateEvent, error) {
	name, data, err := faces.ParseEvent(msg)
	if err != nil {
		return nil, err
	}
	ev, err := resultEvent(name, data)
	if ev == nil && err == nil {
		ev, err = lifecycleEvent(name, data)
	}
	if err != nil {
		return nil, faces.ErrMalformedEvent.Wrap(err)
	}
	return ev, nil
}

// resultEvent maps the events that carry a task's work: progress, partial, complete and
// error. Other names give nil.
func resultEvent(name string, data []byte) (*nektev1.DelegateEvent, error) {
	switch name {
	case nk.EventProgress:
		e, err := decodeAs[nk.ProgressEvent](data)
		p := &nektev1.ProgressEvent{Processed: clamp32(e.Processed), Total: clamp32(e.Total), Message: e.Message}
		return &nektev1.DelegateEvent{Event: &nektev1.DelegateEvent_Progress{Progress: p}}, err
	case nk.EventPartial:
		e, err := decodeAs[nk.PartialEvent](data)
		p := &nektev1.PartialEvent{Output: e.Out, ResolvedLevel: string(e.ResolvedLevel)}
		return &nektev1.DelegateEvent{Event: &nektev1.DelegateEvent_Partial{Partial: p}}, err
	case nk.EventComplete:
		e, err := decodeAs[nk.CompleteEvent](data)
		c := &nektev1.CompleteEvent{TaskId: e.TaskID, Meta: resultMeta(e.Meta),
			Output: &nektev1.MultiLevelResult{Minimal: e.Out.Minimal, Compact: e.Out.Compact, Full: e.Out.Full}}
		return &nektev1.DelegateEvent{Event: &nektev1.DelegateEvent_Complete{Complete: c}}, err
	case nk.EventError:
		e, err := decodeAs[nk.ErrorEvent](data)
		x := &nektev1.ErrorEvent{TaskId: e.TaskID, Code: int32(e.Code), Message: e.Message}
		return &nektev1.DelegateEvent{Event: &nektev1.DelegateEvent_Error{Error: x}}, err
	default:
		return nil, nil
	}
}

// lifecycleEvent maps the events of the task's state machine: cancelled, suspended,
// resumed and status_change. Other names give nil.
func lifecycleEvent(name string, data []byte) (*nektev1.DelegateEvent, error) {
	switch name {
	case nk.EventCancelled:
		e, err := decodeAs[nk.CancelledEvent](data)
		c := &nektev1.CancelledEvent{TaskId: e.TaskID, Reason: e.Reason, PreviousStatus: string(e.PreviousStatus)}
		return &nektev1.DelegateEvent{Event: &nektev1.DelegateEvent_Cancelled{Cancelled: c}}, err
	case nk.EventSuspended:
		e, err := decodeAs[nk.SuspendedEvent](data)
		s := &nektev1.SuspendedEvent{TaskId: e.TaskID, CheckpointAvailable: e.CheckpointAvailable}
		return &nektev1.DelegateEvent{Event: &nektev1.DelegateEvent_Suspended{Suspended: s}}, err
	case nk.EventResumed:
		e, err := decodeAs[nk.ResumedEvent](data)
		r := &nektev1.ResumedEvent{TaskId: e.TaskID, FromCheckpoint: e.FromCheckpoint}
		return &nektev1.DelegateEvent{Event: &nektev1.DelegateEvent_Resumed{Resumed: r}}, err
	case nk.EventStatusChange:
		e, err := decodeAs[nk.StatusChangeEvent](data)
		s := &nektev1.StatusChangeEvent{TaskId: e.TaskID, FromStatus: string(e.From), ToStatus: string(e.To), Reason: e.Reason}
		return &nektev1.DelegateEvent{Event: &nektev1.DelegateEvent_StatusChange{StatusChange: s}}, err
	default:
		return nil, nil
	}
}

func decodeAs[T any](data []byte) (T, error) {
	var v T
	err := json.Unmarshal(data, &v)
	return v, err
}

// clamp32 converts an integer of the JSON form to a proto int32, saturating.
func clamp32[T int | int64](v T) int32 {
	return int32(max(min(int64(v), math.MaxInt32), math.MinInt32))
}
