package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	wire "github.com/gatehouse-dev/gatehouse/codecs/a2a"
)

// card is what the gateway keeps of an agent's card: where and how to call it, and its
// skills by method.
type card struct {
	endpoint  string       // the JSON-RPC interface's URL
	version   wire.Version // the protocol version it speaks
	streaming bool
	signed    bool // the card carried signatures that verified (or no keys were configured)
	name      string
	skills    []Skill
	byMethod  map[string]*Skill
}

// Skill is one skill of an agent's card, as the gateway serves it.
type Skill struct {
	// ID is the skill's id on the agent's card.
	ID string
	// Method is the JSON-RPC method (and capability id) the gateway serves it under:
	// the agent's prefix + ID.
	Method      string
	Name        string
	Description string
	Tags        []string
	Examples    []string
}

// cardURL is the URL the card is fetched from: CardURL itself when it names a .json
// document, else the well-known path under it.
func cardURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || strings.HasSuffix(u.Path, ".json") {
		return raw
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + wire.CardPath
	return u.String()
}

// get fetches url with the card limits: a 200 whose body is at most max bytes.
func (t *Target) get(ctx context.Context, url string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, t.cfg.CardTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := t.client.Do(req)
	if err != nil {
		return nil, &fetchError{err}
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, &fetchError{fmt.Errorf("GET %s: status %d", url, resp.StatusCode)}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, t.cfg.MaxCardBytes+1))
	if err != nil {
		return nil, &fetchError{err}
	}
	if int64(len(body)) > t.cfg.MaxCardBytes {
		return nil, &fetchError{fmt.Errorf("GET %s: larger than max_card_bytes (%d)", url, t.cfg.MaxCardBytes)}
	}
	return body, nil
}

// loadKeys returns the keys the card must be signed with: the JWKS file's, or the JWKS
// URL's (fetched with every card, so a key rotation is followed); nil for none.
func (t *Target) loadKeys(ctx context.Context) (*wire.KeySet, error) {
	s := t.cfg.CardSignature
	switch {
	case s.JWKSFile != "":
		raw, err := os.ReadFile(s.JWKSFile)
		if err != nil {
			return nil, fmt.Errorf("card_signature.jwks_file: %w", err)
		}
		return parseJWKS(raw)
	case s.JWKSURL != "":
		raw, err := t.get(ctx, s.JWKSURL)
		if err != nil {
			return nil, fmt.Errorf("card_signature.jwks_url: %w", err)
		}
		return parseJWKS(raw)
	}
	return nil, nil
}

// fetchCard fetches, verifies and reads the agent's card.
func (t *Target) fetchCard(ctx context.Context) (*card, error) {
	raw, err := t.get(ctx, cardURL(t.cfg.CardURL))
	if err != nil {
		return nil, err
	}
	keys, err := t.loadKeys(ctx)
	if err != nil {
		return nil, err
	}
	signed, err := verifyCard(raw, keys, t.cfg.CardSignature.RequireSignedCard)
	if err != nil {
		return nil, err
	}
	c, err := t.readCard(raw)
	if err != nil {
		return nil, err
	}
	c.signed = signed
	return c, nil
}

// readCard reads a card's JSON: the JSON-RPC interface (1.0 preferred, else 0.3, else
// the 0.3 url member) and the skills.
func (t *Target) readCard(raw []byte) (*card, error) {
	var ac wire.AgentCard
	if err := json.Unmarshal(raw, &ac); err != nil {
		return nil, fmt.Errorf("the card is not an agent card: %w", err)
	}
	c := &card{name: ac.Name, byMethod: map[string]*Skill{}}
	c.streaming = ac.Capabilities.Streaming != nil && *ac.Capabilities.Streaming
	var v03 string
	for _, in := range ac.SupportedInterfaces {
		binding := in.ProtocolBinding
		if binding == "" {
			binding = in.Transport
		}
		if binding != wire.BindingJSONRPC {
			continue
		}
		if strings.HasPrefix(in.ProtocolVersion, "1.") && c.endpoint == "" {
			c.endpoint, c.version = in.URL, wire.V10
		}
		if strings.HasPrefix(in.ProtocolVersion, "0.") && v03 == "" {
			v03 = in.URL
		}
	}
	if c.endpoint == "" {
		switch {
		case v03 != "":
			c.endpoint, c.version = v03, wire.V03
		case ac.URL != "" && (ac.PreferredTransport == "" || ac.PreferredTransport == wire.BindingJSONRPC):
			c.endpoint, c.version = ac.URL, wire.V03
			if strings.HasPrefix(ac.ProtocolVersion, "1.") {
				c.version = wire.V10
			}
		default:
			return nil, errors.New("the card offers no JSON-RPC interface")
		}
	}
	if err := checkURL("the card's JSON-RPC interface", c.endpoint); err != nil {
		return nil, err
	}
	ep := t.cfg
	ep.CardURL = c.endpoint
	if err := ep.checkPlaintextHop(); err != nil {
		return nil, fmt.Errorf("the card's JSON-RPC interface: %w", err)
	}
	if len(ac.Skills) > t.cfg.MaxSkills {
		return nil, fmt.Errorf("the card has %d skills, more than max_skills (%d)", len(ac.Skills), t.cfg.MaxSkills)
	}
	c.skills = make([]Skill, 0, len(ac.Skills))
	for _, s := range ac.Skills {
		if s.ID == "" || strings.ContainsFunc(s.ID, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
			return nil, fmt.Errorf("the card has a skill with id %q: ids must be non-empty, without spaces or control characters", s.ID)
		}
		sk := Skill{ID: s.ID, Method: t.cfg.Prefix + s.ID, Name: s.Name, Description: s.Description, Tags: s.Tags, Examples: s.Examples}
		if _, dup := c.byMethod[sk.Method]; dup {
			return nil, fmt.Errorf("the card has two skills with id %q", s.ID)
		}
		c.skills = append(c.skills, sk)
		c.byMethod[sk.Method] = &c.skills[len(c.skills)-1]
	}
	return c, nil
}
