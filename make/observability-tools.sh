#!/usr/bin/env bash
# make/observability-tools.sh — installs the real Jaeger v2 and Prometheus that the observability
# tests (internal/otelstack) run on loopback. Called by `make observability-tools` with:
#   GO                     the go command
#   TOOLS                  the tool directory (.tmp/bin)
#   JAEGER_MODULE_VERSION  the version of module github.com/jaegertracing/jaeger to build (v1.76.0)
#   JAEGER_VERSION         the Jaeger v2 release that module version is (v2.13.0)
#
# Jaeger: its v2 binary is ./cmd/jaeger of the same Go module as v1 (the release is tagged both
# v1.76.0 and v2.13.0; the module proxy serves only the v1 tags). `go install …@version` refuses the
# module's replace directives, so the module is downloaded, copied somewhere writable and built
# there with its own go.mod, never ours. The binary is cached as $TOOLS/jaeger-$JAEGER_VERSION and
# $TOOLS/jaeger points at it; a build with cold Go caches takes 8 to 15 minutes on 2 cores.
#
# Prometheus: Debian's package, installed with apt-get when no working `prometheus` is on PATH
# (make/apt-install.sh). A service the package starts is stopped and disabled: the tests run their
# own instances.
set -euo pipefail

# shellcheck source=make/apt-install.sh
. "$(dirname "$0")/apt-install.sh"

: "${GO:=go}" "${TOOLS:?}" "${JAEGER_MODULE_VERSION:?}" "${JAEGER_VERSION:?}"
JAEGER_MODULE=github.com/jaegertracing/jaeger
work= # the build's scratch directory, removed on exit
trap 'if [ -n "$work" ]; then rm -rf "$work"; fi' EXIT

install_jaeger() {
	local bin="$TOOLS/jaeger-$JAEGER_VERSION"
	mkdir -p "$TOOLS"
	if [ -x "$bin" ]; then
		echo "observability-tools: Jaeger $JAEGER_VERSION is cached at $bin"
		ln -sfn "$(basename "$bin")" "$TOOLS/jaeger"
		return
	fi
	echo "observability-tools: building Jaeger $JAEGER_VERSION from $JAEGER_MODULE@$JAEGER_MODULE_VERSION into $bin (8 to 15 minutes on 2 cores with cold Go caches)"
	work=$(mktemp -d)
	local json dir
	# Outside any module, so that our go.mod and go.sum are not consulted or touched.
	json=$(cd "$work" && GOWORK=off GOFLAGS= "$GO" mod download -json "$JAEGER_MODULE@$JAEGER_MODULE_VERSION") || {
		echo "observability-tools: downloading $JAEGER_MODULE@$JAEGER_MODULE_VERSION failed:" >&2
		echo "$json" >&2
		exit 1
	}
	dir=$(printf '%s\n' "$json" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
	if [ -z "$dir" ] || [ ! -d "$dir" ]; then
		echo "observability-tools: no module directory in: $json" >&2
		exit 1
	fi
	cp -R "$dir" "$work/src"
	chmod -R u+w "$work/src"
	local start=$SECONDS
	(cd "$work/src" && GOWORK=off GOFLAGS="-mod=mod -buildvcs=false" GOTOOLCHAIN=local "$GO" build -trimpath \
		-ldflags "-s -w -X $JAEGER_MODULE/internal/version.latestVersion=$JAEGER_VERSION" \
		-o "$bin.partial" ./cmd/jaeger)
	mv "$bin.partial" "$bin"
	ln -sfn "$(basename "$bin")" "$TOOLS/jaeger"
	echo "observability-tools: built $bin in $((SECONDS - start)) s"
}

install_prometheus() {
	# The packaged service listens on every interface.
	apt_install_if_missing observability-tools prometheus prometheus prometheus \
		"install Prometheus and put it on PATH (or set PROMETHEUS_BIN)"
}

install_jaeger
install_prometheus
