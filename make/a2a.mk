# make/a2a.mk — the @a2a-js/sdk client that drives the A2A face end to end
# (server/a2a_sdk_test.go, internal/a2aclient).
#
# Included from the root Makefile, which defines TMP (= $(CURDIR)/.tmp); the ?= defaults let
# it work on its own too. The SDK is pinned, with every transitive dependency, in
# internal/a2aclient/package.json and package-lock.json, and installed by `npm ci` into
# $(A2A_CLIENT_TOOLS) (the test copies client.mjs beside it); the install is reused while its stamp, named
# after the pins' checksum, exists. It runs on the node on PATH (the SDK needs Node >= 20).

TMP ?= $(CURDIR)/.tmp
NPM ?= npm

A2A_CLIENT_PINS  := internal/a2aclient/package.json internal/a2aclient/package-lock.json
A2A_CLIENT_TOOLS := $(TMP)/a2aclient
A2A_CLIENT_STAMP := $(A2A_CLIENT_TOOLS)/.installed-$(firstword $(shell cat $(A2A_CLIENT_PINS) | cksum))

.PHONY: a2a-client-tools
a2a-client-tools: ## install the pinned @a2a-js/sdk client under .tmp/a2aclient
	@if [ -f $(A2A_CLIENT_STAMP) ]; then exit 0; fi; \
	set -e; \
	command -v $(NPM) >/dev/null || { echo "a2a-client-tools: npm is needed to install @a2a-js/sdk" >&2; exit 1; }; \
	echo "a2a-client-tools: installing the pins of internal/a2aclient/package-lock.json into $(A2A_CLIENT_TOOLS)"; \
	rm -rf $(A2A_CLIENT_TOOLS); \
	mkdir -p $(A2A_CLIENT_TOOLS); \
	cp $(A2A_CLIENT_PINS) $(A2A_CLIENT_TOOLS)/; \
	(cd $(A2A_CLIENT_TOOLS) && $(NPM) ci --no-audit --no-fund --loglevel=error --fetch-timeout=60000 --fetch-retries=2); \
	touch $(A2A_CLIENT_STAMP)
