package capability

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/gatehouse-dev/gatehouse/codecs/nekte"
)

// Shape is the form of a discover result.
type Shape string

// The shapes of a discover result.
const (
	// ShapeStandard is the wire's: caps is an array of entries of the level asked for.
	ShapeStandard Shape = "standard"
	// ShapeCompact is an opt-in form of level 0 for agents that ask for it: caps is an
	// object mapping each category to the ids in it, and version hashes are left out (an
	// agent gets h from L1 or L2 of the capabilities it means to call, or invokes without
	// h). Every key is written once.
	ShapeCompact Shape = "compact"
)

// DiscoverOptions are the gateway's additive params of nekte.discover, beside the wire's
// level and filter: pagination and the result's shape. Clients that do not know them
// send none and get the standard shape with every match (unless discover.page_size is
// set).
type DiscoverOptions struct {
	// Cursor continues a listing: the next_cursor of the previous page. It is opaque,
	// bound to the catalog version and the filter it was issued for.
	Cursor string `json:"cursor,omitempty"`
	// Limit is the page size (capped by discover.max_page_size); 0 takes
	// discover.page_size.
	Limit int `json:"limit,omitempty"`
	// Shape is "standard" (the default) or "compact" (level 0 only).
	Shape Shape `json:"shape,omitempty"`
	// Visible, when set, reports whether the caller may see a capability; nil shows every
	// one. It is never read from params: the server sets it from its policy. Hidden
	// capabilities are left out before the filter, the search, top_k and paging apply, so
	// counts and pages are those of the caller's view, and a cursor is bound to that view
	// (a fingerprint of the ids it hides): presented by a caller who sees other
	// capabilities it is refused with INVALID_PARAMS. Offsets only ever index
	// the presenting caller's own view, so no cursor reveals what another caller sees.
	Visible func(Capability) bool `json:"-"`
}

var _ nekte.Params = (*DiscoverOptions)(nil)

// maxCursorLen bounds a cursor's length before it is decoded.
const maxCursorLen = 128

// Validate checks the limit (not negative), the shape and the cursor's length.
func (o *DiscoverOptions) Validate() error {
	switch {
	case o.Limit < 0:
		return &nekte.ParamError{Field: "limit", Reason: "must not be negative"}
	case o.Shape != "" && o.Shape != ShapeStandard && o.Shape != ShapeCompact:
		return &nekte.ParamError{Field: "shape", Reason: `must be "standard" or "compact"`}
	case len(o.Cursor) > maxCursorLen:
		return &nekte.ParamError{Field: "cursor", Reason: reasonNotCursor}
	default:
		return nil
	}
}

// DecodeDiscover reads nekte.discover's params: the wire's (nekte.DiscoverParams) and the
// additive ones (DiscoverOptions), each with codecs/nekte's strict Decode. Errors are
// *nekte.ParamError values.
func DecodeDiscover(raw []byte) (nekte.DiscoverParams, DiscoverOptions, error) {
	var p nekte.DiscoverParams
	var o DiscoverOptions
	if err := nekte.Decode(raw, &p); err != nil {
		return p, o, err
	}
	if err := nekte.Decode(raw, &o); err != nil {
		return p, o, err
	}
	return p, o, nil
}

// Discover answers nekte.discover with the standard shape and no cursor: DiscoverWith.
func (r *Registry) Discover(p nekte.DiscoverParams) (json.RawMessage, error) {
	return r.DiscoverWith(p, DiscoverOptions{})
}

// DiscoverWith answers nekte.discover and returns the result's JSON:
// {"agent", "v", "caps": [...], "next_cursor"?} with entries of level 0 ({id, cat, h}),
// 1 (with desc and cost) or 2 (with input, output and examples), or the compact shape.
//
// The filter keeps the capabilities of a category, the one with an id, and those matching
// a query (ranked search over ids and descriptions: top_k best at or above threshold, both
// from config when absent or 0; see the package doc for the score). Without a query the
// capabilities are in id order. A page holds Limit capabilities (else discover.page_size;
// 0 is all); next_cursor is set when more follow. A cursor from another catalog version
// (the catalog changed), for another filter or for another view (o.Visible) is refused
// with INVALID_PARAMS. Errors are *gateway.Error values.
func (r *Registry) DiscoverWith(p nekte.DiscoverParams, o DiscoverOptions) (json.RawMessage, error) {
	if err := p.Validate(); err != nil {
		return nil, paramError(err)
	}
	if err := o.Validate(); err != nil {
		return nil, paramError(err)
	}
	if o.Shape == ShapeCompact && p.Level != nekte.LevelCatalog {
		return nil, invalidParams("shape", `"compact" is a shape of level 0`)
	}
	s := r.current()
	v := s.viewOf(o.Visible)
	list := s.filter(p.Filter, &r.cfg, v)
	query := filterKey(p.Filter) + v.fingerprint()
	start := 0
	if o.Cursor != "" {
		c, err := decodeCursor(o.Cursor)
		switch {
		case err != nil:
			return nil, invalidParams("cursor", reasonNotCursor)
		case c.version != s.version:
			return nil, invalidParams("cursor", "is stale: the catalog changed since it was issued; discover again without a cursor").
				With("recovery_hint", "RESTART_DISCOVERY")
		case !strings.HasPrefix(c.filter, query[:filterKeyLen]):
			return nil, invalidParams("cursor", "was issued for another filter")
		case c.filter != query:
			return nil, invalidParams("cursor", "was issued for a caller who sees other capabilities; discover again without a cursor")
		}
		start = min(c.offset, len(list))
	}
	size := r.cfg.Discover.PageSize
	if o.Limit > 0 {
		size = min(o.Limit, r.cfg.Discover.MaxPageSize)
	}
	end, next := len(list), ""
	if size > 0 && start+size < len(list) {
		end = start + size
		next = cursor{version: s.version, filter: query, offset: end}.encode()
	}
	page := list[start:end]
	return s.appendResult(make([]byte, 0, resultSize(p.Level, page)), r.cfg.Agent, p.Level, o.Shape, page, next), nil
}

// resultSize estimates the length of a result, so that it is written without regrowing.
func resultSize(level int, page []*entry) int {
	n := 128
	for _, e := range page {
		n += len(e.ID) + len(e.Category) + len(e.Hash) + 32
		if level >= nekte.LevelSummary {
			n += len(e.desc) + 48
		}
		if level >= nekte.LevelSchema {
			n += len(e.Input) + len(e.Output) + 32
			for _, ex := range e.Examples {
				n += len(ex.In) + len(ex.Out) + 16
			}
		}
	}
	return n
}

const reasonNotCursor = "is not a cursor this gateway issued"

// filter returns the entries f keeps of those v shows, ranked when it has a query.
func (s *snapshot) filter(f *nekte.DiscoverFilter, cfg *Config, v *view) []*entry {
	if f == nil || (f.Category == "" && f.ID == "" && f.Query == "" && f.TopK == 0) {
		return s.visibleEntries(v)
	}
	keep := func(i int) bool {
		e := s.entries[i]
		return v.shows(i) && (f.Category == "" || e.Category == f.Category) && (f.ID == "" || e.ID == f.ID)
	}
	if f.Query != "" {
		threshold := f.Threshold
		if threshold == 0 {
			threshold = cfg.threshold()
		}
		hits := s.index.search(f.Query, keep, cmp.Or(f.TopK, cfg.Search.TopK), threshold)
		out := make([]*entry, len(hits))
		for i, h := range hits {
			out[i] = s.entries[h.doc]
		}
		return out
	}
	var out []*entry
	if f.ID != "" {
		if i := s.indexOf(f.ID); i >= 0 && keep(i) {
			out = append(out, s.entries[i])
		}
	} else {
		for i, e := range s.entries {
			if keep(i) {
				out = append(out, e)
			}
		}
	}
	if f.TopK > 0 && len(out) > f.TopK {
		out = out[:f.TopK]
	}
	return out
}

// filterKeyLen is the length of a filterKey.
const filterKeyLen = 8

// filterKey identifies a filter in cursors. A cursor's filter part is the filterKey
// followed by the fingerprint of the caller's view ("" for a view of everything).
func filterKey(f *nekte.DiscoverFilter) string {
	if f == nil {
		f = &nekte.DiscoverFilter{}
	}
	h := sha256.New()
	for _, s := range []string{f.Category, f.ID, f.Query, strconv.Itoa(f.TopK), strconv.FormatFloat(f.Threshold, 'g', -1, 64)} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:filterKeyLen]
}
