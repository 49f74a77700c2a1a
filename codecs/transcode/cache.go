package transcode

import (
	"sync"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// Cache compiles a Plan the first time a message type is asked for and returns the same
// Plan afterwards. Plans are keyed by the type's full name and the identity of its
// descriptor, so a reloaded descriptor set — new descriptor values, even for unchanged
// names — gets new plans. A Cache only grows: give each descriptor set its own Cache and
// drop it with the set. A Cache is safe for concurrent use.
type Cache struct {
	opts  Options
	reg   *registry
	plans sync.Map // planKey → *Plan
}

// planKey identifies a message type within one descriptor set.
type planKey struct {
	name protoreflect.FullName
	desc protoreflect.MessageDescriptor
}

// NewCache returns an empty cache whose plans use opts.
func NewCache(opts Options) *Cache {
	return &Cache{opts: opts, reg: newRegistry()}
}

// Plan returns the plan for md, compiling it on first use.
func (c *Cache) Plan(md protoreflect.MessageDescriptor) (*Plan, error) {
	key := planKey{name: md.FullName(), desc: md}
	if p, ok := c.plans.Load(key); ok {
		return p.(*Plan), nil
	}
	p, err := c.reg.plan(md, c.opts)
	if err != nil {
		return nil, err
	}
	actual, _ := c.plans.LoadOrStore(key, p)
	return actual.(*Plan), nil
}
