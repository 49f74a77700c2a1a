package resilience

import (
	"context"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// ConfigError is one problem of a resilience section, at a dotted path inside it
// ("rules[2].rate"); the server prefixes the section's name and positions it in the file.
type ConfigError struct {
	Path string
	Msg  string
}

func (e ConfigError) Error() string { return e.Path + ": " + e.Msg }

// refuseAll is the stage of a section that does not compile (a configuration built in
// code, unchecked): it refuses every call with INTERNAL, data.reason, wrapping err, rather
// than serve without the section.
func refuseAll(reason string, err error) gateway.Middleware {
	refusal := gateway.NewError(schemas.CodeInternal).With("reason", reason).Wrap(err)
	return func(gateway.Handler) gateway.Handler {
		return func(context.Context, *gateway.Call) (*gateway.Result, error) { return nil, refusal }
	}
}
