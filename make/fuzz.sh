#!/usr/bin/env bash
# Runs the fuzz targets of the module for FUZZTIME each (default 10s). `make fuzz` (run by
# `make test`) and `make fuzz-long` (make/fuzz.mk) call it.
#
#   FUZZTIME=10s        -fuzztime of each target
#   FUZZ_TARGETS=regex  only the targets whose PACKAGE.TARGET matches (extended regex; PACKAGE
#                       relative to the module, e.g. codecs/jsonrpc.FuzzDecode); empty = all
#   FUZZ_KEEP_GOING=1   run every target and list every failing one at the end (exit 1 if
#                       any failed), instead of stopping at the first
#   FUZZ_PARALLEL=n     -parallel (fuzzing workers) of each target; empty = GOMAXPROCS
#   FUZZ_TIMEOUT=d      -timeout of each run (e.g. 0 for none); empty = go test's default
#
# A failure that is a finding writes its input to PACKAGE/testdata/fuzz/TARGET/HASH: the script
# names the file. Fix the bug, then commit that file: every plain `go test` replays it as a
# regression case from then on (internal/fuzzseed's TestNoOrphanedCrashers checks that each
# such directory still names a target).
#
# Go 1.26's fuzz coordinator can fail a target with a bare "context deadline exceeded" when
# -fuzztime expires while a worker is mid-execution on a loaded machine (golang/go#75804,
# fixed in Go 1.27). That is not a finding: a real one always writes its input to
# testdata/fuzz and says "Failing input written to". Such a run is retried, at most twice;
# anything else that fails, fails the build.
set -euo pipefail
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-10s}
FUZZ_TARGETS=${FUZZ_TARGETS:-}
FUZZ_KEEP_GOING=${FUZZ_KEEP_GOING:-}
FUZZ_PARALLEL=${FUZZ_PARALLEL:-}
FUZZ_TIMEOUT=${FUZZ_TIMEOUT:-}
log=$(mktemp)
trap 'rm -f "$log"' EXIT

module=$($GO list -m)
flags=()
[ -n "$FUZZ_PARALLEL" ] && flags+=(-parallel="$FUZZ_PARALLEL")
[ -n "$FUZZ_TIMEOUT" ] && flags+=(-timeout="$FUZZ_TIMEOUT")

failed=()
ran=0
start=$SECONDS
# The targets are read from the test files' declarations (func FuzzX(f *testing.F)), which is
# what `go test -list` reports without building every test binary first.
while read -r pkg dir; do
  rel=${pkg#"$module"}
  rel=${rel#/}
  for f in $(cat "$dir"/*_test.go 2>/dev/null | sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(f \*testing\.F).*/\1/p' || true); do
    if [ -n "$FUZZ_TARGETS" ] && ! grep -Eq -- "$FUZZ_TARGETS" <<<"$rel.$f"; then
      continue
    fi
    ran=$((ran + 1))
    for attempt in 1 2 3; do
      echo "fuzz $pkg $f ($FUZZTIME)"
      if $GO test -run='^$' -fuzz="^$f\$" -fuzztime="$FUZZTIME" ${flags[@]+"${flags[@]}"} "$pkg" >"$log" 2>&1; then
        cat "$log"
        break
      fi
      cat "$log"
      if grep -q 'context deadline exceeded' "$log" && ! grep -q 'Failing input written to' "$log" && [ "$attempt" -lt 3 ]; then
        echo "fuzz $pkg $f: the fuzz-time boundary race of Go 1.26 (golang/go#75804), no input found; running it again"
        continue
      fi
      found=$(sed -n 's/.*Failing input written to \(testdata\/fuzz\/[^ ]*\).*/\1/p' "$log" | head -1)
      if [ -n "$found" ]; then
        echo "fuzz $pkg $f: FOUND A FAILING INPUT, written to ${rel:-.}/$found"
        echo "  reproduce: $GO test -run='^$f/$(basename "$found")\$' ./${rel}"
        echo "  fix the bug, then commit ${rel:-.}/$found: every go test replays it as a regression case"
        failed+=("$rel.$f: ${rel:-.}/$found")
      else
        failed+=("$rel.$f: failed without an input (see its log above)")
      fi
      if [ -z "$FUZZ_KEEP_GOING" ]; then
        exit 1
      fi
      break
    done
  done
done < <($GO list -f '{{.ImportPath}} {{.Dir}}' ./...)

if [ "$ran" -eq 0 ]; then
  echo "fuzz: no target matches FUZZ_TARGETS=$FUZZ_TARGETS" >&2
  exit 1
fi
echo "fuzz: $ran targets, $FUZZTIME each, in $((SECONDS - start)) s; ${#failed[@]} failed"
if [ "${#failed[@]}" -gt 0 ]; then
  printf '  %s\n' "${failed[@]}"
  exit 1
fi
