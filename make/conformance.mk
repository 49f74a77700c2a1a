# make/conformance.mk — the official MCP conformance suite (@modelcontextprotocol/conformance,
# `conformance server --url …`) against an MCP endpoint: by default the demo MCP fixture
# (demo.MCP), served by the harness itself on 127.0.0.1 and stopped when the run ends.
#
# Included from the root Makefile, which defines GO, TMP (= $(CURDIR)/.tmp) and TOOLS; the ?=
# defaults below let it work on its own too (`make -f make/conformance.mk conformance`).
#
# The suite and node@22 (its newest releases need Node >= 22) are pinned, with every transitive
# dependency, in internal/conformance/package.json and package-lock.json, and installed by
# `npm ci` into $(CONFORMANCE_TOOLS). The install is reused only if its stamp, named after the
# pins' checksum, exists and the harness finds the pinned node and suite versions in it; else
# it is wiped and redone. The harness checks the versions again before every run.
#
#   make conformance                                          the fixture
#   make conformance CONFORMANCE_URL=http://127.0.0.1:8080/mcp    another endpoint (e.g. the gateway)
#   make conformance CONFORMANCE_FLAGS='-scenario tools-call-sampling -v'

GO  ?= go
TMP ?= $(CURDIR)/.tmp
NPM ?= npm

CONFORMANCE_PINS    := internal/conformance/package.json internal/conformance/package-lock.json
CONFORMANCE_TOOLS   := $(TMP)/conformance
CONFORMANCE_STAMP   := $(CONFORMANCE_TOOLS)/.installed-$(firstword $(shell cat $(CONFORMANCE_PINS) | cksum))
CONFORMANCE_URL     ?=
CONFORMANCE_TIMEOUT ?= 5m
CONFORMANCE_FLAGS   ?=
CONFORMANCE_RUN     := $(GO) run ./internal/conformance/cmd/conformance -tools $(CONFORMANCE_TOOLS)

.PHONY: conformance-tools
conformance-tools: ## install the pinned MCP conformance suite and node@22 under .tmp/conformance
	@if [ -f $(CONFORMANCE_STAMP) ] && $(CONFORMANCE_RUN) -check; then exit 0; fi; \
	set -e; \
	command -v $(NPM) >/dev/null || { echo "conformance-tools: npm is needed to install node@22 and the suite" >&2; exit 1; }; \
	echo "conformance-tools: installing the pins of internal/conformance/package-lock.json into $(CONFORMANCE_TOOLS)"; \
	rm -rf $(CONFORMANCE_TOOLS); \
	mkdir -p $(CONFORMANCE_TOOLS); \
	cp $(CONFORMANCE_PINS) $(CONFORMANCE_TOOLS)/; \
	(cd $(CONFORMANCE_TOOLS) && $(NPM) ci --no-audit --no-fund --loglevel=error --fetch-timeout=60000 --fetch-retries=2); \
	$(CONFORMANCE_RUN) -check; \
	touch $(CONFORMANCE_STAMP)

.PHONY: conformance
conformance: conformance-tools ## run the MCP conformance suite against CONFORMANCE_URL (default: the demo MCP fixture (demo.MCP) on 127.0.0.1)
	$(CONFORMANCE_RUN) -timeout $(CONFORMANCE_TIMEOUT) $(if $(CONFORMANCE_URL),-url $(CONFORMANCE_URL)) $(CONFORMANCE_FLAGS)
