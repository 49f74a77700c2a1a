package capability

import (
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/gatehouse-dev/gatehouse/routing/grpcbackend"
)

// GRPCSource returns the source of a gRPC backend's mapped methods (GRPCMethods); its
// generation changes once, when the backend's descriptors have loaded.
func GRPCSource(b *grpcbackend.Backend) Source { return grpcSource{b} }

type grpcSource struct{ b *grpcbackend.Backend }

func (s grpcSource) Generation() uint64 {
	select {
	case <-s.b.Loaded():
		return 1
	default:
		return 0
	}
}

func (s grpcSource) Capabilities() ([]Capability, uint64) {
	gen := s.Generation()
	return GRPCMethods(s.b.Name(), s.b.Methods()), gen
}

// GRPCMethods turns a backend's mapped methods into capabilities: the id is the JSON-RPC
// method name, the description the RPC's leading comment (when the descriptors carry
// source information) or its full name, input and output the JSON Schemas derived from the
// descriptors (grpcbackend.Method.InputSchema, OutputSchema). Client-streaming and
// bidirectional methods are left out: an invocation has no stream of input to send. A
// method whose idempotency_level is NO_SIDE_EFFECTS is deterministic.
func GRPCMethods(backend string, methods []grpcbackend.Method) []Capability {
	out := make([]Capability, 0, len(methods))
	for _, m := range methods {
		md := m.Descriptor
		if md.IsStreamingClient() {
			continue
		}
		out = append(out, Capability{
			ID:            m.Name,
			Description:   methodDescription(md),
			Input:         m.InputSchema(),
			Output:        m.OutputSchema(),
			Method:        m.Name,
			Kind:          KindGRPCMethod,
			Source:        backend,
			Streaming:     md.IsStreamingServer(),
			Deterministic: noSideEffects(md),
		})
	}
	return out
}

// methodDescription is an RPC's leading comment on one line, or "gRPC <service>/<method>".
func methodDescription(md protoreflect.MethodDescriptor) string {
	loc := md.ParentFile().SourceLocations().ByDescriptor(md)
	if c := strings.Join(strings.Fields(loc.LeadingComments), " "); c != "" {
		return c
	}
	return "gRPC " + string(md.Parent().FullName()) + "/" + string(md.Name())
}

func noSideEffects(md protoreflect.MethodDescriptor) bool {
	opts, ok := md.Options().(*descriptorpb.MethodOptions)
	return ok && opts.GetIdempotencyLevel() == descriptorpb.MethodOptions_NO_SIDE_EFFECTS
}
