package nekte

import (
	"context"
	"encoding/json"
	"time"

	nk "github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/capability"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// CurrentCatalog is the Service's Catalog in a process that reloads its configuration:
// the capability catalog of the configuration current at each call, so that the
// process-wide Service follows reloads. The function returns that catalog, with the
// configuration held until release is called; a nil catalog (NEKTE is off in the current
// configuration) holds no capabilities.
type CurrentCatalog func() (reg *capability.Registry, release func())

var _ Catalog = CurrentCatalog(nil)

// errNoCatalog answers a catalog call while the current configuration has NEKTE off (a
// task resumed or verified across a reload that turned it off).
var errNoCatalog = gateway.Errorf(schemas.CodeMethodNotFound, "NEKTE is not enabled")

// Lookup implements Catalog.
func (c CurrentCatalog) Lookup(id string) (capability.Capability, bool) {
	reg, release := c()
	defer release()
	if reg == nil {
		return capability.Capability{}, false
	}
	return reg.Lookup(id)
}

// Match implements Catalog.
func (c CurrentCatalog) Match(query string) (capability.Capability, bool) {
	reg, release := c()
	defer release()
	if reg == nil {
		return capability.Capability{}, false
	}
	return reg.Match(query)
}

// DiscoverWith implements Catalog.
func (c CurrentCatalog) DiscoverWith(p nk.DiscoverParams, o capability.DiscoverOptions) (json.RawMessage, error) {
	reg, release := c()
	defer release()
	if reg == nil {
		return nil, errNoCatalog
	}
	return reg.DiscoverWith(p, o)
}

// Invoke implements Catalog.
func (c CurrentCatalog) Invoke(ctx context.Context, inv capability.Invoker, p nk.InvokeParams) (*nk.InvokeResult, error) {
	reg, release := c()
	defer release()
	if reg == nil {
		return nil, errNoCatalog
	}
	return reg.Invoke(ctx, inv, p)
}

// Observe implements Catalog.
func (c CurrentCatalog) Observe(id string, d time.Duration, tokens int) {
	reg, release := c()
	defer release()
	if reg != nil {
		reg.Observe(id, d, tokens)
	}
}
