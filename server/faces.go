package server

import (
	"github.com/gatehouse-dev/gatehouse/faces/httprpc"
	"github.com/gatehouse-dev/gatehouse/faces/ws"
)

// The faces see the server through interfaces of their own (faces.Runtime and its
// extensions); these adapters give each the runtime it declares.

// httpGateway is the server as the JSON-RPC face over HTTP sees it.
type httpGateway struct{ *Server }

// Acquire implements httprpc.Gateway.
func (g httpGateway) Acquire() httprpc.Runtime { return g.acquire() }

// JWKS implements httprpc.Gateway.
func (g httpGateway) JWKS() []byte { return g.jwks() }

// wsGateway is the server as the WebSocket face sees it.
type wsGateway struct{ *Server }

// Acquire implements ws.Gateway.
func (g wsGateway) Acquire() ws.Runtime { return g.acquire() }

// Draining implements ws.Gateway.
func (g wsGateway) Draining() bool { return g.draining.Load() }
