package grpcbackend

import (
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

// Protocol names of the transcodings this package reports (gateway.Observer.Transcoded).
const (
	protoJSONRPC = "jsonrpc"
	protoGRPC    = "grpc"
)

// encode is m's JSON → protobuf plan run on params, reported to obs when it succeeds.
func (m *method) encode(obs gateway.Observer, dst, params []byte) ([]byte, error) {
	start := time.Now()
	out, err := m.codec.request(dst, params)
	if err == nil {
		obs.Transcoded(protoJSONRPC, protoGRPC, string(m.desc.FullName()), time.Since(start))
	}
	return out, err
}

// decode is m's protobuf → JSON plan run on a response, reported to obs when it succeeds.
func (m *method) decode(obs gateway.Observer, wire []byte) ([]byte, error) {
	start := time.Now()
	out, err := m.codec.response(nil, wire)
	if err == nil {
		obs.Transcoded(protoGRPC, protoJSONRPC, string(m.desc.FullName()), time.Since(start))
	}
	return out, err
}

// streamOpened reports a streaming RPC of m opened to obs; the function it returns
// reports it closed.
func (m *method) streamOpened(obs gateway.Observer) func() {
	return obs.StreamOpened(string(m.desc.Parent().FullName()), string(m.desc.Name()))
}
