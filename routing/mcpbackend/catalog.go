package mcpbackend

import (
	"bytes"
	"encoding/json"
	"slices"
	"sort"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// Catalog is a snapshot of everything the upstreams offer, under the names the gateway
// exposes. It is shared: callers must not modify it.
type Catalog struct {
	// Generation increases with every change.
	Generation uint64
	// Tools, Resources, ResourceTemplates and Prompts are sorted by exposed name, URI or
	// URI template.
	Tools             []Entry
	Resources         []Entry
	ResourceTemplates []Entry
	Prompts           []Entry
	// Collisions lists the names (or URIs) claimed by more than one upstream; every
	// entry involved is unavailable.
	Collisions []Collision
}

// Entry is one tool, resource, resource template or prompt.
type Entry struct {
	// Name is the exposed name: for tools and prompts possibly prefixed, for resources the
	// URI, for templates the URI template.
	Name string
	// Upstream is the server offering it, and UpstreamName its name there.
	Upstream     string
	UpstreamName string
	// Definition is the item as the upstream listed it, with "name" rewritten to Name.
	Definition json.RawMessage
	// Version is the version hash: for tools SchemaVersion of the input and output
	// schemas, for the others the same hash over the whole definition.
	Version string
	// Available is false while the upstream is down or the name collides; Reason says why.
	Available bool
	Reason    string

	canon string // the upstream definition's canonical JSON
}

// Collision is a name more than one upstream exposes.
type Collision struct {
	// Kind is "tool", "prompt", "resource" or "resource_template".
	Kind      string
	Name      string
	Upstreams []string
}

// Delta is what changed between two catalogs, by exposed name. An entry is changed when
// its definition, version or availability changed.
type Delta struct {
	Tools             ListDelta
	Resources         ListDelta
	ResourceTemplates ListDelta
	Prompts           ListDelta
}

// ListDelta is the change of one list; each slice is sorted.
type ListDelta struct {
	Added, Removed, Changed []string
}

// Empty reports whether nothing changed.
func (d ListDelta) Empty() bool { return len(d.Added)+len(d.Removed)+len(d.Changed) == 0 }

// Empty reports whether nothing changed.
func (d Delta) Empty() bool {
	return d.Tools.Empty() && d.Resources.Empty() && d.ResourceTemplates.Empty() && d.Prompts.Empty()
}

// routes are the lookups behind a catalog snapshot.
type routes struct {
	tools     map[string]*route
	prompts   map[string]*route
	resources map[string]*route
	templates []*route // longest literal prefix first
}

// route is where an exposed entry goes.
type route struct {
	up       *upstream
	original string
	entry    *Entry
	prefix   string // templates: the literal part before the first '{'
	// paramHeaders: a tool whose definition mirrors arguments into Mcp-Param-* headers
	// (x-mcp-header), which mcp-go's client sets: it is not called on the lean path.
	paramHeaders bool
	// taskSupport is the tool definition's execution.taskSupport ("" when absent, and for
	// prompts and resources), read once here rather than on every call.
	taskSupport mcp.TaskSupport
}

// claim is one upstream's item competing for an exposed name.
type claim struct {
	up   *upstream
	raw  rawEntry
	name string
}

// buildCatalog aggregates the upstreams' catalogs.
func buildCatalog(ups []*upstream) (*Catalog, *routes) {
	cat := &Catalog{}
	rt := &routes{tools: map[string]*route{}, prompts: map[string]*route{}, resources: map[string]*route{}}
	down := map[*upstream]string{}
	lists := map[kind][]claim{}
	for _, u := range ups {
		if u.live() == 0 {
			u.mu.Lock()
			down[u] = "upstream " + u.cfg.Name + " is down: " + u.reason
			u.mu.Unlock()
		}
		sc := u.cat.Load()
		if sc == nil {
			continue
		}
		for k, es := range map[kind][]rawEntry{kindTools: sc.tools, kindResources: sc.resources, kindTemplates: sc.templates, kindPrompts: sc.prompts} {
			for _, e := range es {
				lists[k] = append(lists[k], claim{up: u, raw: e})
			}
		}
	}
	named := func(k kind) []claim {
		cs := lists[k]
		if k == kindTools || k == kindPrompts {
			nameClaims(cs)
		} else {
			for i := range cs {
				cs[i].name = cs[i].raw.key
			}
		}
		return cs
	}
	cat.Tools, cat.Collisions = entries(named(kindTools), "tool", down, rt.tools, cat.Collisions)
	cat.Prompts, cat.Collisions = entries(named(kindPrompts), "prompt", down, rt.prompts, cat.Collisions)
	cat.Resources, cat.Collisions = entries(named(kindResources), "resource", down, rt.resources, cat.Collisions)
	templates := map[string]*route{}
	cat.ResourceTemplates, cat.Collisions = entries(named(kindTemplates), "resource_template", down, templates, cat.Collisions)
	for _, r := range templates {
		r.prefix, _, _ = strings.Cut(r.original, "{")
		rt.templates = append(rt.templates, r)
	}
	sort.Slice(rt.templates, func(i, j int) bool { return len(rt.templates[i].prefix) > len(rt.templates[j].prefix) })
	return cat, rt
}

// nameClaims sets each claim's exposed name by its upstream's prefix mode: "always"
// prefixes, "never" does not, "on_collision" prefixes when another upstream claims the
// same unprefixed name.
func nameClaims(cs []claim) {
	prefixed := func(c claim) string {
		n := c.up.cfg.Names
		return n.Prefix + n.Separator + c.raw.key
	}
	owners := map[string]map[*upstream]bool{}
	for i, c := range cs {
		cs[i].name = c.raw.key
		if c.up.cfg.Names.Mode == PrefixAlways {
			cs[i].name = prefixed(c)
		}
		if owners[cs[i].name] == nil {
			owners[cs[i].name] = map[*upstream]bool{}
		}
		owners[cs[i].name][c.up] = true
	}
	for i, c := range cs {
		if c.up.cfg.Names.Mode == PrefixOnCollision && len(owners[c.name]) > 1 {
			cs[i].name = prefixed(c)
		}
	}
}

// entries turns named claims into sorted entries and routes, marking collisions and
// entries of upstreams that are down unavailable.
func entries(cs []claim, kindName string, down map[*upstream]string, rt map[string]*route, cols []Collision) ([]Entry, []Collision) {
	byName := map[string][]claim{}
	for _, c := range cs {
		byName[c.name] = append(byName[c.name], c)
	}
	out := make([]Entry, 0, len(cs))
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		group := byName[n]
		var ups []string
		for _, c := range group {
			ups = append(ups, c.up.cfg.Name)
		}
		slices.Sort(ups)
		if len(group) > 1 {
			cols = append(cols, Collision{Kind: kindName, Name: n, Upstreams: ups})
		}
		for _, c := range group {
			e := Entry{Name: n, Upstream: c.up.cfg.Name, UpstreamName: c.raw.key, Definition: c.raw.def, Version: c.raw.version, Available: true, canon: c.raw.canon}
			if kindName == "tool" || kindName == "prompt" {
				e.Definition = renamed(c.raw.def, c.raw.key, n)
			}
			switch reason, isDown := down[c.up]; {
			case len(group) > 1:
				e.Available, e.Reason = false, "name collision between upstreams "+strings.Join(ups, ", ")
			case isDown:
				e.Available, e.Reason = false, reason
			}
			out = append(out, e)
		}
		if len(group) == 1 {
			rt[n] = &route{up: group[0].up, original: group[0].raw.key, entry: &out[len(out)-1],
				paramHeaders: bytes.Contains(group[0].raw.def, []byte(`"x-mcp-header"`)),
				taskSupport:  toolTaskSupport(out[len(out)-1].Definition)}
		} else {
			rt[n] = &route{entry: &out[len(out)-1]} // collision: no upstream
		}
	}
	return out, cols
}

// renamed returns def with its "name" member set to name.
func renamed(def json.RawMessage, from, to string) json.RawMessage {
	if from == to {
		return def
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(def, &m) != nil {
		return def
	}
	m["name"], _ = json.Marshal(to)
	out, err := json.Marshal(m)
	if err != nil {
		return def
	}
	return out
}

// diff computes the delta between two catalogs.
func diff(prev, next *Catalog) Delta {
	if prev == nil {
		prev = &Catalog{}
	}
	return Delta{
		Tools:             diffList(prev.Tools, next.Tools),
		Resources:         diffList(prev.Resources, next.Resources),
		ResourceTemplates: diffList(prev.ResourceTemplates, next.ResourceTemplates),
		Prompts:           diffList(prev.Prompts, next.Prompts),
	}
}

func diffList(prev, next []Entry) ListDelta {
	type state struct {
		def, version, upstream string
		available              bool
	}
	index := func(es []Entry) map[string][]state {
		m := map[string][]state{}
		for _, e := range es {
			m[e.Name] = append(m[e.Name], state{e.canon, e.Version, e.Upstream, e.Available})
		}
		return m
	}
	p, n := index(prev), index(next)
	var d ListDelta
	for name, ns := range n {
		ps, ok := p[name]
		switch {
		case !ok:
			d.Added = append(d.Added, name)
		case !slices.Equal(ps, ns):
			d.Changed = append(d.Changed, name)
		}
	}
	for name := range p {
		if _, ok := n[name]; !ok {
			d.Removed = append(d.Removed, name)
		}
	}
	slices.Sort(d.Added)
	slices.Sort(d.Removed)
	slices.Sort(d.Changed)
	return d
}
