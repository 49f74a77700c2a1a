# MCP servers from the npm registry, for the routing/mcpbackend tests and benchmarks.
# Pinned; installed under .tmp/npm (git-ignored). npm's cache speeds this up but is never
# required. Tests find the servers in .tmp/npm/node_modules/.bin (or $MCP_SERVERS_BIN);
# under CI they fail when the servers are missing, elsewhere they skip.

NPM ?= npm
MCP_NPM_DIR := $(TMP)/npm
MCP_SERVERS := \
	@modelcontextprotocol/server-everything@2026.8.31 \
	@modelcontextprotocol/server-filesystem@2026.8.31 \
	@modelcontextprotocol/server-memory@2026.8.31
MCP_SERVERS_STAMP := $(MCP_NPM_DIR)/.installed-$(shell echo '$(MCP_SERVERS)' | cksum | cut -d' ' -f1)

.PHONY: mcp-servers
mcp-servers: $(MCP_SERVERS_STAMP) ## install the pinned npm MCP servers the tests run against into .tmp/npm

$(MCP_SERVERS_STAMP):
	@mkdir -p $(MCP_NPM_DIR)
	$(NPM) install --prefix $(MCP_NPM_DIR) --no-audit --no-fund --no-save --prefer-offline $(MCP_SERVERS)
	@rm -f $(MCP_NPM_DIR)/.installed-*
	@touch $@
