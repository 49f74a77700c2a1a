package a2a

import (
	"errors"
	"fmt"

	wire "github.com/gatehouse-dev/gatehouse/codecs/a2a"
)

// A card's signatures (A2A 1.0, AgentCardSignature) are JWS with a detached payload over
// the RFC 8785 canonical JSON of the card without its signatures member; codecs/a2a
// verifies them (VerifyCard, the same code that checks the gateway's own signed card). A
// card verifies when one of its signatures verifies with a key of the agent's JWKS.

// Errors of card verification; ErrCardSignature is in the chain of every one.
var (
	ErrCardSignature = errors.New("card signature")
	errUnsigned      = fmt.Errorf("%w: the card is not signed and card_signature.require_signed_card is set", ErrCardSignature)
)

// verifyCard checks raw's signatures against keys: a signed card must have one that
// verifies (signed is then true), and an unsigned one is refused when required. Without
// keys (none configured, so required is not set: Validate) a card is not verified.
func verifyCard(raw []byte, keys *wire.KeySet, required bool) (signed bool, err error) {
	if keys == nil {
		if _, err := wire.VerifyCard(raw, wire.KeySet{}); errors.Is(err, wire.ErrUnsigned) {
			return false, nil
		}
		return true, nil // signed (or unreadable, which reading the card reports): nothing to verify against
	}
	_, err = wire.VerifyCard(raw, *keys)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, wire.ErrUnsigned) && required:
		return false, errUnsigned
	case errors.Is(err, wire.ErrUnsigned):
		return false, nil
	}
	return true, fmt.Errorf("%w: no signature verifies with the configured keys (%w)", ErrCardSignature, err)
}

// parseJWKS reads the agent's JWK Set.
func parseJWKS(raw []byte) (*wire.KeySet, error) {
	ks, err := wire.ParseKeySet(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCardSignature, err)
	}
	return &ks, nil
}
