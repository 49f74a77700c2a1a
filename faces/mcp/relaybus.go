package mcpface

import (
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// The relayed requests of 2025-11-25 sessions (relay25.go) cross between replicas on the
// multi round-trip bus (mrtrbus.go): the same channel per process, the same ask and
// outcome, with two kinds of their own. A replica that receives a client's answer to a
// request another process issued sends it there (relayKindAnswer); a process whose
// caller has no stream of its own to take a request sends it to the process holding the
// session's GET stream (relayKindDeliver). Both are answered at once with an outcome:
// nothing is waited on.

const (
	relayKindAnswer  = "relay-answer"  // Session, Responses: request id → the client's JSON-RPC response
	relayKindDeliver = "relay-deliver" // Session, Responses["request"]: the JSON-RPC request to write
)

// serveRelay answers one relayed message of this process's channel with the face's word.
func (m *mrtr) serveRelay(w mrtrWire) {
	m.mu.Lock()
	if m.closed || m.relay == nil {
		m.mu.Unlock()
		return
	}
	m.wg.Add(1)
	m.mu.Unlock()
	go func() {
		defer m.wg.Done()
		out := m.relay(w)
		if out.Err != nil {
			out.WireErr = &mrtrWireErr{Code: out.Err.Code(), Message: out.Err.Message(), Data: out.Err.Data()}
		}
		if err := m.publish(m.ctx, w.From, mrtrWire{Kind: mrtrKindOutcome, ID: w.ID, Outcome: &out}); err != nil {
			m.log.Debug("MCP relay: answering a relayed message", "err", err)
		}
	}()
}

// relayLost is the error of a relayed message its addressee did not answer.
func relayLost(what string) func(time.Duration) *gateway.Error {
	return func(wait time.Duration) *gateway.Error {
		return gateway.Errorf(schemas.CodeUnavailable,
			"The gateway process holding %s did not answer within %s (mcp_face.mrtr.forward_timeout)", what, wait)
	}
}
