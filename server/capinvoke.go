package server

import (
	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/routing/capability"
)

// CapabilityInvoker returns the capability.Invoker the capability layer (nekte.invoke,
// nekte.delegate) runs capabilities with, on the configuration current at each call
// (faces.CapabilityInvoker).
func (s *Server) CapabilityInvoker() capability.Invoker {
	return faces.CapabilityInvoker(func() faces.Runtime { return s.acquire() }, s.log)
}
