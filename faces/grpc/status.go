package grpcface

import (
	"encoding/json"
	"maps"
	"strconv"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/status"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// toStatus maps a gateway error to a gRPC status through the error table; the JSON-RPC code
// and error.data travel in an ErrorInfo detail.
func toStatus(err *gateway.Error, traceID string) error {
	kind := schemas.KindOf(err.Code())
	data := make(map[string]any, len(err.Data())+1)
	maps.Copy(data, err.Data())
	data["trace_id"] = traceID
	raw, _ := json.Marshal(data)
	st := status.New(kind.GRPC, err.Message())
	if withInfo, e := st.WithDetails(&errdetails.ErrorInfo{
		Reason:   kind.Name,
		Domain:   gatewayDomain,
		Metadata: map[string]string{"jsonrpc_code": strconv.Itoa(int(err.Code())), "data": string(raw)},
	}); e == nil {
		st = withInfo
	}
	return st.Err()
}
