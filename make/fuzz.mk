# make/fuzz.mk — the fuzz targets (docs/reliability.md, "Level 1"). Included from the root
# Makefile, which defines GO, FUZZTIME (10s) and CURDIR; make/fuzz.sh runs the targets.
#
#   make fuzz                         every target for FUZZTIME (10s; run by make test), stop at the first failure
#   make fuzz FUZZTIME=3s             shorter or longer
#   make fuzz-long                    nightly: every target for FUZZ_LONG_TIME (10m), -parallel = the machine's
#                                     CPUs, every real-traffic seed (FUZZSEED_MAX=0), every failing target listed at the end
#   make fuzz-long FUZZ_TARGETS='codecs/.*' FUZZ_LONG_TIME=30m
#   make fuzz-corpus                  record the npm MCP servers' and the conformance suite's frames again
#                                     (internal/fuzzseed/testdata/recorded), the seeds of every target

FUZZ_LONG_TIME ?= 10m
FUZZ_TARGETS   ?=
FUZZ_PARALLEL  ?= $(shell nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)

.PHONY: fuzz
fuzz: ## run every fuzz target for FUZZTIME (FUZZ_TARGETS=regex to choose)
	@GO=$(GO) FUZZTIME=$(FUZZTIME) FUZZ_TARGETS='$(FUZZ_TARGETS)' ./make/fuzz.sh

.PHONY: fuzz-long
fuzz-long: ## nightly fuzzing: every target (or FUZZ_TARGETS=regex) for FUZZ_LONG_TIME (10m), all failures listed at the end
	@GO=$(GO) FUZZTIME=$(FUZZ_LONG_TIME) FUZZ_TARGETS='$(FUZZ_TARGETS)' FUZZ_KEEP_GOING=1 \
	  FUZZ_PARALLEL=$(FUZZ_PARALLEL) FUZZ_TIMEOUT=0 FUZZSEED_MAX=0 ./make/fuzz.sh

.PHONY: fuzz-corpus
fuzz-corpus: mcp-servers conformance-tools ## record the real peers' frames the fuzz targets are seeded with (internal/fuzzseed/testdata/recorded)
	$(GO) run ./internal/fuzzseed/record -tmp $(TMP)
