package a2a

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gatehouse-dev/gatehouse/codecs/canonical"
)

// AgentCardSignature is one JWS signature of an agent card (specification §8.4): the
// protected header and the signature, base64url; the payload is detached — it is the
// card itself, canonicalized (CardPayload).
type AgentCardSignature struct {
	Protected string         `json:"protected"`
	Signature string         `json:"signature"`
	Header    map[string]any `json:"header,omitempty"`
}

// CardSigner signs a JWS: given the protected header's members but alg and kid, it
// returns the protected header (with its alg and kid) and the signature, base64url. The
// gateway's key ring (auth.KeyRing.SignJWS) is one.
type CardSigner interface {
	SignJWS(header map[string]any, payload []byte) (protected, signature string, err error)
}

// JWSType is the typ of a card signature's protected header (specification §8.4.2).
const JWSType = "JOSE"

// CardPayload returns what a card's signatures sign: the card (a JSON object) without its
// signatures member, in RFC 8785 canonical form. The card's other members are signed as
// they are: a card is expected to leave out members at their default value, as the
// specification's canonicalization asks and as this package's AgentCard writes them.
func CardPayload(card []byte) ([]byte, error) {
	if !isJSONObject(card) {
		return nil, fmt.Errorf("%w: the card is not a JSON object", ErrJWS)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(card, &m); err != nil {
		return nil, fmt.Errorf("%w: the card: %w", ErrJWS, err)
	}
	delete(m, "signatures")
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return canonical.CanonicalJSON(b)
}

// SignCard returns card (a JSON object) with one more signature by s in its signatures
// member: a JWS with the protected header {"alg", "kid", "typ": "JOSE"} (and "jku" when
// jku is set) over CardPayload(card), its payload detached. Signatures already present
// are kept.
func SignCard(card []byte, s CardSigner, jku string) ([]byte, error) {
	payload, err := CardPayload(card)
	if err != nil {
		return nil, err
	}
	header := map[string]any{"typ": JWSType}
	if jku != "" {
		header["jku"] = jku
	}
	protected, sig, err := s.SignJWS(header, payload)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	_ = json.Unmarshal(card, &m) // CardPayload read it
	var sigs []AgentCardSignature
	if raw, ok := m["signatures"]; ok {
		if err := json.Unmarshal(raw, &sigs); err != nil {
			return nil, fmt.Errorf("%w: the card's signatures: %w", ErrJWS, err)
		}
	}
	sigs = append(sigs, AgentCardSignature{Protected: protected, Signature: sig})
	m["signatures"], _ = json.Marshal(sigs) // strings only
	return json.Marshal(m)
}

// ErrUnsigned is VerifyCard's error for a card without signatures.
var ErrUnsigned = errors.New("a2a: the agent card is not signed")

// VerifyCard verifies the signatures of card (a JSON object) with keys: it returns the
// protected header of the first signature that verifies over CardPayload(card), and an
// error (wrapping ErrUnsigned or ErrJWS) when none does. A card altered after it was
// signed — any member but signatures — verifies with none.
func VerifyCard(card []byte, keys KeySet) (JWSHeader, error) {
	payload, err := CardPayload(card)
	if err != nil {
		return JWSHeader{}, err
	}
	var c struct {
		Signatures []AgentCardSignature `json:"signatures"`
	}
	if err := json.Unmarshal(card, &c); err != nil {
		return JWSHeader{}, fmt.Errorf("%w: the card's signatures: %w", ErrJWS, err)
	}
	if len(c.Signatures) == 0 {
		return JWSHeader{}, ErrUnsigned
	}
	var errs []error
	for _, s := range c.Signatures {
		h, err := keys.VerifyJWS(s.Protected, payload, s.Signature)
		if err == nil {
			return h, nil
		}
		errs = append(errs, err)
	}
	return JWSHeader{}, errors.Join(errs...)
}
