package grpcface

import (
	"context"

	"google.golang.org/grpc"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

// Service is a gRPC service served on the internal face beside the gateway's own (the
// agent link): it registers itself, and authenticates its callers with the function the
// face gives it, so that the server wires it without importing gRPC.
type Service interface {
	// RegisterGRPC registers the service on s. authn authenticates the caller of an RPC
	// as the face's own services do (bearer token or API key from the metadata, the
	// verified client certificate), under the configuration current then: it returns the
	// principal, the credentials presented (with the remote address), and an error when
	// they were absent or refused.
	RegisterGRPC(s grpc.ServiceRegistrar, authn func(ctx context.Context) (gateway.Principal, gateway.Credentials, error))
}

// authenticate is the authn the face gives its Services.
func (f *Face) authenticate(ctx context.Context) (gateway.Principal, gateway.Credentials, error) {
	creds := credentials(ctx)
	rt := f.gw.Acquire()
	defer rt.Release()
	p, err := rt.Authenticator().Authenticate(ctx, creds)
	return p, creds, err
}
