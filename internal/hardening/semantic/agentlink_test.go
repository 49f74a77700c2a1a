package semantic

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/gatehouse-dev/gatehouse/internal/hardening"
	agentlinkv1 "github.com/gatehouse-dev/gatehouse/schemas/gen/agentlink/v1"
)

// The agent link's limits in this test (agents.*), small so that ± 1 is cheap.
const (
	maxAgentFrame = 2048 // agents.max_frame_bytes (below server.internal.max_recv_bytes, which gRPC enforces first)
	maxOperators  = 4    // agents.max_operators
)

const agentsSection = `agents:
  max_frame_bytes: 2048
  max_operators: 4
  heartbeat_interval: 1s
  auth: {require_credential: false, allow_loopback_anonymous: true}
`

// agentCase is one generated handshake: the first message an agent sends, and whether the
// gateway must welcome it (else it must reject it with code).
type agentCase struct {
	first   *agentlinkv1.ConnectRequest
	welcome bool
	code    codes.Code
}

// TestAgentLink sends hostile node descriptors to the agent link on the internal listener:
// agent and operator ids with injection characters, unicode edge cases and at their 64
// characters ± 1, descriptions at 256 bytes ± 1 and with unicode edge cases, protocol version lists
// empty, unknown and past 16, operators past agents.max_operators, twice, or with schemas
// that are not objects, not JSON or nested past 64, frames at agents.max_frame_bytes ± 1,
// and a first message that is not a descriptor. A refused agent is answered Reject with
// its code and a reason that leaks nothing, and nothing serves its operators; a welcomed one
// serves its operator as agent.<id> until it leaves.
func TestAgentLink(t *testing.T) {
	e := newEnv(t, agentsSection)
	g := e.gen
	cc, err := grpc.NewClient(e.g.Internal, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	op := func(id string) *agentlinkv1.Operator {
		return &agentlinkv1.Operator{Id: id, Description: "Echoes.", InputSchemaJson: `{"type":"object"}`}
	}
	desc := func(mut func(d *agentlinkv1.NodeDescriptor)) *agentlinkv1.ConnectRequest {
		d := &agentlinkv1.NodeDescriptor{AgentId: "agent-" + fmt.Sprint(g.R.IntN(1<<30)), ProtocolVersions: []string{"1.0.0"},
			Operators: []*agentlinkv1.Operator{op("echo")}}
		if mut != nil {
			mut(d)
		}
		return &agentlinkv1.ConnectRequest{Message: &agentlinkv1.ConnectRequest_NodeDescriptor{NodeDescriptor: d}}
	}
	ok := func(mut func(d *agentlinkv1.NodeDescriptor)) agentCase {
		return agentCase{first: desc(mut), welcome: true}
	}
	bad := func(code codes.Code, mut func(d *agentlinkv1.NodeDescriptor)) agentCase {
		return agentCase{first: desc(mut), code: code}
	}
	idOf := func(n int) string { return "a" + strings.Repeat("b", n-1) }
	// sized pads the operator's input schema so that the whole first message is n bytes.
	sized := func(n int) *agentlinkv1.ConnectRequest {
		m := desc(nil)
		o := m.GetNodeDescriptor().Operators[0]
		for pad := 0; ; pad++ {
			o.InputSchemaJson = `{"type":"object","description":"` + strings.Repeat("x", pad) + `"}`
			if s := proto.Size(m); s == n {
				return m
			} else if s > n {
				t.Fatalf("no descriptor of %d bytes", n)
			}
		}
	}
	classes := []struct {
		name string
		make func() agentCase
	}{
		{"valid", func() agentCase { return ok(nil) }},
		{"agent_id/injection", func() agentCase {
			return bad(codes.InvalidArgument, func(d *agentlinkv1.NodeDescriptor) { d.AgentId = g.Injected("agent") })
		}},
		{"agent_id/unicode", func() agentCase {
			return bad(codes.InvalidArgument, func(d *agentlinkv1.NodeDescriptor) { d.AgentId = "agent" + g.Content(8) + "\u202e" })
		}},
		{"agent_id/64", func() agentCase { return ok(func(d *agentlinkv1.NodeDescriptor) { d.AgentId = idOf(64) }) }},
		{"agent_id/65", func() agentCase {
			return bad(codes.InvalidArgument, func(d *agentlinkv1.NodeDescriptor) { d.AgentId = idOf(65) })
		}},
		{"agent_id/empty", func() agentCase {
			return bad(codes.InvalidArgument, func(d *agentlinkv1.NodeDescriptor) { d.AgentId = "" })
		}},
		{"operator/injection", func() agentCase {
			return bad(codes.InvalidArgument, func(d *agentlinkv1.NodeDescriptor) { d.Operators = []*agentlinkv1.Operator{op(g.Injected("echo"))} })
		}},
		{"operator/uppercase", func() agentCase {
			return bad(codes.InvalidArgument, func(d *agentlinkv1.NodeDescriptor) { d.Operators = []*agentlinkv1.Operator{op("Echo")} })
		}},
		{"operator/64", func() agentCase {
			return ok(func(d *agentlinkv1.NodeDescriptor) { d.Operators = []*agentlinkv1.Operator{op(idOf(64))} })
		}},
		{"operator/65", func() agentCase {
			return bad(codes.InvalidArgument, func(d *agentlinkv1.NodeDescriptor) { d.Operators = []*agentlinkv1.Operator{op(idOf(65))} })
		}},
		{"operator/twice", func() agentCase {
			return bad(codes.InvalidArgument, func(d *agentlinkv1.NodeDescriptor) { d.Operators = []*agentlinkv1.Operator{op("echo"), op("echo")} })
		}},
		{"operators/max", func() agentCase {
			return ok(func(d *agentlinkv1.NodeDescriptor) {
				d.Operators = nil
				for i := range maxOperators {
					d.Operators = append(d.Operators, op(fmt.Sprintf("op%d", i)))
				}
			})
		}},
		{"operators/max+1", func() agentCase {
			return bad(codes.InvalidArgument, func(d *agentlinkv1.NodeDescriptor) {
				d.Operators = nil
				for i := range maxOperators + 1 {
					d.Operators = append(d.Operators, op(fmt.Sprintf("op%d", i)))
				}
			})
		}},
		{"operators/none", func() agentCase {
			return bad(codes.InvalidArgument, func(d *agentlinkv1.NodeDescriptor) { d.Operators = nil })
		}},
		{"description/256", func() agentCase {
			return ok(func(d *agentlinkv1.NodeDescriptor) { d.Operators[0].Description = strings.Repeat("d", 256) })
		}},
		{"description/257", func() agentCase {
			return bad(codes.InvalidArgument, func(d *agentlinkv1.NodeDescriptor) { d.Operators[0].Description = strings.Repeat("d", 257) })
		}},
		// (a description that is not UTF-8 cannot be sent: protobuf refuses to marshal it)
		{"description/unicode", func() agentCase {
			return ok(func(d *agentlinkv1.NodeDescriptor) { d.Operators[0].Description = "Echo\u202e\x00" + g.Content(64) })
		}},
		{"schema/not-object", func() agentCase {
			return bad(codes.InvalidArgument, func(d *agentlinkv1.NodeDescriptor) {
				d.Operators[0].InputSchemaJson = pick(g, []string{`{"type":"string"}`, `[]`, `"x"`, `1`, `null`})
			})
		}},
		{"schema/not-json", func() agentCase {
			return bad(codes.InvalidArgument, func(d *agentlinkv1.NodeDescriptor) {
				d.Operators[0].InputSchemaJson = pick(g, []string{`{`, `{"type":}`, `{"type":"object"}}`, "{\"type\":\"object\"\x00}"})
			})
		}},
		{"schema/depth-past-64", func() agentCase {
			return bad(codes.InvalidArgument, func(d *agentlinkv1.NodeDescriptor) {
				d.Operators[0].InputSchemaJson = `{"type":"object","properties":{"a":` + strings.Repeat(`{"properties":{"a":`, 40) + `{}` + strings.Repeat(`}}`, 40) + `}}`
			})
		}},
		{"versions/none", func() agentCase {
			return bad(codes.InvalidArgument, func(d *agentlinkv1.NodeDescriptor) { d.ProtocolVersions = nil })
		}},
		{"versions/17", func() agentCase {
			return bad(codes.InvalidArgument, func(d *agentlinkv1.NodeDescriptor) {
				for i := range 16 {
					d.ProtocolVersions = append(d.ProtocolVersions, fmt.Sprintf("0.%d.0", i))
				}
			})
		}},
		{"versions/unknown", func() agentCase {
			return bad(codes.FailedPrecondition, func(d *agentlinkv1.NodeDescriptor) {
				d.ProtocolVersions = []string{pick(g, []string{"9.9.9", "0.0.1", "1", "v1.0.0", g.Injected("1.0.0")})}
			})
		}},
		{"frame/max", func() agentCase { return agentCase{first: sized(maxAgentFrame), welcome: true} }},
		{"frame/max+1", func() agentCase { return agentCase{first: sized(maxAgentFrame + 1), code: codes.InvalidArgument} }},
		{"first/not-a-descriptor", func() agentCase {
			return agentCase{first: &agentlinkv1.ConnectRequest{Message: &agentlinkv1.ConnectRequest_Heartbeat{Heartbeat: &agentlinkv1.Heartbeat{Sequence: 1}}},
				code: codes.InvalidArgument}
		}},
	}
	n := hardening.Iterations(t, 4*len(classes))
	for i := range n {
		c := classes[i%len(classes)]
		tc := c.make()
		outcome := e.handshake(cc, c.name, tc)
		e.count("agentlink/"+c.name, outcome)
		if e.tooMany() {
			break
		}
	}
	e.finish()
}

// handshake connects, sends the case's first message and checks the answer: a Welcome
// (then the operator is served as agent.<id> until the agent leaves) or a Reject with the
// case's code and a reason that leaks nothing (and nothing serves its operators).
func (e *env) handshake(cc *grpc.ClientConn, class string, c agentCase) string {
	t := e.t
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := agentlinkv1.NewAgentLinkServiceClient(cc).Connect(ctx)
	if err != nil {
		t.Fatalf("%s: connect: %v", class, err)
	}
	if err := st.Send(c.first); err != nil {
		t.Fatalf("%s: send: %v", class, err)
	}
	m, err := st.Recv()
	if err != nil {
		t.Errorf("%s: no answer to the first message: %v", class, err)
		return "no-answer"
	}
	ops := c.first.GetNodeDescriptor().GetOperators()
	if w := m.GetWelcome(); w != nil {
		if !c.welcome {
			t.Errorf("%s: welcomed, want a Reject with %s (descriptor %v)", class, c.code, c.first)
		}
		// served while connected: a call of its first operator reaches this agent (which
		// does not answer it: the call is only checked to be routed, with a short deadline)
		_, _, body := e.post("/rpc", `{"jsonrpc":"2.0","id":1,"method":"agent.`+ops[0].GetId()+`","params":{"deadline_ms":`+
			fmt.Sprint(time.Now().Add(300*time.Millisecond).UnixMilli())+`}}`, nil)
		if strings.Contains(body, `"code":-32601`) {
			t.Errorf("%s: the welcomed agent's operator is not routed: %s", class, body)
		}
		_ = st.CloseSend()
		for {
			if _, err := st.Recv(); err != nil {
				break
			}
		}
		e.waitUnrouted(class, ops[0].GetId())
		return "welcome"
	}
	r := m.GetReject()
	if r == nil {
		t.Errorf("%s: first answer %v, want a Welcome or a Reject", class, m)
		return "other"
	}
	e.leaks(class+" reject reason", r.GetReason())
	_, err = st.Recv()
	s, _ := status.FromError(err)
	if c.welcome {
		t.Errorf("%s: rejected (%s: %q), want a Welcome", class, s.Code(), r.GetReason())
	} else if s.Code() != c.code {
		t.Errorf("%s: the stream ended with %s (%q), want %s", class, s.Code(), s.Message(), c.code)
	}
	e.leaks(class+" status", s.Message())
	for _, op := range ops {
		if id := op.GetId(); plainID.MatchString(id) {
			e.waitUnrouted(class, id)
		}
	}
	return "reject/" + s.Code().String()
}

// plainID is an operator id a method name can be written with as it is.
var plainID = regexp.MustCompile(`^[a-z][a-zA-Z0-9._-]*$`)

// waitUnrouted waits until no agent serves agent.<op>: the method is unknown (-32601), or,
// once an agent has offered it, answered 1006 "No agent offers the operator" (a refused or
// departed agent leaves nothing serving behind).
func (e *env) waitUnrouted(class, op string) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, _, body := e.post("/rpc", `{"jsonrpc":"2.0","id":1,"method":"agent.`+op+`"}`, nil)
		if strings.Contains(body, `"code":-32601`) || strings.Contains(body, `"code":1006`) {
			return
		}
		if time.Now().After(deadline) {
			e.t.Errorf("%s: agent.%s is still served after its agent left or was refused: %s", class, op, body)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}
