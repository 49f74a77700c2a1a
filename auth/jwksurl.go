package auth

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/MicahParks/keyfunc/v3"
	"golang.org/x/time/rate"
)

// JWKS fetching limits.
const (
	// jwksTimeout bounds one fetch of a JWKS URL.
	jwksTimeout = 10 * time.Second
	// maxJWKSBytes bounds a JWKS response body.
	maxJWKSBytes = 1 << 20
)

// remoteKeys are the keys of a JWKS URL, cached by keyfunc's storage, which fetches the set
// at start and every refresh_interval in its own goroutine (stopped by close). A token with
// a key id missing from the cached set makes it fetch the set once more, at most once per
// refresh_rate_limit; meanwhile such tokens are refused at once rather than queued.
type remoteKeys struct {
	storage    jwkset.Storage
	limiter    *rate.Limiter
	refreshing sync.Mutex // held by the one caller doing an unknown-kid fetch
	configured []string
	close      context.CancelFunc
}

var _ keySource = (*remoteKeys)(nil)

// openRemoteKeys starts fetching the JWKS at u. A first fetch that fails is logged and
// retried on schedule (and on tokens with unknown key ids), so an identity provider that is
// down at start does not keep the gateway from starting.
func openRemoteKeys(ctx context.Context, u string, c IssuerConfig, log *slog.Logger) (*remoteKeys, error) {
	bg, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r := &remoteKeys{limiter: rate.NewLimiter(rate.Every(c.RefreshRateLimit), 1), configured: c.Algorithms, close: cancel}
	kf, err := keyfunc.NewDefaultOverrideCtx(bg, []string{u}, keyfunc.Override{
		Client:            jwksClient(),
		HTTPTimeout:       jwksTimeout,
		RefreshInterval:   c.RefreshInterval,
		RefreshUnknownKID: r.limiter,
		// The wait bounds the unknown-kid fetch too (the storage fetches under the same
		// context); lookup only asks when the limiter has a token, so nobody waits for it.
		RateLimitWaitMax: jwksTimeout,
		RefreshErrorHandlerFunc: func(u string) func(context.Context, error) {
			return func(ctx context.Context, err error) {
				log.WarnContext(ctx, "fetching a JWKS failed", "url", u, "err", err)
			}
		},
	})
	if err != nil {
		cancel()
		return nil, err
	}
	r.storage = kf.Storage()
	return r, nil
}

// lookup returns the cached keys with the token's kid (every cached key for a token without
// kid). For an unknown kid it fetches the set again when the rate limit allows and no other
// caller is already doing so; otherwise it refuses at once.
func (r *remoteKeys) lookup(ctx context.Context, kid string) ([]verifyKey, error) {
	all, err := r.storage.KeyReadAll(ctx)
	if err != nil {
		return nil, errUnknownKey
	}
	if keys := r.matching(all, kid); len(keys) > 0 {
		return keys, nil
	}
	if kid == "" || !r.refreshing.TryLock() {
		return nil, errUnknownKey
	}
	defer r.refreshing.Unlock()
	if r.limiter.Tokens() < 1 {
		return nil, errUnknownKey
	}
	jwk, err := r.storage.KeyRead(ctx, kid) // not cached: waits for the limiter, fetches, reads
	if err != nil {
		return nil, errUnknownKey
	}
	if keys := r.matching([]jwkset.JWK{jwk}, kid); len(keys) > 0 {
		return keys, nil
	}
	return nil, errUnknownKey
}

// matching converts the JWKs with kid (all of them for kid "") that are usable signature
// keys; unusable ones (wrong use, symmetric, too weak, no allowed algorithm) are skipped.
func (r *remoteKeys) matching(all []jwkset.JWK, kid string) []verifyKey {
	var keys []verifyKey
	for _, jwk := range all {
		if kid != "" && jwk.Marshal().KID != kid {
			continue
		}
		k, err := fromJWK(jwk, r.configured)
		if err != nil || len(k.algorithms) == 0 {
			continue
		}
		keys = append(keys, k)
	}
	return keys
}

// algorithms returns what the keys of this source may verify: everything the issuer
// allows for asymmetric keys (the set can change with every fetch).
func (r *remoteKeys) algorithms() []string {
	if len(r.configured) > 0 {
		return r.configured
	}
	var out []string
	for _, alg := range supportedAlgorithms {
		if !slices.Contains(hmacAlgorithms, alg) {
			out = append(out, alg)
		}
	}
	return out
}

// jwksClient is the HTTP client JWKS fetches use: bounded in time and size, not following
// redirects (a key set is fetched from exactly the URL configured), and keeping no idle
// connection between fetches minutes apart.
func jwksClient() *http.Client {
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.DisableKeepAlives = true
	return &http.Client{
		Timeout:   jwksTimeout,
		Transport: limitedTransport{base: base, limit: maxJWKSBytes},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// limitedTransport caps the size of response bodies.
type limitedTransport struct {
	base  http.RoundTripper
	limit int64
}

// RoundTrip implements http.RoundTripper.
func (t limitedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &limitedBody{ReadCloser: resp.Body, left: t.limit}
	return resp, nil
}

// limitedBody fails a read that would go past its limit (rather than truncating, which
// could turn a large key set into a smaller valid one).
type limitedBody struct {
	io.ReadCloser
	left int64
}

var errJWKSTooLarge = errors.New("JWKS response larger than 1 MiB")

func (b *limitedBody) Read(p []byte) (int, error) {
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	if int64(n) > b.left {
		return 0, errJWKSTooLarge
	}
	b.left -= int64(n)
	return n, err
}
