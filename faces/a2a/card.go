package a2aface

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/gatehouse-dev/gatehouse/codecs/a2a"
	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/routing/capability"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// cardMaxAge is how long a client or cache may reuse the card: the catalog, and so the
// card, changes with the configuration and the upstreams' lists.
const cardMaxAge = 60

// Names of the card's security schemes.
const (
	schemeBearer = "bearer"
	schemeAPIKey = "apiKey"
)

// mediaJSON is the media type of JSON.
const mediaJSON = "application/json"

// Media types of the skills.
var (
	inputModes  = []string{mediaJSON, "text/plain"}
	outputModes = []string{mediaJSON, "text/plain"}
)

// ServeCard serves GET (and HEAD) /.well-known/agent-card.json to anyone: the public card,
// whose skills are those an anonymous caller may see (none when the policy lets no
// anonymous caller reach a capability) — an authenticated caller reads its own with
// GetExtendedAgentCard — signed when a2a.card.sign is on, with an ETag and a short
// max-age.
func (f *Face) ServeCard(w http.ResponseWriter, r *http.Request) {
	rt := f.gw.Acquire()
	defer rt.Release()
	traceID := observability.NewTraceID()
	cfg := rt.A2A()
	if cfg == nil {
		faces.WriteHTTPError(w, http.StatusNotFound, gateway.Errorf(schemas.CodeInvalidRequest, "A2A is not enabled"), traceID, faces.EncodingJSON)
		return
	}
	body, err := f.cardBytes(f.card(rt, cfg, faces.RequestOrigin(r), nil), cfg)
	if err != nil {
		f.log.Error("a2a: writing the agent card", "trace_id", traceID, "err", err)
		faces.WriteHTTPError(w, http.StatusInternalServerError, gateway.NewError(schemas.CodeInternal), traceID, faces.EncodingJSON)
		return
	}
	sum := sha256.Sum256(body)
	etag := `"` + base64.RawURLEncoding.EncodeToString(sum[:12]) + `"`
	h := w.Header()
	h.Set("Cache-Control", "public, max-age="+strconv.Itoa(cardMaxAge))
	h.Set("ETag", etag)
	h.Set("X-Trace-Id", traceID)
	if inm := r.Header.Get("If-None-Match"); inm != "" && strings.Contains(inm, etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", faces.JSONContentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body) //nolint:gosec,nolintlint // the card encoded here, served as application/json
	}
}

// cardBytes returns card as JSON, signed with the key ring when a2a.card.sign is on: a JWS
// over the card's RFC 8785 canonical JSON, its payload detached, in signatures[]
// (codecs/a2a SignCard; VerifyCard checks it against the gateway's JWKS).
func (f *Face) cardBytes(card a2a.AgentCard, cfg *Config) ([]byte, error) {
	body, err := json.Marshal(card)
	if err != nil || !cfg.Card.Sign {
		return body, err
	}
	ring := f.ring()
	if ring == nil {
		return nil, errors.New("a2a.card.sign is on but there is no key ring (auth.keyring)")
	}
	return a2a.SignCard(body, ring, "")
}

// extendedCard serves GetExtendedAgentCard: the card of the skills the caller may see.
// It needs an authenticated caller (an anonymous one is refused with 4001); an agent
// whose auth section has no scheme has no extended card (UnsupportedOperation).
func (x *exchange) extendedCard() {
	sec := x.rt.Security()
	if !sec.Bearer && sec.APIKeyHeader == "" {
		x.writeError(x.req.ID, a2a.UnsupportedOperation("This agent has no extended agent card: it authenticates no caller"))
		return
	}
	if x.ex.Principal.Anonymous {
		x.writeError(x.req.ID, fromGateway(gateway.Errorf(schemas.CodeAuthentication, "The extended agent card needs an authenticated caller")))
		return
	}
	who := x.ex.Principal
	origin := "" // another binding's call (Operate): a2a.endpoint, or the path alone
	if x.r != nil {
		origin = faces.RequestOrigin(x.r)
	}
	card := x.f.card(x.rt, x.cfg, origin, &who)
	body, err := x.f.cardBytes(card, x.cfg)
	if err != nil {
		x.f.log.Error("a2a: writing the extended agent card", "trace_id", x.ex.TraceID, "err", err)
		x.writeError(x.req.ID, a2a.Errf(a2a.CodeInternal, "Internal error"))
		return
	}
	x.writeResult(body)
}

// card builds the agent card of rt for a caller that reached the boundary at origin: the
// public one (who nil: the skills an anonymous caller may see) or the extended one of who.
func (f *Face) card(rt Runtime, cfg *Config, origin string, who *gateway.Principal) a2a.AgentCard {
	url := cfg.Endpoint
	if url == "" {
		url = origin + Path
	}
	version := cfg.Version
	if version == "" {
		version = f.vers
	}
	sec := rt.Security()
	on, off := true, false
	push, extended := &off, &off
	if cfg.Push != nil && cfg.Push.Enabled && f.ring() != nil {
		push = &on
	}
	if sec.Bearer || sec.APIKeyHeader != "" {
		extended = &on
	}
	var skills []capability.Capability
	if who != nil || sec.Anonymous {
		skills = rt.Skills(who)
	}
	card := a2a.AgentCard{
		Name: cfg.Name, Description: cfg.Description, Version: version,
		SupportedInterfaces: []a2a.AgentInterface{{URL: url, ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: "1.0"}},
		Capabilities:        a2a.AgentCapabilities{Streaming: &on, PushNotifications: push, ExtendedAgentCard: extended},
		DefaultInputModes:   inputModes, DefaultOutputModes: outputModes,
		Skills: skillsOf(skills),
	}
	if *cfg.ServeV03 {
		card.SupportedInterfaces = append(card.SupportedInterfaces,
			a2a.AgentInterface{URL: url, ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: "0.3", Transport: a2a.BindingJSONRPC})
		card.URL, card.PreferredTransport, card.ProtocolVersion = url, a2a.BindingJSONRPC, "0.3.0"
		card.SupportsAuthenticatedExtendedCard = extended
	}
	securityOf(&card, sec)
	return card
}

// skillsOf returns one skill per capability.
func skillsOf(caps []capability.Capability) []a2a.AgentSkill {
	skills := make([]a2a.AgentSkill, 0, len(caps))
	for _, c := range caps {
		s := a2a.AgentSkill{ID: c.ID, Name: c.ID, Description: c.Description, Tags: tagsOf(c),
			InputModes: inputModes, OutputModes: outputModes}
		if s.Description == "" {
			s.Description = "Capability " + c.ID
		}
		for _, ex := range c.Examples {
			if len(ex.In) > 0 {
				s.Examples = append(s.Examples, string(ex.In))
			}
		}
		skills = append(skills, s)
	}
	return skills
}

func tagsOf(c capability.Capability) []string {
	tags := []string{string(c.Kind)}
	if c.Category != "" {
		tags = append([]string{c.Category}, tags...)
	}
	if c.Streaming {
		tags = append(tags, "streaming")
	}
	return tags
}

// securityOf adds the schemes of the auth section to card, each an alternative: a bearer
// JWT, an API key header; a caller without credentials is let in when anonymous access is
// on (the empty requirement).
func securityOf(card *a2a.AgentCard, sec Security) {
	schemes := map[string]a2a.SecurityScheme{}
	if sec.Bearer {
		schemes[schemeBearer] = a2a.SecurityScheme{
			HTTPAuth: &a2a.HTTPAuthSecurityScheme{Scheme: "Bearer", BearerFormat: "JWT"},
			Type:     "http", Scheme: "bearer", BearerFormat: "JWT",
		}
	}
	if sec.APIKeyHeader != "" {
		schemes[schemeAPIKey] = a2a.SecurityScheme{
			APIKey: &a2a.APIKeySecurityScheme{Location: "header", Name: sec.APIKeyHeader},
			Type:   "apiKey", In: "header", Name: sec.APIKeyHeader,
		}
	}
	if len(schemes) == 0 {
		return
	}
	card.SecuritySchemes = schemes
	for _, name := range []string{schemeBearer, schemeAPIKey} {
		if _, ok := schemes[name]; ok {
			card.SecurityRequirements = append(card.SecurityRequirements, a2a.SecurityRequirement{Schemes: map[string]a2a.StringList{name: {List: []string{}}}})
			card.Security = append(card.Security, map[string][]string{name: {}})
		}
	}
	if sec.Anonymous {
		card.SecurityRequirements = append(card.SecurityRequirements, a2a.SecurityRequirement{Schemes: map[string]a2a.StringList{}})
		card.Security = append(card.Security, map[string][]string{})
	}
}
