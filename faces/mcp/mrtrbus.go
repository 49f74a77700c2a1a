package mcpface

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// A retry whose requestState names another process is forwarded to it over the state
// store's bus (Redis in production): each process that holds multi round-trip calls
// listens on its own channel, mrtrChannelPrefix + its id. The forwarding replica
// publishes the retry there with the channel to answer on (its own); the owner
// acknowledges it at once and again every third of forward_timeout while the call runs,
// then publishes the outcome. A forwarder that hears nothing for forward_timeout takes
// the owner for gone: the call is lost, and the client is told to start over.

const mrtrChannelPrefix = "gatehouse:mcp-mrtr:"

// Kinds of messages on the bus.
const (
	mrtrKindRetry   = "retry"
	mrtrKindAck     = "ack"
	mrtrKindOutcome = "outcome"
)

// mrtrWire is one message on the bus.
type mrtrWire struct {
	Kind      string                     `json:"kind"`
	ID        string                     `json:"id"`             // the forward's
	From      string                     `json:"from,omitempty"` // the forwarder's process id (retry)
	State     string                     `json:"state,omitempty"`
	Responses map[string]json.RawMessage `json:"responses,omitempty"`
	Outcome   *mrtrOutcome               `json:"outcome,omitempty"`
	Session   string                     `json:"session,omitempty"` // a relayed request's session (relaybus.go)
}

// mrtrForward is a retry this process forwarded, waiting for the owner's word.
type mrtrForward struct {
	ack chan struct{}    // capacity 1
	out chan mrtrOutcome // capacity 1
}

// listen starts the bus listener once; it stops with the face.
func (m *mrtr) listen() error {
	m.lmu.Lock()
	defer m.lmu.Unlock()
	if m.listening {
		return nil
	}
	sub, err := m.bus.Subscribe(m.ctx, mrtrChannelPrefix+m.self.String())
	if err != nil {
		return err
	}
	m.mu.Lock() // no listener starts once close waits for them
	defer m.mu.Unlock()
	if m.closed {
		_ = sub.Close()
		return gateway.Errorf(schemas.CodeShuttingDown, "The gateway is shutting down")
	}
	m.listening = true
	m.wg.Go(func() {
		defer func() { _ = sub.Close() }()
		for msg := range sub.C() {
			if msg == nil { // the bus reconnected: a message may be lost, the forwarder's wait covers it
				continue
			}
			var w mrtrWire
			if err := json.Unmarshal(msg, &w); err != nil {
				m.log.Debug("MCP multi round trip: malformed bus message", "err", err)
				continue
			}
			m.receive(w)
		}
	})
	return nil
}

// receive handles one message of this process's channel.
func (m *mrtr) receive(w mrtrWire) {
	switch w.Kind {
	case mrtrKindRetry:
		m.mu.Lock()
		if m.closed {
			m.mu.Unlock()
			return
		}
		m.wg.Add(1)
		m.mu.Unlock()
		go func() {
			defer m.wg.Done()
			m.serveForwarded(w)
		}()
	case relayKindAnswer, relayKindDeliver:
		m.serveRelay(w)
	case mrtrKindAck, mrtrKindOutcome:
		m.fmu.Lock()
		fw := m.forwards[w.ID]
		m.fmu.Unlock()
		if fw == nil {
			return
		}
		if w.Kind == mrtrKindAck {
			select {
			case fw.ack <- struct{}{}:
			default:
			}
			return
		}
		out := mrtrOutcome{}
		if w.Outcome != nil {
			out = *w.Outcome
		}
		if out.WireErr != nil {
			out.Err = out.WireErr.toError()
		}
		select {
		case fw.out <- out:
		default:
		}
	}
}

// publish sends w to the process id's channel.
func (m *mrtr) publish(ctx context.Context, id string, w mrtrWire) error {
	raw, err := json.Marshal(w)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, m.cfg.forwardTimeout())
	defer cancel()
	return m.bus.Publish(ctx, mrtrChannelPrefix+id, raw)
}

// serveForwarded runs a retry another replica forwarded, as the owner of its call: it
// acknowledges it, keeps the forwarder informed while the call runs, and answers with
// the outcome.
func (m *mrtr) serveForwarded(w mrtrWire) {
	reply := func(kind string, out *mrtrOutcome) {
		if out != nil && out.Err != nil {
			out.WireErr = &mrtrWireErr{Code: out.Err.Code(), Message: out.Err.Message(), Data: out.Err.Data()}
		}
		if err := m.publish(m.ctx, w.From, mrtrWire{Kind: kind, ID: w.ID, Outcome: out}); err != nil {
			m.log.Debug("MCP multi round trip: answering a forwarded retry", "err", err)
		}
	}
	st, err := m.signer.verify(w.State, m.now())
	if err != nil || st.owner != m.self {
		reply(mrtrKindOutcome, &mrtrOutcome{Err: stateRefused("invalid", "the replica it was forwarded to does not accept it")})
		return
	}
	m.log.Debug("MCP multi round trip: serving a retry forwarded by another replica", "call", st.call.String(), "round", st.round)
	reply(mrtrKindAck, nil)
	done := make(chan struct{})
	m.wg.Go(func() {
		t := time.NewTicker(m.cfg.forwardTimeout() / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				reply(mrtrKindAck, nil)
			}
		}
	})
	out := m.resume(m.ctx, st, w.Responses)
	close(done)
	reply(mrtrKindOutcome, &out)
}

// forward sends a retry to the process holding its call and relays that process's answer.
func (m *mrtr) forward(ctx context.Context, st mrtrState, token string, responses map[string]json.RawMessage) mrtrOutcome {
	if m.bus == nil {
		return mrtrOutcome{Err: callLost("another gateway process holds it, and the state store has no bus to reach it")}
	}
	if err := m.listen(); err != nil {
		return mrtrOutcome{Err: gateway.Errorf(schemas.CodeUnavailable, "The state store's bus did not answer").Wrap(err)}
	}
	w := mrtrWire{Kind: mrtrKindRetry, State: token, Responses: responses}
	return m.ask(ctx, st.owner.String(), w, func(wait time.Duration) *gateway.Error {
		return callLost("the gateway process holding it did not answer within " + wait.String() + " (mcp_face.mrtr.forward_timeout): it is gone")
	})
}

// ask publishes w to the process named to and waits for its outcome: an ack restarts
// the wait of forward_timeout; silence for that long is answered by lost.
func (m *mrtr) ask(ctx context.Context, to string, w mrtrWire, lost func(time.Duration) *gateway.Error) mrtrOutcome {
	var idb [16]byte
	_, _ = rand.Read(idb[:])
	id := hex.EncodeToString(idb[:])
	fw := &mrtrForward{ack: make(chan struct{}, 1), out: make(chan mrtrOutcome, 1)}
	m.fmu.Lock()
	m.forwards[id] = fw
	m.fmu.Unlock()
	defer func() {
		m.fmu.Lock()
		delete(m.forwards, id)
		m.fmu.Unlock()
	}()
	w.ID, w.From = id, m.self.String()
	if err := m.publish(ctx, to, w); err != nil {
		return mrtrOutcome{Err: gateway.Errorf(schemas.CodeUnavailable, "The state store's bus did not answer").Wrap(err)}
	}
	wait := m.cfg.forwardTimeout()
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-fw.ack:
			t.Reset(wait)
		case out := <-fw.out:
			return out
		case <-t.C:
			return mrtrOutcome{Err: lost(wait)}
		case <-ctx.Done():
			return mrtrOutcome{Err: gateway.AsError(ctx.Err())}
		}
	}
}
