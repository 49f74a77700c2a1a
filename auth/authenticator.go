package auth

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

// Options are what an Authenticator needs besides its configuration.
type Options struct {
	// Logger receives failures to fetch a JWKS (never a credential); nil discards them.
	Logger *slog.Logger
	// Now is the clock tokens are checked against; nil means time.Now.
	Now func() time.Time
	// Revocations is the process's revocation list: a verified token whose jti or subject
	// it lists, and an API key whose name it lists as a subject, are refused (4001
	// "revoked"). nil revokes nothing. The Authenticator does not close it.
	Revocations *Revocations
	// OnToken, when set, is told the outcome of every bearer JWT checked: TokenVerified,
	// TokenCached (served from the token cache) or TokenRefused (revoked ones included). It
	// runs on the caller's goroutine and must not block.
	OnToken func(result string)
}

// Outcomes of a bearer JWT's check, as Options.OnToken receives them.
const (
	TokenVerified = "verified"
	TokenCached   = "cached"
	TokenRefused  = "refused"
)

// Authenticator is the gateway.Authenticator of an auth section: bearer JWTs of the
// configured issuers, API keys, and anonymous access. Build it with Open and Close it when
// its configuration is replaced; it is safe for concurrent use.
type Authenticator struct {
	issuers   map[string]*Verifier
	maxBytes  int     // the largest max_token_bytes of any issuer: the limit before parsing
	guarded   foldSet // claim names whose case variants any issuer refuses
	apiKeys   *apiKeys
	anonymous *anonymous
	certs     *clientCerts
	remotes   []*remoteKeys
	cache     *tokenCache // verified tokens; nil when disabled or without jwt
	now       func() time.Time
	revoked   *Revocations
	onToken   func(result string) // nil: no one is told
	closeOnce sync.Once
}

var _ gateway.Authenticator = (*Authenticator)(nil)

// Open validates cfg, reads the key files it names and starts fetching its JWKS URLs. A
// JWKS URL that cannot be fetched yet is not an error (the fetch is logged and retried).
func Open(ctx context.Context, cfg Config, opts Options) (*Authenticator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	a := &Authenticator{issuers: map[string]*Verifier{}, guarded: foldSet{}, anonymous: newAnonymous(cfg.Anonymous), certs: newClientCerts(cfg.ClientCert), revoked: opts.Revocations,
		now: opts.Now, onToken: opts.OnToken}
	var err error
	if a.apiKeys, err = newAPIKeys(cfg.APIKeys); err != nil {
		return nil, err
	}
	if cfg.JWT != nil {
		a.cache = newTokenCache(cfg.JWT.Cache)
		for i, ic := range cfg.JWT.Issuers {
			if err := a.addIssuer(ctx, ic.withDefaults(), opts); err != nil {
				_ = a.Close()
				return nil, fmt.Errorf("jwt.issuers[%d] (%s): %w", i, ic.Issuer, err)
			}
		}
	}
	return a, nil
}

// addIssuer builds the verifier of one issuer with its key source.
func (a *Authenticator) addIssuer(ctx context.Context, c IssuerConfig, opts Options) error {
	var keys keySource
	var algorithms []string
	switch {
	case c.JWKSURL != "":
		r, err := openRemoteKeys(ctx, c.JWKSURL, c, opts.Logger.With("issuer", c.Issuer))
		if err != nil {
			return fmt.Errorf("jwks_url: %w", err)
		}
		a.remotes = append(a.remotes, r)
		keys, algorithms = r, r.algorithms()
	default:
		s, err := openStaticKeys(c)
		if err != nil {
			return err
		}
		keys, algorithms = s, algorithmsOf(s.keys)
	}
	v := newVerifier(verifierSettings{cfg: c, algorithms: algorithms, now: opts.Now}, keys)
	a.issuers[c.Issuer] = v
	a.maxBytes = max(a.maxBytes, c.MaxTokenBytes)
	maps.Copy(a.guarded, v.guarded)
	return nil
}

// openStaticKeys reads the keys of an issuer configured with files or a secret.
func openStaticKeys(c IssuerConfig) (*staticKeys, error) {
	switch {
	case c.Secret != "":
		return secretKeys(c.Secret, c.Algorithms), nil
	case c.JWKSFile != "":
		return jwksFileKeys(c.JWKSFile, c.Algorithms)
	default:
		return pemKeys(c.PEMFiles, c.Algorithms)
	}
}

// Issuers returns the iss values of the configured issuers, sorted (for OAuth
// protected-resource metadata and agent cards).
func (a *Authenticator) Issuers() []string {
	out := make([]string, 0, len(a.issuers))
	for iss := range a.issuers {
		out = append(out, iss)
	}
	slices.Sort(out)
	return out
}

// Close stops fetching JWKS URLs. It is safe to call more than once.
func (a *Authenticator) Close() error {
	a.closeOnce.Do(func() {
		for _, r := range a.remotes {
			r.close()
		}
	})
	return nil
}

// Authenticate implements gateway.Authenticator. A bearer value shaped like a JWT is
// verified as one; another bearer value is taken as an API key when API keys are configured
// (clients of the session-RPC profile send their key as a bearer token). A credential that
// fails is never retried as anything else, and a caller presenting one is never admitted
// anonymously. A caller that presents no bearer token or API key but whose connection
// verified a client certificate is the certificate's identity (clientcert.go), never
// anonymous.
func (a *Authenticator) Authenticate(ctx context.Context, creds gateway.Credentials) (gateway.Principal, error) {
	bearer, apiKey := creds.Bearer, creds.APIKey
	if scheme, value, ok := strings.Cut(bearer, " "); ok {
		// A face passes the whole Authorization value for a scheme other than Bearer.
		if !strings.EqualFold(scheme, "ApiKey") {
			return gateway.Principal{}, refuse(ReasonUnsupportedScheme)
		}
		bearer, apiKey = "", strings.TrimSpace(value)
		switch {
		case creds.APIKey != "":
			return gateway.Principal{}, refuse(ReasonAmbiguous)
		case apiKey == "": // presented, if empty: never anonymous
			return gateway.Principal{}, refuse(ReasonMalformed)
		}
	}
	switch {
	case bearer != "" && apiKey != "":
		return gateway.Principal{}, refuse(ReasonAmbiguous)
	case bearer != "" && looksLikeJWT(bearer):
		return a.checkJWT(ctx, bearer)
	case bearer != "" && a.apiKeys == nil:
		return gateway.Principal{}, refuse(ReasonMalformed)
	case bearer != "":
		return a.admit(a.apiKeys.verify(bearer))
	case apiKey != "":
		return a.admit(a.apiKeys.verify(apiKey))
	case creds.ClientCert != nil:
		return a.admit(a.certs.admit(creds.ClientCert))
	default:
		return a.anonymous.admit(creds)
	}
}

// admit refuses a verified principal whose token (jti) or subject is revoked. It runs only
// once the credential has verified, so a forged token learns nothing about the list.
func (a *Authenticator) admit(p gateway.Principal, err error) (gateway.Principal, error) {
	if err == nil && a.revoked.Revoked(p) {
		return gateway.Principal{}, refuse(ReasonRevoked)
	}
	return p, err
}

// checkJWT verifies and admits a bearer JWT, telling Options.OnToken the outcome.
func (a *Authenticator) checkJWT(ctx context.Context, raw string) (gateway.Principal, error) {
	p, cached, err := a.verifyJWT(ctx, raw)
	p, err = a.admit(p, err)
	if a.onToken != nil {
		switch {
		case err != nil:
			a.onToken(TokenRefused)
		case cached:
			a.onToken(TokenCached)
		default:
			a.onToken(TokenVerified)
		}
	}
	return p, err
}

// verifyJWT verifies a bearer JWT with the verifier of its issuer; cached reports that the
// token cache answered. The length is checked
// before anything is decoded, and the issuer is chosen by the unverified iss only to know
// which keys to verify the signature with.
func (a *Authenticator) verifyJWT(ctx context.Context, raw string) (gateway.Principal, bool, error) {
	if len(a.issuers) == 0 {
		return gateway.Principal{}, false, refuse(ReasonNotAccepted)
	}
	if len(raw) > a.maxBytes {
		return gateway.Principal{}, false, refuse(ReasonTooLarge)
	}
	now := a.now()
	if p, ok := a.cache.get(raw, now); ok {
		return p, true, nil
	}
	t, r := parseToken(raw, a.guarded)
	if r != "" {
		return gateway.Principal{}, false, refuse(r)
	}
	iss, _ := t.claims[claimIss].(string)
	v, ok := a.issuers[iss]
	if !ok {
		return gateway.Principal{}, false, refuse(ReasonUnknownIssuer)
	}
	if len(raw) > v.maxBytes {
		return gateway.Principal{}, false, refuse(ReasonTooLarge)
	}
	p, err := v.verify(ctx, t)
	if err != nil {
		return gateway.Principal{}, false, err
	}
	p.Bearer = raw // for a passthrough hop only
	if exp, r := timeClaim(p.Claims, claimExp); r == "" {
		a.cache.put(raw, p, exp, now)
	}
	return p, false, nil
}
