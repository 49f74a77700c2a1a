package mcpbackend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/gatehouse-dev/gatehouse/codecs/canonical"
	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend/inputschema"
)

// kind is a set of catalog lists.
type kind uint32

const (
	kindTools kind = 1 << iota
	kindResources
	kindTemplates
	kindPrompts
	kindAll = kindTools | kindResources | kindTemplates | kindPrompts
)

// rawEntry is one item of an upstream's list, as the upstream sent it.
type rawEntry struct {
	key     string          // name, uri or uriTemplate
	def     json.RawMessage // the item's JSON
	canon   string          // its canonical JSON, to tell changes
	version string
}

// serverCatalog is what one upstream offers.
type serverCatalog struct {
	tools, resources, templates, prompts []rawEntry
	// inputs are the compiled input schemas of tools, by upstream tool name; withheld are
	// the tools left out of tools because theirs could not be used (input.go).
	inputs   map[string]*inputschema.Schema
	withheld []withheldTool
}

// requestRefresh asks for the lists in k to be reloaded; requests made while a reload
// runs are coalesced into the next one.
func (u *upstream) requestRefresh(k kind) {
	u.pending.Or(uint32(k))
	select {
	case u.refreshCh <- struct{}{}:
	default:
	}
}

// refresher reloads lists on request, one reload at a time.
func (u *upstream) refresher() {
	for {
		select {
		case <-u.ctx.Done():
			return
		case <-u.refreshCh:
		}
		k := kind(u.pending.Swap(0))
		s := u.pick()
		if k == 0 || s == nil {
			continue // a session coming up requests a full reload
		}
		ctx, cancel := context.WithTimeout(u.ctx, u.cfg.ConnectTimeout)
		next, err := u.load(ctx, s, k)
		cancel()
		if err != nil {
			if u.ctx.Err() != nil {
				return
			}
			u.log.Warn("loading the MCP catalog failed; retrying", "err", err)
			u.pending.Or(uint32(k))
			select {
			case <-u.ctx.Done():
				return
			case <-time.After(u.cfg.Restart.Initial):
			}
			u.requestRefresh(0)
			continue
		}
		u.cat.Store(next)
		u.rebuildOwners()
		u.loadOnce.Do(func() { close(u.loaded) })
	}
}

// isLoaded reports whether the upstream's first catalog is in the bridge's aggregated
// catalog and routes — not merely fetched: between u.cat.Store and the bridge's rebuild a
// call would not find the upstream's tools yet, so readiness waits for loaded.
func (u *upstream) isLoaded() bool {
	select {
	case <-u.loaded:
		return true
	default:
		return false
	}
}

// load fetches the lists in k from s, following pagination, and returns the catalog with
// them replaced. A list whose capability the server did not advertise is empty.
func (u *upstream) load(ctx context.Context, s *session, k kind) (*serverCatalog, error) {
	next := &serverCatalog{}
	if prev := u.cat.Load(); prev != nil {
		*next = *prev
	}
	lists := []struct {
		k   kind
		on  bool
		dst *[]rawEntry
	}{
		{kindTools, s.caps.Tools != nil, &next.tools},
		{kindResources, s.caps.Resources != nil, &next.resources},
		{kindTemplates, s.caps.Resources != nil, &next.templates},
		{kindPrompts, s.caps.Prompts != nil, &next.prompts},
	}
	for _, l := range lists {
		if k&l.k == 0 {
			continue
		}
		if !l.on {
			*l.dst = nil
			continue
		}
		entries, err := u.listAll(ctx, s, l.k)
		if err != nil {
			return nil, err
		}
		*l.dst = entries
	}
	if k&kindTools != 0 {
		u.compileInputs(next, u.cat.Load())
	}
	return next, nil
}

// listSpec says where a list's items and their keys are.
var listSpec = map[kind]struct{ method, field, key string }{
	kindTools:     {"tools/list", "tools", "name"},
	kindResources: {"resources/list", "resources", "uri"},
	kindTemplates: {"resources/templates/list", "resourceTemplates", "uriTemplate"},
	kindPrompts:   {"prompts/list", "prompts", "name"},
}

var errRepeatedCursor = errors.New("the server repeated a pagination cursor")

// listAll fetches every page of one list.
func (u *upstream) listAll(ctx context.Context, s *session, k kind) ([]rawEntry, error) {
	spec := listSpec[k]
	seen := map[mcp.Cursor]bool{"": true}
	var cursor mcp.Cursor
	var out []rawEntry
	index := map[string]int{}
	for {
		x := &exchange{}
		if err := listPage(withExchange(ctx, x), s, k, cursor); err != nil {
			return nil, fmt.Errorf("%s: %w", spec.method, err)
		}
		var page map[string]json.RawMessage
		var items []json.RawMessage
		if err := json.Unmarshal(x.result, &page); err != nil {
			return nil, fmt.Errorf("%s: %w", spec.method, err)
		}
		if err := json.Unmarshal(page[spec.field], &items); err != nil && page[spec.field] != nil {
			return nil, fmt.Errorf("%s: %s: %w", spec.method, spec.field, err)
		}
		for _, it := range items {
			e, ok := u.entry(k, spec.key, it)
			if !ok {
				continue
			}
			if i, dup := index[e.key]; dup {
				out[i] = e // a server listing a name twice: the last one stands
				continue
			}
			index[e.key] = len(out)
			out = append(out, e)
		}
		var next mcp.Cursor
		if c := page["nextCursor"]; c != nil {
			_ = json.Unmarshal(c, &next)
		}
		if next == "" {
			return out, nil
		}
		if seen[next] {
			return nil, fmt.Errorf("%s: %w", spec.method, errRepeatedCursor)
		}
		seen[next], cursor = true, next
	}
}

func listPage(ctx context.Context, s *session, k kind, cursor mcp.Cursor) error {
	var req mcp.PaginatedRequest
	req.Params.Cursor = cursor
	var err error
	switch k {
	case kindTools:
		_, err = s.cli.ListToolsByPage(ctx, mcp.ListToolsRequest{PaginatedRequest: req})
	case kindResources:
		_, err = s.cli.ListResourcesByPage(ctx, mcp.ListResourcesRequest{PaginatedRequest: req})
	case kindTemplates:
		_, err = s.cli.ListResourceTemplatesByPage(ctx, mcp.ListResourceTemplatesRequest{PaginatedRequest: req})
	default:
		_, err = s.cli.ListPromptsByPage(ctx, mcp.ListPromptsRequest{PaginatedRequest: req})
	}
	return err
}

// entry reads one list item; items without their key, or tools the filter drops, are
// left out.
func (u *upstream) entry(k kind, keyField string, item json.RawMessage) (rawEntry, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(item, &m) != nil {
		return rawEntry{}, false
	}
	var key string
	if json.Unmarshal(m[keyField], &key) != nil || key == "" {
		return rawEntry{}, false
	}
	if k == kindTools && !u.cfg.Tools.allows(key) {
		return rawEntry{}, false
	}
	canon, err := canonical.CanonicalJSON(item)
	if err != nil {
		return rawEntry{}, false
	}
	e := rawEntry{key: key, def: item, canon: string(canon)}
	if k == kindTools {
		e.version, err = SchemaVersion(m["inputSchema"], m["outputSchema"])
	} else {
		e.version, err = contentVersion(item)
	}
	return e, err == nil
}

// allows reports whether the filter lets a tool through: deny wins, and an empty allow
// list allows all.
func (f FilterConfig) allows(name string) bool {
	for _, p := range f.Deny {
		if ok, _ := path.Match(p, name); ok {
			return false
		}
	}
	if len(f.Allow) == 0 {
		return true
	}
	for _, p := range f.Allow {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}
