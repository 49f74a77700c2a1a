package grpcbackend

import "github.com/gatehouse-dev/gatehouse/gateway"

var _ gateway.Describer = (*Backend)(nil)

// Reaches implements gateway.Describer: a method of this gRPC backend, Server its
// configured name. With detail, Name is the full gRPC method ("pkg.Service/Method") the
// call's method resolves to, as Invoke resolves it; "" before the descriptors have loaded
// (the call is refused then anyway) or for a method the backend does not map. The
// descriptors, resolved once, are the cache: the lookup allocates nothing.
func (b *Backend) Reaches(call *gateway.Call, detail bool) gateway.Reach {
	reach := gateway.Reach{Kind: gateway.ReachGRPC, Server: b.cfg.Name}
	if !detail {
		return reach
	}
	if r := b.state.Load(); r != nil {
		if m := r.lookup(call.Method); m != nil {
			reach.Name = m.path[1:] // path is "/pkg.Service/Method"
		}
	}
	return reach
}
