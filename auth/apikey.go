package auth

import (
	"crypto/sha256"
	"crypto/subtle"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

// maxAPIKeyBytes bounds a presented API key; longer values are refused unhashed.
const maxAPIKeyBytes = 512

// apiKeys verifies API keys against their configured SHA-256 hashes.
type apiKeys struct {
	hashes     [][sha256.Size]byte
	principals []gateway.Principal
}

func newAPIKeys(keys []APIKeyConfig) (*apiKeys, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	a := &apiKeys{}
	for _, k := range keys {
		sum, err := parseKeyHash(k.Hash)
		if err != nil {
			return nil, err
		}
		tier := k.Tier
		if tier == "" {
			tier = DefaultTier
		}
		a.hashes = append(a.hashes, sum)
		a.principals = append(a.principals, gateway.Principal{Subject: k.Name, Scopes: k.Scopes, Tier: tier})
	}
	return a, nil
}

// verify returns the principal of key. Every configured hash is compared, in constant
// time, whichever matches: the time taken tells nothing about which key, or how much of
// it, matched.
func (a *apiKeys) verify(key string) (gateway.Principal, error) {
	if a == nil {
		return gateway.Principal{}, refuse(ReasonNotAccepted)
	}
	if len(key) > maxAPIKeyBytes {
		return gateway.Principal{}, refuse(ReasonUnknownAPIKey)
	}
	sum := sha256.Sum256([]byte(key))
	found := -1
	for i := range a.hashes {
		found = subtle.ConstantTimeSelect(subtle.ConstantTimeCompare(sum[:], a.hashes[i][:]), i, found)
	}
	if found < 0 {
		return gateway.Principal{}, refuse(ReasonUnknownAPIKey)
	}
	return a.principals[found], nil
}
