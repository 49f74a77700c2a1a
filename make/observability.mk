# make/observability.mk — the real Jaeger v2 and Prometheus that internal/otelstack starts on
# loopback for the observability tests (make/observability-tools.sh does the work). Jaeger is
# built from its Go module and cached as $(TOOLS)/jaeger-$(JAEGER_VERSION), with $(TOOLS)/jaeger
# pointing at it; Prometheus is Debian's package. Tests find them as $JAEGER_BIN or .tmp/bin/jaeger
# and $PROMETHEUS_BIN or prometheus on PATH; under CI they fail when one is missing, elsewhere skip.

GO    ?= go
TMP   ?= $(CURDIR)/.tmp
TOOLS ?= $(TMP)/bin

# Jaeger v2.13.0 is tagged v1.76.0 in the Go module (the proxy refuses the v2.* tags).
JAEGER_MODULE_VERSION := v1.76.0
JAEGER_VERSION        := v2.13.0

.PHONY: observability-tools
observability-tools: ## build Jaeger v2 into .tmp/bin (cached) and install Prometheus (Debian) for the observability tests
	@GO=$(GO) TOOLS=$(TOOLS) JAEGER_MODULE_VERSION=$(JAEGER_MODULE_VERSION) JAEGER_VERSION=$(JAEGER_VERSION) ./make/observability-tools.sh
