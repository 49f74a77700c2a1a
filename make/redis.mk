# make/redis.mk — the real redis-server that internal/redistest starts on loopback for the
# tests of the Redis state backend (make/redis-tools.sh does the work). It is Debian's package;
# tests find it as $REDIS_SERVER_BIN or redis-server on PATH; under CI they fail when it is
# missing, elsewhere skip.

.PHONY: redis-tools
redis-tools: ## install redis-server (Debian) for the Redis state backend's tests
	@./make/redis-tools.sh
