# make/gate.mk — the quality gate of spec §4.10.5–§4.10.6 (internal/gate): the seven
# integration scenarios end to end against an in-process gateway with real peers (gRPC
# calculators, the demo MCP server, the reference agent, Jaeger from observability-tools),
# each GATE_RUNS times; it prints pass rate, critical failures and p50/p99 against each
# scenario's SLO per scenario, and fails unless pass rate ≥ 0.998, no critical failure and
# every p99 within its SLO. GATE_FLAGS: -pass-rate, -max-critical, -slo-factor, -scenario, -v.

GO         ?= go
GATE_RUNS  ?= 10
GATE_FLAGS ?=

.PHONY: gate
gate: observability-tools ## run the quality gate: the seven §4.10.5 scenarios GATE_RUNS times each (flags: GATE_FLAGS)
	$(GO) run ./internal/gate/cmd/gate -runs $(GATE_RUNS) $(GATE_FLAGS)
