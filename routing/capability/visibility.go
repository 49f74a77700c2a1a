package capability

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

// Visibility decides what a caller sees in the catalogs of one configuration
// (nekte.discover, the agent card, the MCP face's tools/list, resources/list,
// resources/templates/list and prompts/list): an entry is shown when the configuration's
// policy would let the caller reach the call that runs it (Decide). Listing decides
// nothing: a call of an entry that is hidden still goes through the policy stage, which
// refuses it with its own error.
type Visibility struct {
	decide  func(gateway.Principal, gateway.TrustZone, gateway.Protocol, *gateway.Call) bool
	viewKey func(gateway.Principal) string
	routes  Router
	hideAll bool
}

// Router finds the target of a method, as the routing table does (routing.Table).
type Router interface {
	// Lookup returns the target for method; false when no target serves it.
	Lookup(method string) (gateway.Target, bool)
}

// VisibilityParams are what a Visibility is built from.
type VisibilityParams struct {
	// Decide reports whether the caller (principal, zone, protocol) may reach call, whose
	// Target is set: the policy's filter, describing the call as the policy stage does, so
	// that a listing and the decision on a call agree. Nil when the configuration has no
	// policy: then everything is shown.
	Decide func(p gateway.Principal, zone gateway.TrustZone, proto gateway.Protocol, call *gateway.Call) bool
	// DecideKey names what Decide reads of the principal (it reads the zone and protocol
	// too, which ViewKey adds): equal for two principals exactly when Decide answers them the
	// same for every call, zone and protocol. Nil: ViewKey cannot say, and a per-caller
	// cache of listings (the MCP face's) is not used.
	DecideKey func(p gateway.Principal) string
	// Routes finds the target of an entry's method; a method it does not route is hidden.
	Routes Router
	// HideAll hides everything: set when the policy does not compile, since the policy
	// stage then refuses every call.
	HideAll bool
}

// NewVisibility returns the Visibility of p.
func NewVisibility(p VisibilityParams) *Visibility {
	return &Visibility{decide: p.Decide, viewKey: p.DecideKey, routes: p.Routes, hideAll: p.HideAll}
}

// ViewKey returns a key that is equal for two callers (principal, zone, protocol) when
// ShowsCall answers them the same for every call — their view of the catalogs, as a cache
// of listings keys them; false when it cannot say (Decide without DecideKey). Without a
// policy, or with one that hides everything, every caller has the same view.
func (v *Visibility) ViewKey(p gateway.Principal, zone gateway.TrustZone, proto gateway.Protocol) (string, bool) {
	switch {
	case v.hideAll:
		return "none", true
	case v.decide == nil:
		return "all", true
	case v.viewKey == nil:
		return "", false
	}
	return zone.String() + "\x00" + proto.String() + "\x00" + v.viewKey(p), true
}

// Filters reports whether the visibility hides anything from anyone: false without a
// policy.
func (v *Visibility) Filters() bool { return v.hideAll || v.decide != nil }

// Shows reports whether the caller (principal, zone, protocol) sees the entry run by
// method as capability id ("" for a direct call). A method no target serves is hidden.
func (v *Visibility) Shows(p gateway.Principal, zone gateway.TrustZone, proto gateway.Protocol, method, id string) bool {
	return v.ShowsCall(p, zone, proto, &gateway.Call{Method: method, Capability: id})
}

// ShowsCall is Shows for a call described with its params (an MCP face's resources/read,
// prompts/get or completion/complete names what it reaches in them); it sets call.Target.
func (v *Visibility) ShowsCall(p gateway.Principal, zone gateway.TrustZone, proto gateway.Protocol, call *gateway.Call) bool {
	if v.hideAll {
		return false
	}
	if v.decide == nil {
		return true
	}
	t, ok := v.routes.Lookup(call.Method)
	if !ok {
		return false
	}
	call.Target = t
	return v.decide(p, zone, proto, call)
}

// Visible returns the capability filter of the caller (DiscoverOptions' Visible): a
// capability runs its method through the pipeline as the caller, with the capability's id.
// Nil when nothing is hidden.
func (v *Visibility) Visible(p gateway.Principal, zone gateway.TrustZone, proto gateway.Protocol) func(Capability) bool {
	if !v.Filters() {
		return nil
	}
	return func(c Capability) bool { return v.Shows(p, zone, proto, c.Method, c.ID) }
}

// Anonymous is the filter of a caller with no credentials — no scopes, on the boundary,
// over HTTP: what a document served to anyone (the agent card) may list.
func (v *Visibility) Anonymous() func(Capability) bool {
	return v.Visible(gateway.Principal{}, gateway.ZoneExternal, gateway.ProtocolHTTP)
}

// view is what one caller may see of a snapshot: shown[i] tells whether s.entries[i] is
// visible, and key fingerprints the hidden ids for cursors. A nil view shows everything.
type view struct {
	shown []bool
	key   string
}

// viewOf asks visible about every entry of s; nil when visible is nil or shows them all,
// so a caller who may see everything gets the same results and cursors as no filter.
func (s *snapshot) viewOf(visible func(Capability) bool) *view {
	if visible == nil {
		return nil
	}
	shown := make([]bool, len(s.entries))
	h := sha256.New()
	hidden := false
	for i, e := range s.entries {
		if shown[i] = visible(e.Capability); !shown[i] {
			hidden = true
			h.Write([]byte(e.ID))
			h.Write([]byte{0})
		}
	}
	if !hidden {
		return nil
	}
	return &view{shown: shown, key: hex.EncodeToString(h.Sum(nil))[:8]}
}

// shows reports whether the entry at index i is visible.
func (v *view) shows(i int) bool { return v == nil || v.shown[i] }

// fingerprint is the view's part of a cursor's filter key: "" for a view of everything.
func (v *view) fingerprint() string {
	if v == nil {
		return ""
	}
	return v.key
}

// visibleEntries returns the entries v shows, in id order.
func (s *snapshot) visibleEntries(v *view) []*entry {
	if v == nil {
		return s.entries
	}
	out := make([]*entry, 0, len(s.entries))
	for i, e := range s.entries {
		if v.shown[i] {
			out = append(out, e)
		}
	}
	return out
}

// indexOf returns the index in s.entries of the entry with id, -1 when there is none.
func (s *snapshot) indexOf(id string) int {
	i, ok := slices.BinarySearchFunc(s.entries, id, func(e *entry, id string) int { return strings.Compare(e.ID, id) })
	if !ok {
		return -1
	}
	return i
}
