# make/helm.mk — Helm for the chart in deploy/helm/gatehouse. Helm is built from its Go module
# and cached as $(TOOLS)/helm-$(HELM_VERSION), with $(TOOLS)/helm pointing at it; the tests of
# deploy/helm find it as $HELM_BIN or .tmp/bin/helm (or helm on PATH) and, under CI, fail when
# it is missing. A build with cold Go caches took 8.5 minutes on a busy 2-core machine (module
# download included); with warm caches, 20 s.

GO    ?= go
TMP   ?= $(CURDIR)/.tmp
TOOLS ?= $(TMP)/bin

HELM_VERSION := v3.22.0
HELM         := $(TOOLS)/helm-$(HELM_VERSION)
HELM_CHART   := deploy/helm/gatehouse
# Render for the chart's minimum Kubernetes (Chart.yaml kubeVersion): without a cluster, a helm
# built with go install assumes v1.20, which the chart refuses. deploy/helm/helm_test.go agrees.
HELM_KUBE_VERSION := 1.30.0
# The values files the chart must lint and render with, beside its defaults; the files under
# deploy/helm/testdata/invalid must be refused, which the tests of deploy/helm check.
HELM_VALUES  := $(sort $(wildcard deploy/helm/testdata/*.values.yaml))

.PHONY: helm
helm: $(HELM) ## build Helm into .tmp/bin (cached) and point .tmp/bin/helm at it
	@ln -sfn $(notdir $(HELM)) $(TOOLS)/helm

# Built in a scratch GOBIN, so that the binary go install writes never lands on the
# .tmp/bin/helm link; outside any workspace and with no GOFLAGS, so our go.mod plays no part.
$(HELM):
	@mkdir -p $(TOOLS)
	@rm -rf $(TMP)/helm-build
	GOWORK=off GOFLAGS= GOBIN=$(TMP)/helm-build $(GO) install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)
	mv $(TMP)/helm-build/helm $@
	@rm -rf $(TMP)/helm-build

.PHONY: helm-check
helm-check: helm ## helm lint --strict and helm template the chart, with its defaults and every deploy/helm/testdata values file
	$(TOOLS)/helm lint --strict --kube-version $(HELM_KUBE_VERSION) $(HELM_CHART)
	$(TOOLS)/helm template gatehouse $(HELM_CHART) --kube-version $(HELM_KUBE_VERSION) >/dev/null
	@set -e; for f in $(HELM_VALUES); do \
	  echo "helm-check: $$f"; \
	  $(TOOLS)/helm lint --strict --kube-version $(HELM_KUBE_VERSION) $(HELM_CHART) -f $$f; \
	  $(TOOLS)/helm template gatehouse $(HELM_CHART) --kube-version $(HELM_KUBE_VERSION) -f $$f >/dev/null; \
	done
