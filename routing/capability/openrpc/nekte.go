package openrpc

import (
	"encoding/json"

	"github.com/gatehouse-dev/gatehouse/schemas"
)

// Schemas shared by the NEKTE methods' params (docs/nekte.md, codecs/nekte).
const (
	budgetSchema = `{"type":"object","description":"What the result may cost: at most max_tokens (cl100k) at detail_level or less.",` +
		`"properties":{"max_tokens":{"type":"integer","minimum":0},"detail_level":{"enum":["minimal","compact","full"]}}}`
	taskIDSchema   = `{"type":"string","minLength":1,"maxLength":64,"description":"The id the caller gave the task."}`
	envelopeSchema = `{"type":"object","description":"A context envelope: data shared with permissions and a lifetime.",` +
		`"properties":{"id":{"type":"string"},"data":{},"compression":{"type":"string"},` +
		`"permissions":{"type":"object","properties":{"forward":{"type":"boolean"},"persist":{"type":"boolean"},"derive":{"type":"boolean"}}},` +
		`"ttl_s":{"type":"integer","minimum":0},"scope":{"type":"array","items":{"type":"string"}}},"required":["id"]}`
	taskEventsSchema = `{"type":"array","description":"The task's events (status_change, progress, partial, suspended, resumed), ending with complete, error or cancelled; over HTTP they stream as server-sent events.",` +
		`"items":{"type":"object","properties":{"event":{"type":"string"},"data":{}}}}`
)

// nekteCategory tags the nekte.* methods.
const nekteCategory = "nekte"

// NEKTEMethods returns the nekte.* methods the gateway serves when NEKTE is on
// (routing/nekte.Service.Routes), with their params, results and the NEKTE codes each
// answers.
func NEKTEMethods() []Method {
	task := func(name, desc, result string, codes ...schemas.Code) Method {
		return Method{Name: name, Description: desc, Category: nekteCategory,
			Params: obj(`"task_id":`+taskIDSchema, "task_id"), Result: json.RawMessage(result), Errors: codes}
	}
	return []Method{
		{Name: "nekte.discover", Category: nekteCategory,
			Description: "Lists the capabilities the caller may invoke, at level 0 ({id, cat, h}), 1 (with desc and cost) or 2 (with input and output schemas and examples), filtered, ranked and paged.",
			Params: obj(`"level":{"enum":[0,1,2]},"filter":{"type":"object","properties":{"category":{"type":"string"},"id":{"type":"string"},"query":{"type":"string"},"top_k":{"type":"integer","minimum":0},"threshold":{"type":"number","minimum":0,"maximum":1}}},` +
				`"cursor":{"type":"string","maxLength":128},"limit":{"type":"integer","minimum":0},"shape":{"enum":["standard","compact"]}`),
			Result: json.RawMessage(`{"type":"object","properties":{"agent":{"type":"string"},"v":{"type":"string"},"caps":{},"next_cursor":{"type":"string"}},"required":["agent","v","caps"]}`)},
		{Name: "nekte.invoke", Category: nekteCategory,
			Description: "Runs a capability on an input and answers its result at the level the budget allows. A stale version hash h answers VERSION_MISMATCH with the current schema.",
			Params:      obj(`"cap":{"type":"string","minLength":1,"maxLength":64},"h":{"type":"string"},"in":{},"budget":`+budgetSchema, "cap"),
			Result:      json.RawMessage(`{"type":"object","properties":{"out":{},"resolved_level":{"enum":["minimal","compact","full"]},"meta":{"type":"object","properties":{"ms":{"type":"integer"},"tokens_used":{"type":"integer"}}}},"required":["out","resolved_level"]}`),
			Errors:      []schemas.Code{schemas.CodeVersionMismatch, schemas.CodeCapabilityNotFound, schemas.CodeBudgetExceeded, schemas.CodePayloadTooLarge}},
		{Name: "nekte.delegate", Category: nekteCategory,
			Description: "Runs a capability as a task and answers its events. Without task.cap the capability best matching task.desc runs.",
			Params: obj(`"task":{"type":"object","properties":{"id":{"type":"string","minLength":1,"maxLength":64},"desc":{"type":"string","description":"What to do; without cap, the capability best matching it runs."},"timeout_ms":{"type":"integer","minimum":0},`+
				`"budget":`+budgetSchema+`,"cap":{"type":"string","maxLength":64},"in":{}},"required":["id"]},"context":`+envelopeSchema, "task"),
			Result: json.RawMessage(taskEventsSchema),
			Errors: []schemas.Code{schemas.CodeCapabilityNotFound, schemas.CodeContextExpired, schemas.CodeContextPermissionDenied, schemas.CodeTaskTimeout, schemas.CodeTaskFailed}},
		{Name: "nekte.context", Category: nekteCategory,
			Description: "Shares, requests or revokes a context envelope for later tasks.",
			Params:      obj(`"action":{"enum":["share","request","revoke"]},"envelope":`+envelopeSchema, "action", "envelope"),
			Result:      json.RawMessage(`{"type":"object"}`),
			Errors:      []schemas.Code{schemas.CodeContextExpired, schemas.CodeContextPermissionDenied}},
		{Name: "nekte.verify", Category: nekteCategory,
			Description: "Checks a completed task against its signed receipt: the hash of a result, a re-run of a deterministic capability, the provenance.",
			Params: obj(`"task_id":`+taskIDSchema+`,"checks":{"type":"array","minItems":1,"items":{"enum":["hash","sample","source"]}},"result_hash":{"type":"string"},"budget":`+budgetSchema,
				"task_id", "checks"),
			Result: json.RawMessage(`{"type":"object"}`),
			Errors: []schemas.Code{schemas.CodeTaskNotFound, schemas.CodeVerificationFailed}},
		{Name: "nekte.introspect", Category: nekteCategory,
			Description: "Answers the guide an agent reads to use NEKTE, on one topic or all of them.",
			Params:      obj(`"topic":{"enum":["discovery","budget","tasks","errors","all"]}`),
			Result:      json.RawMessage(`{"type":"object"}`)},
		task("nekte.task.status", "Answers a task's status, progress and timestamps.", `{"type":"object"}`, schemas.CodeTaskNotFound),
		task("nekte.task.stream", "Re-attaches to a task: its recorded events are replayed, then live ones follow.", taskEventsSchema, schemas.CodeTaskNotFound),
		{Name: "nekte.task.cancel", Category: nekteCategory, Description: "Cancels a task and stops its backend call.",
			Params: obj(`"task_id":`+taskIDSchema+`,"reason":{"type":"string"}`, "task_id"), Result: json.RawMessage(`{"type":"object"}`),
			Errors: []schemas.Code{schemas.CodeTaskNotFound, schemas.CodeTaskNotCancellable}},
		task("nekte.task.suspend", "Saves a checkpoint of a running task and stops it.", `{"type":"object"}`, schemas.CodeTaskNotFound, schemas.CodeTaskNotResumable),
		{Name: "nekte.task.resume", Category: nekteCategory, Description: "Re-runs a suspended task from its checkpoint.",
			Params: obj(`"task_id":`+taskIDSchema+`,"budget":`+budgetSchema, "task_id"), Result: json.RawMessage(taskEventsSchema),
			Errors: []schemas.Code{schemas.CodeTaskNotFound, schemas.CodeTaskNotResumable}},
	}
}

// obj is the schema of an object with the given properties (JSON members) and required
// names.
func obj(props string, required ...string) json.RawMessage {
	s := `{"type":"object","properties":{` + props + `}`
	if len(required) > 0 {
		req, _ := json.Marshal(required) // strings always marshal
		s += `,"required":` + string(req)
	}
	return json.RawMessage(s + `}`)
}
