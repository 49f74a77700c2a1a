package nekte

import (
	"strings"

	nk "github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/gateway"
)

// The Service runs in the process: it has no backend of its own (a call it makes on a
// capability's behalf goes through the pipeline again and is judged against the backend
// it reaches), and a call that starts or resumes a task is never retried. A Route has
// these methods through its Service.
var (
	_ gateway.Backended   = (*Service)(nil)
	_ gateway.Unretryable = (*Service)(nil)
	_ gateway.Describer   = (*Service)(nil)
)

// Backend implements gateway.Backended: none, the service runs in the process.
func (*Service) Backend(*gateway.Call) string { return "" }

// NotRetryable implements gateway.Unretryable: a call that delegates a task, or one of the
// task methods (nekte.task.*), is never retried — the task outlives the call.
func (*Service) NotRetryable(call *gateway.Call) bool {
	return call.Method == nk.MethodDelegate || strings.HasPrefix(call.Method, "nekte.task.")
}

// Reaches implements gateway.Describer: every call of the service (and of a Route, which
// carries it) reaches NEKTE; a capability's own call goes through the pipeline again and
// is described by the target it reaches.
func (*Service) Reaches(*gateway.Call, bool) gateway.Reach {
	return gateway.Reach{Kind: gateway.ReachNekte}
}
