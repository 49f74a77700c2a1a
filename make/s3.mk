# make/s3.mk — the S3-compatible server that the blob store's tests (state/blob) run on
# loopback: gofakes3, built from its Go module (its cmd/gofakes3 server) and cached as
# $(TOOLS)/gofakes3-$(GOFAKES3_VERSION). Tests find it there or as $GOFAKES3_BIN (then on
# PATH as gofakes3); under CI they fail when it is missing, elsewhere skip. The version is
# also named in state/blob/s3_test.go.

GO    ?= go
TMP   ?= $(CURDIR)/.tmp
TOOLS ?= $(TMP)/bin

GOFAKES3_VERSION := v1.2.0
GOFAKES3         := $(TOOLS)/gofakes3-$(GOFAKES3_VERSION)

.PHONY: blob-tools
blob-tools: $(GOFAKES3) ## build the S3-compatible test server (gofakes3) into .tmp/bin (cached)

$(GOFAKES3):
	@mkdir -p $(TOOLS)
	GOBIN=$(TOOLS) $(GO) install github.com/johannesboyne/gofakes3/cmd/gofakes3@$(GOFAKES3_VERSION)
	mv $(TOOLS)/gofakes3 $@
