# make/clients.mk — the npm packages of the TypeScript example client (examples/clients/typescript:
# json-rpc-2.0, and typescript with @types/node to compile it), which cmd/gatehouse's
# examples_process_test.go runs against a gateway beside the Python and Go clients.
#
# Included from the root Makefile, which defines TMP (= $(CURDIR)/.tmp); the ?= defaults let it
# work on its own too. The packages are pinned, with every transitive dependency, in
# examples/clients/typescript/package.json and package-lock.json, and installed by `npm ci` into
# $(CLIENTS_TS_TOOLS) (the test compiles client.ts beside a link to its node_modules); the
# install is reused while its stamp, named after the pins' checksum, exists. It runs on the node
# on PATH (Node >= 20: fetch and web streams).

TMP ?= $(CURDIR)/.tmp
NPM ?= npm

CLIENTS_TS_PINS  := examples/clients/typescript/package.json examples/clients/typescript/package-lock.json
CLIENTS_TS_TOOLS := $(TMP)/clients-ts
CLIENTS_TS_STAMP := $(CLIENTS_TS_TOOLS)/.installed-$(firstword $(shell cat $(CLIENTS_TS_PINS) | cksum))

.PHONY: clients-tools
clients-tools: ## install the pinned npm packages of the TypeScript example client under .tmp/clients-ts
	@if [ -f $(CLIENTS_TS_STAMP) ]; then exit 0; fi; \
	set -e; \
	command -v $(NPM) >/dev/null || { echo "clients-tools: npm is needed for the TypeScript example client" >&2; exit 1; }; \
	echo "clients-tools: installing the pins of examples/clients/typescript/package-lock.json into $(CLIENTS_TS_TOOLS)"; \
	rm -rf $(CLIENTS_TS_TOOLS); \
	mkdir -p $(CLIENTS_TS_TOOLS); \
	cp $(CLIENTS_TS_PINS) $(CLIENTS_TS_TOOLS)/; \
	(cd $(CLIENTS_TS_TOOLS) && $(NPM) ci --no-audit --no-fund --loglevel=error --fetch-timeout=60000 --fetch-retries=2); \
	touch $(CLIENTS_TS_STAMP)
