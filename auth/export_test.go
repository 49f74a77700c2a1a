package auth

// CacheHits returns how many calls a's token cache answered, for tests.
func CacheHits(a *Authenticator) int64 {
	if a.cache == nil {
		return 0
	}
	return a.cache.hits.Load()
}

// CacheLen returns how many tokens a's cache holds, for tests.
func CacheLen(a *Authenticator) int {
	if a.cache == nil {
		return 0
	}
	a.cache.mu.RLock()
	defer a.cache.mu.RUnlock()
	return len(a.cache.entries)
}
