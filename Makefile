# Gatehouse — build, run, test, lint, bench.
# Tools are pinned and installed under .tmp/bin (git-ignored); nothing depends on them being cached.

GO        ?= go
BIN       := bin/gatehouse
TMP       := $(CURDIR)/.tmp
TOOLS     := $(TMP)/bin
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
FUZZTIME  ?= 10s
BENCHTIME ?= 1s
BENCHCOUNT ?= 5

GOLANGCI_LINT_VERSION := v2.15.0
GOLANGCI_LINT := $(TOOLS)/golangci-lint-$(GOLANGCI_LINT_VERSION)

export GOTOOLCHAIN := local

include make/proto.mk
include make/mcp.mk
include make/conformance.mk
include make/mcpmatrix.mk
include make/a2a.mk
include make/clients.mk
include make/console.mk
include make/observability.mk
include make/redis.mk
include make/s3.mk
include make/helm.mk
include make/soak.mk
include make/gate.mk
include make/fuzz.mk

.DEFAULT_GOAL := help

.PHONY: help
help: ## show this list
	@awk 'BEGIN {FS = ":.*## "} /^[a-z][a-z-]*:.*## / {printf "  %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## build bin/gatehouse
	$(GO) build -trimpath -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/gatehouse

.PHONY: run
run: build ## build and serve configs/gatehouse.yaml (boundary 127.0.0.1:8080, admin 127.0.0.1:9901, /debug/pprof/ and the console at /console on)
	./$(BIN) serve --config configs/gatehouse.yaml --pprof --console

.PHONY: test
test: ## install test peers, vet, lint, check the Helm chart, the whole suite with -race, the gate, a TEST_SOAK soak and a bounded fuzz pass (FUZZTIME per target)
	$(MAKE) --no-print-directory mcp-servers conformance-tools mcpmatrix-tools a2a-client-tools clients-tools console-tools observability-tools redis-tools blob-tools helm
	$(GO) mod verify
	$(GO) vet ./...
	$(MAKE) --no-print-directory proto-check
	$(MAKE) --no-print-directory lint
	$(MAKE) --no-print-directory helm-check
	CONFORMANCE_REQUIRED=1 $(GO) test -race -count=1 -timeout 20m ./...
	@# allocation budgets are counted without the race detector, which changes them
	$(GO) test -count=1 -run '^TestStageAllocBudgets$$' ./server/
	@# bench/peers is its own module: keep it building (and its go.sum in step) with the product
	cd bench/peers && $(GO) vet ./... && $(GO) test -race -count=1 ./...
	$(MAKE) --no-print-directory gate
	$(MAKE) --no-print-directory soak DURATION=$(TEST_SOAK)
	$(MAKE) --no-print-directory fuzz

.PHONY: lint
lint: $(GOLANGCI_LINT) ## golangci-lint (v2, default: all, see .golangci.yml)
	$(GOLANGCI_LINT) run ./...

$(GOLANGCI_LINT):
	@mkdir -p $(TOOLS)
	GOBIN=$(TOOLS) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv $(TOOLS)/golangci-lint $@

.PHONY: bench
bench: ## run the benchmark suite and write docs/benchmarks.md
	@mkdir -p $(TMP)
	@# BENCHCOUNT rounds of the whole suite, each benchmark once per round: the two sides of every
	@# ratio are measured close together in time, so changing machine load cannot favour one side.
	@: > $(TMP)/bench.txt
	@set -e; for i in $$(seq $(BENCHCOUNT)); do \
	  echo "round $$i of $(BENCHCOUNT)"; \
	  $(GO) test -run='^$$' -bench=. -benchmem -benchtime=$(BENCHTIME) -count=1 ./... | tee -a $(TMP)/bench.txt; \
	done
	$(GO) run ./internal/benchreport -in $(TMP)/bench.txt -out docs/benchmarks.md

# bench/peers is its own Go module (grpc-gateway and mcp-go stay out of the product's go.mod);
# `go test ./...` here does not descend into it. ToolHive vMCP is built from the module proxy and
# cached in .tmp/bin; when it does not build, the run goes on without it and the page says so.
TOOLHIVE_VERSION := v0.47.0
VMCP             := $(TOOLS)/vmcp-$(TOOLHIVE_VERSION)
PEERS_FLAGS      ?=

.PHONY: bench-peers
bench-peers: ## run Gatehouse beside grpc-gateway and ToolHive vMCP, write docs/benchmarks-peers.md (flags: PEERS_FLAGS)
	@mkdir -p $(TOOLS) $(TMP)/peers
	$(GO) build -trimpath -o $(TOOLS)/gatehouse-bench ./cmd/gatehouse
	cd bench/peers && $(GO) build -trimpath -o $(TOOLS)/peers ./cmd/peers
	-@GO=$(GO) TOOLHIVE_VERSION=$(TOOLHIVE_VERSION) BIN=$(VMCP) ./bench/peers/build-vmcp.sh
	$(TOOLS)/peers run -gatehouse $(TOOLS)/gatehouse-bench -vmcp $(VMCP) -vmcp-version $(TOOLHIVE_VERSION) \
	  -tmp $(TMP)/peers -json $(TMP)/peers/results.json -out docs/benchmarks-peers.md -img docs/img $(PEERS_FLAGS)

.PHONY: clean
clean: ## remove build output (keeps the tool cache)
	rm -rf bin
