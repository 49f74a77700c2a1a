package nekte

import (
	"strings"

	nk "github.com/gatehouse-dev/gatehouse/codecs/nekte"
)

// guides are the texts of nekte.introspect, per topic, written for an agent reading them.
var guides = []struct {
	topic nk.Topic
	text  string
}{
	{nk.TopicDiscovery, `DISCOVERY
nekte.discover {level, filter?} lists capabilities at three levels of detail; ask for the least you need.
- level 0: {id, cat, h} per capability (a few tokens each).
- level 1: adds desc and cost {avg_ms, avg_tokens}.
- level 2: adds input and output JSON Schemas and examples.
filter: {category, id, query, top_k, threshold}; query ranks by text match over id and description.
h is the capability's version hash. Cache it: nekte.invoke {cap, h, in} runs without re-sending schemas;
a stale h answers -32001 VERSION_MISMATCH with data.current_hash and data.schema (the level 2 entry), so you
can retry at once without h.`},
	{nk.TopicBudget, `BUDGET
Every result exists in three levels: full (as the backend sent it), compact (structure kept, bulk cut) and
minimal (one line of text). budget {max_tokens, detail_level} picks one: the candidates are full, compact,
minimal for "full"; compact, minimal for "compact"; minimal for "minimal". The first that exists and fits
max_tokens wins; if none fits, the smallest there is. No budget means {max_tokens: 500, detail_level: "compact"};
a level without max_tokens gets 50 (minimal), 500 (compact) or 4096 (full). Tokens are counted with cl100k.
nekte.invoke returns {out, resolved_level, meta: {ms, tokens_used}}; a delegated task's complete event carries
the chosen level and every less detailed one that fits.`},
	{nk.TopicTasks, `TASKS
nekte.delegate {task: {id, desc, timeout_ms, budget, cap?, in?}, context?} runs a capability as a task and answers
with server-sent events: status_change {task_id, from, to}, progress {processed, total, message},
partial {out, resolved_level}, then one of complete {task_id, status, out, meta}, error {task_id, code, message}
or cancelled {task_id, reason, previous_status}, after which the stream ends. suspended and resumed also appear.
Name the capability in task.cap and its input in task.in; without task.cap the capability best matching desc
runs with input {}. task ids are yours and unique while the task is kept. timeout_ms bounds running time
(-32006 TASK_TIMEOUT).
Lifecycle: pending -> accepted -> running -> completed; running -> suspended -> running; any unfinished state ->
cancelled or failed.
- nekte.task.status {task_id}: status, progress, checkpoint_available, created_at and updated_at (epoch ms).
- nekte.task.stream {task_id}: re-attach; the recorded events are replayed, then live ones follow.
- nekte.task.cancel {task_id, reason?}: stops the backend call; -32010 if the task already ended.
- nekte.task.suspend {task_id}: saves a checkpoint and stops a running task.
- nekte.task.resume {task_id, budget?}: re-runs a suspended task from its checkpoint; -32011 otherwise.
Closing the stream does not cancel the task. Only the caller that delegated a task can see it.
nekte.context {action: share|request|revoke, envelope: {id, data, permissions: {forward, persist, derive},
ttl_s, scope?}} keeps context for later tasks; pass it to nekte.delegate as context (inline, or {id} alone).
forward: false reaches only the capabilities in scope; derive: false results are not kept or re-derived.
nekte.verify {task_id, checks: [hash|sample|source], result_hash?} checks a completed task against its signed
receipt: hash compares result_hash (hex SHA-256 of the canonical full output), sample re-runs a deterministic
capability, source reports provenance and the receipt.`},
	{nk.TopicErrors, `ERRORS
-32001 VERSION_MISMATCH: your h is stale; data.schema has the current entry, retry without h.
-32002 CAPABILITY_NOT_FOUND: no such capability, or no capability matches the task description.
-32003 BUDGET_EXCEEDED: the result cannot be made to fit the budget.
-32004 CONTEXT_EXPIRED: the context envelope expired or is no longer available.
-32005 CONTEXT_PERMISSION_DENIED: the envelope may not reach that capability, or a derive: false result may not be re-derived.
-32006 TASK_TIMEOUT: the task ran longer than timeout_ms.
-32007 TASK_FAILED: the capability failed; message says why.
-32008 VERIFICATION_FAILED: a result or receipt did not check out.
-32009 TASK_NOT_FOUND: no task of that id for you.
-32010 TASK_NOT_CANCELLABLE: the task already ended.
-32011 TASK_NOT_RESUMABLE: the task is not suspended (or, for suspend, not running).
-32602 INVALID_PARAMS: data.field names the offending field.`},
}

// guide returns the introspection text of a topic; all (or none) gives every topic.
func guide(topic nk.Topic) string {
	var parts []string
	for _, g := range guides {
		if topic == "" || topic == nk.TopicAll || topic == g.topic {
			parts = append(parts, g.text)
		}
	}
	return strings.Join(parts, "\n\n")
}
