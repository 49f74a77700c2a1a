package mcpbackend_test

import (
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// TestDirectZones checks who may call tools directly, for every zone and ingress protocol,
// under the default direct zones and under configured ones.
func TestDirectZones(t *testing.T) {
	b, _ := start(t, []mcpbackend.Config{fixture("fx", nil)})
	zones := []gateway.TrustZone{gateway.ZoneExternal, gateway.ZoneInternal, gateway.ZoneOperator, gateway.ZoneLocal}
	protocols := []gateway.Protocol{gateway.ProtocolHTTP, gateway.ProtocolWebSocket, gateway.ProtocolGRPC, gateway.ProtocolMCP, gateway.ProtocolStdio}
	policies := []struct {
		name    string
		target  *mcpbackend.Target
		allowed map[gateway.TrustZone]bool // for protocols other than MCP, which is always allowed
	}{
		{"default", b.Target("mcp."), map[gateway.TrustZone]bool{
			gateway.ZoneInternal: true, gateway.ZoneOperator: true, gateway.ZoneLocal: true}},
		{"external listed", b.Target("mcp.", mcpbackend.WithDirectZones(gateway.ZoneExternal)), map[gateway.TrustZone]bool{
			gateway.ZoneExternal: true}},
		{"none listed", b.Target("mcp.", mcpbackend.WithDirectZones()), map[gateway.TrustZone]bool{}},
	}
	for _, pol := range policies {
		for _, zone := range zones {
			for _, proto := range protocols {
				for _, capability := range []string{"", "echo"} { // set: dispatched by the capability layer
					want := proto == gateway.ProtocolMCP || capability != "" || pol.allowed[zone]
					for _, method := range []string{"mcp.echo", mcpbackend.MethodToolsCall} {
						t.Run(pol.name+"/"+zone.String()+"/"+proto.String()+"/cap="+capability+"/"+method, func(t *testing.T) {
							params := `{"message":"m"}`
							if method == mcpbackend.MethodToolsCall {
								params = `{"name":"echo","arguments":{"message":"m"}}`
							}
							res, err := pol.target.Invoke(ctxTimeout(t, 10*time.Second), &gateway.Call{
								Method: method, Params: []byte(params), ID: jsonrpc.NumberID(1), Zone: zone, Protocol: proto, Capability: capability})
							if want {
								if err != nil || firstText(t, res.Value) != "m" {
									t.Fatalf("got %v, %v; want the echo", res, err)
								}
								return
							}
							assertRefused(t, err, zone, method)
						})
					}
				}
			}
		}
	}
}

func assertRefused(t *testing.T, err error, zone gateway.TrustZone, method string) {
	t.Helper()
	ge := gateway.AsError(err)
	if err == nil || ge.Code() != schemas.CodeAuthorization {
		t.Fatalf("got %v; want code %d", err, schemas.CodeAuthorization)
	}
	if ge.Data()["zone"] != zone.String() || ge.Data()["method"] != method {
		t.Fatalf("data %v; want zone %s, method %s", ge.Data(), zone, method)
	}
	if want := "MCP tools are reachable from the " + zone.String() + " zone only as capabilities (nekte.invoke)"; ge.Message() != want {
		t.Fatalf("message %q; want %q", ge.Message(), want)
	}
}
