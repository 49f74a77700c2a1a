# make/soak.mk — the soak with its chaos schedule (internal/soak, docs/reliability.md#soak-and-chaos):
# Redis, a gRPC backend, three replicas sharing Redis, their MCP children and an agent as real
# processes on 127.0.0.1; mixed traffic at SOAK_LOAD of the measured capacity across every face
# for DURATION while the schedule kills and restarts them; fails on any unexpected or hung call
# or resources not flat after warm-up. The logs, the configuration and report.md go to .tmp/soak.
# SOAK_DOCS=1 also writes the plots docs/img/soak-rss.svg and docs/img/soak-goroutines.svg.

DURATION  ?= 3m
SOAK_LOAD ?= 0.7
# TEST_SOAK is the soak's length in make test.
TEST_SOAK ?= 5m

.PHONY: soak
soak: build redis-tools ## soak DURATION (default 3m) at 70% of capacity with the chaos schedule; SOAK_DOCS=1 writes the plots
	$(GO) run ./internal/soak/cmd/soak -duration $(DURATION) -load $(SOAK_LOAD) -bin $(BIN) -dir $(TMP)/soak
