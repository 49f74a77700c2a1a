# make/mcpmatrix.mk — the Node peers of the MCP version matrix test (internal/mcpmatrix): the
# TypeScript MCP SDKs as clients and servers (@modelcontextprotocol/sdk for 2025-11-25,
# @modelcontextprotocol/client and /server v2 for 2026-07-28) and node@22 to run them.
#
# Included from the root Makefile, which defines TMP (= $(CURDIR)/.tmp); the ?= defaults below
# let it work on its own too (`make -f make/mcpmatrix.mk mcpmatrix-tools`).
#
# Pinned, with every transitive dependency, in internal/mcpmatrix/package.json and
# package-lock.json, and installed by `npm ci` into $(MCPMATRIX_TOOLS). The install is reused
# only if its stamp, named after the pins' checksum, exists; else it is wiped and redone. The
# test checks every pinned version again before it runs (and skips without the peers unless
# CONFORMANCE_REQUIRED is set, as `make test` sets it).
#
#   make mcpmatrix-tools     install the peers
#   make mcpmatrix           run the matrix test alone (-v: the table of cells)

GO  ?= go
TMP ?= $(CURDIR)/.tmp
NPM ?= npm

MCPMATRIX_PINS  := internal/mcpmatrix/package.json internal/mcpmatrix/package-lock.json
MCPMATRIX_TOOLS := $(TMP)/mcpmatrix
MCPMATRIX_STAMP := $(MCPMATRIX_TOOLS)/.installed-$(firstword $(shell cat $(MCPMATRIX_PINS) | cksum))

.PHONY: mcpmatrix-tools
mcpmatrix-tools: $(MCPMATRIX_STAMP) ## install the pinned Node MCP SDK peers of the version matrix test under .tmp/mcpmatrix

$(MCPMATRIX_STAMP):
	@set -e; \
	command -v $(NPM) >/dev/null || { echo "mcpmatrix-tools: npm is needed to install node@22 and the TypeScript SDKs" >&2; exit 1; }; \
	echo "mcpmatrix-tools: installing the pins of internal/mcpmatrix/package-lock.json into $(MCPMATRIX_TOOLS)"; \
	rm -rf $(MCPMATRIX_TOOLS); \
	mkdir -p $(MCPMATRIX_TOOLS); \
	cp $(MCPMATRIX_PINS) $(MCPMATRIX_TOOLS)/; \
	(cd $(MCPMATRIX_TOOLS) && $(NPM) ci --no-audit --no-fund --loglevel=error --fetch-timeout=60000 --fetch-retries=2); \
	touch $@

.PHONY: mcpmatrix
mcpmatrix: mcpmatrix-tools ## run the MCP version matrix test (every SDK client × every SDK server, through two replicas on Redis)
	CONFORMANCE_REQUIRED=1 $(GO) test -count=1 -v -run '^TestVersionMatrix$$' ./internal/mcpmatrix/
