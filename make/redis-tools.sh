#!/usr/bin/env bash
# make/redis-tools.sh — installs the real redis-server that the Redis state backend's tests
# (internal/redistest) run on loopback. Called by `make redis-tools`.
#
# Debian's redis-server package, installed with apt-get when no working `redis-server` is on
# PATH (make/apt-install.sh). The service the package starts is stopped and disabled: the tests
# run their own instances on free loopback ports, and nothing should listen on 6379 for nothing.
set -euo pipefail

# shellcheck source=make/apt-install.sh
. "$(dirname "$0")/apt-install.sh"

apt_install_if_missing redis-tools redis-server redis-server redis-server \
	"install Redis and put redis-server on PATH (or set REDIS_SERVER_BIN)"
