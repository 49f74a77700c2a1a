#!/usr/bin/env bash
# make/console-tools.sh — installs Debian's Chromium for the operator console's browser test
# (server/console_test.go), which drives it with playwright-core (make/console.mk). Called by
# `make console-tools`. Nothing is done when a working `chromium` is on PATH; otherwise apt-get
# installs Debian's package (make/apt-install.sh). Playwright never downloads a browser: the
# test points it at this one.
set -euo pipefail

# shellcheck source=make/apt-install.sh
. "$(dirname "$0")/apt-install.sh"

apt_install_if_missing console-tools chromium chromium chromium \
	"install Debian's chromium package (apt-get install chromium) or set CONSOLE_CHROMIUM to a Chromium binary"
