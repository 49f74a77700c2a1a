// Package consoletest runs the operator console's browser test driver, console.mjs, in
// Debian's Chromium through playwright-core (pinned in package.json and package-lock.json
// beside this file, installed under .tmp/consoletest by make console-tools; Chromium by
// make/console-tools.sh). server/console_test.go starts the gateway and calls Run.
package consoletest
