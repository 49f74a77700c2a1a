#!/usr/bin/env bash
# bench/peers/build-vmcp.sh — builds ToolHive's Virtual MCP Server (./cmd/vmcp of module
# github.com/stacklok/toolhive) from the Go module proxy into $BIN, for `make bench-peers`.
# Called with:
#   GO                the go command
#   TOOLHIVE_VERSION  the module version (v0.47.0)
#   BIN               where the binary goes ($TOOLS/vmcp-$TOOLHIVE_VERSION); kept as a cache
#
# The module is downloaded outside any module (so no go.mod of ours is consulted or touched),
# copied somewhere writable and built there with its own go.mod and go.sum. A build with cold Go
# caches takes 10 to 20 minutes on 2 cores (Kubernetes client libraries, cloud SDKs).
set -euo pipefail
: "${GO:=go}" "${TOOLHIVE_VERSION:?}" "${BIN:?}"
MODULE=github.com/stacklok/toolhive
if [ -x "$BIN" ]; then
	echo "bench-peers: ToolHive vMCP $TOOLHIVE_VERSION is cached at $BIN"
	exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "bench-peers: building ToolHive vMCP from $MODULE@$TOOLHIVE_VERSION into $BIN"
json=$(cd "$work" && GOWORK=off GOFLAGS= "$GO" mod download -json "$MODULE@$TOOLHIVE_VERSION") || {
	echo "bench-peers: downloading $MODULE@$TOOLHIVE_VERSION failed:" >&2
	echo "$json" >&2
	exit 1
}
dir=$(printf '%s\n' "$json" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
if [ -z "$dir" ] || [ ! -d "$dir" ]; then
	echo "bench-peers: no module directory in: $json" >&2
	exit 1
fi
cp -R "$dir" "$work/src"
chmod -R u+w "$work/src"
mkdir -p "$(dirname "$BIN")"
start=$SECONDS
(cd "$work/src" && GOWORK=off GOFLAGS="-mod=mod -buildvcs=false" GOTOOLCHAIN=local "$GO" build -trimpath \
	-o "$BIN.partial" ./cmd/vmcp)
mv "$BIN.partial" "$BIN"
echo "bench-peers: built $BIN in $((SECONDS - start)) s"
