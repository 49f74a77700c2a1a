package a2aface

import (
	"strconv"

	"github.com/gatehouse-dev/gatehouse/codecs/a2a"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// fromGateway is the A2A error of an error the pipeline returned: the NEKTE task errors
// become the binding's own (TaskNotFound, TaskNotCancelable), a method the configuration
// does not route (NEKTE off) UnsupportedOperation; the others keep the gateway's code and
// message (authorization 4xxx, rate limits 5xxx, deadline -32000 …), which never carry
// internal detail, with the reason the gateway gave as ErrorInfo.
func fromGateway(e *gateway.Error) *a2a.Error {
	switch e.Code() {
	case schemas.CodeTaskNotFound:
		return a2a.TaskNotFound("")
	case schemas.CodeTaskNotCancellable:
		return a2a.TaskNotCancelable("")
	case schemas.CodeMethodNotFound:
		return a2a.UnsupportedOperation("Tasks need NEKTE, which this configuration does not serve")
	case schemas.CodeCapabilityNotFound:
		return a2a.InvalidParams("message.metadata.skill", "names no skill of this agent")
	case schemas.CodeInvalidParams:
		field, _ := e.Data()["field"].(string)
		reason, _ := e.Data()["reason"].(string)
		return a2a.InvalidParams(field, reason)
	}
	out := &a2a.Error{Code: e.Code(), Message: e.Message()}
	var kv []string
	for _, k := range []string{"reason", "limit", "recovery_hint"} {
		if s, ok := e.Data()[k].(string); ok {
			kv = append(kv, k, s)
		}
	}
	if n, ok := e.Data()["retry_after_ms"]; ok {
		kv = append(kv, "retry_after_ms", toString(n))
	}
	out = out.Info(schemas.KindOf(e.Code()).Name, kv...)
	out.Domain = "gatehouse"
	return out
}

func toString(v any) string {
	switch n := v.(type) {
	case int:
		return itoa(int64(n))
	case int64:
		return itoa(n)
	case float64:
		return itoa(int64(n))
	case string:
		return n
	}
	return ""
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
