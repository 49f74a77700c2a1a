# make/console.mk — what the operator console's browser test (server/console_test.go) needs:
# Debian's Chromium (make/console-tools.sh; skipped when a working `chromium` is on PATH) and
# playwright-core from npm, which drives it.
#
# Included from the root Makefile, which defines TMP (= $(CURDIR)/.tmp); the ?= defaults let
# it work on its own too. playwright-core is pinned in internal/consoletest/package.json and
# package-lock.json and installed by `npm ci` into $(CONSOLE_TOOLS) (the test runs
# console.mjs beside it); the install is reused while its stamp, named after the pins'
# checksum, exists. PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD keeps npm from fetching a browser: the
# test launches /usr/bin/chromium.

TMP ?= $(CURDIR)/.tmp
NPM ?= npm

CONSOLE_PINS  := internal/consoletest/package.json internal/consoletest/package-lock.json
CONSOLE_TOOLS := $(TMP)/consoletest
CONSOLE_STAMP := $(CONSOLE_TOOLS)/.installed-$(firstword $(shell cat $(CONSOLE_PINS) | cksum))

.PHONY: console-tools
console-tools: ## install Debian's chromium and the pinned playwright-core under .tmp/consoletest
	@bash make/console-tools.sh
	@if [ -f $(CONSOLE_STAMP) ]; then exit 0; fi; \
	set -e; \
	command -v $(NPM) >/dev/null || { echo "console-tools: npm is needed to install playwright-core" >&2; exit 1; }; \
	echo "console-tools: installing the pins of internal/consoletest/package-lock.json into $(CONSOLE_TOOLS)"; \
	rm -rf $(CONSOLE_TOOLS); \
	mkdir -p $(CONSOLE_TOOLS); \
	cp $(CONSOLE_PINS) $(CONSOLE_TOOLS)/; \
	(cd $(CONSOLE_TOOLS) && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 $(NPM) ci --no-audit --no-fund --ignore-scripts --loglevel=error --fetch-timeout=60000 --fetch-retries=2); \
	touch $(CONSOLE_STAMP)
