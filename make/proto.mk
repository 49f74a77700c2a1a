# make/proto.mk — protobuf contracts under schemas/proto: code generation and checks.
#
# Included from the root Makefile, which defines GO, TMP (= $(CURDIR)/.tmp) and TOOLS (= $(TMP)/bin).
# It also works on its own (`make -f make/proto.mk generate`) thanks to the ?= defaults below.
#
# Tools are pinned and built from source with the Go toolchain into $(TOOLS), each under a
# versioned file name (buf-v1.75.0, ...) so that changing a pin installs the new version.
# buf.gen.yaml and schemas/proto_test.go use the unversioned names (.tmp/bin/buf, ...), which
# proto-tools re-points at the pinned binaries on every run. Nothing assumes the cache exists.

GO    ?= go
TMP   ?= $(CURDIR)/.tmp
TOOLS ?= $(TMP)/bin

# buf is the largest build here (a few minutes from a cold module cache).
BUF_VERSION := v1.75.0
# protoc-gen-go follows the google.golang.org/protobuf runtime in go.mod, so the generated code
# always matches the runtime it links against; the version is read from go.mod, not repeated here.
PROTOC_GEN_GO_VERSION := $(shell $(GO) list -m -f '{{.Version}}' google.golang.org/protobuf 2>/dev/null)
PROTOC_GEN_GO_GRPC_VERSION := v1.6.2

BUF                := $(TOOLS)/buf-$(BUF_VERSION)
PROTOC_GEN_GO      := $(TOOLS)/protoc-gen-go-$(PROTOC_GEN_GO_VERSION)
PROTOC_GEN_GO_GRPC := $(TOOLS)/protoc-gen-go-grpc-$(PROTOC_GEN_GO_GRPC_VERSION)

# The git ref `buf breaking` compares against (WIRE_JSON rules, see buf.yaml).
BUF_BREAKING_REF ?= HEAD~1

# go-install-tool builds module path $(1) at version $(2) and stores the binary as $(3).
# Each tool gets its own scratch GOBIN so that parallel installs never see a half-written file.
define go-install-tool
	@mkdir -p $(TOOLS) $(TMP)/gobin-$(notdir $(3))
	GOBIN=$(TMP)/gobin-$(notdir $(3)) $(GO) install $(1)@$(2)
	mv $(TMP)/gobin-$(notdir $(3))/$(lastword $(subst /, ,$(1))) $(3)
	@rmdir $(TMP)/gobin-$(notdir $(3))
endef

$(BUF):
	$(call go-install-tool,github.com/bufbuild/buf/cmd/buf,$(BUF_VERSION),$@)

$(PROTOC_GEN_GO):
	@test -n "$(PROTOC_GEN_GO_VERSION)" || { echo "cannot read the google.golang.org/protobuf version from go.mod" >&2; exit 1; }
	$(call go-install-tool,google.golang.org/protobuf/cmd/protoc-gen-go,$(PROTOC_GEN_GO_VERSION),$@)

$(PROTOC_GEN_GO_GRPC):
	$(call go-install-tool,google.golang.org/grpc/cmd/protoc-gen-go-grpc,$(PROTOC_GEN_GO_GRPC_VERSION),$@)

.PHONY: proto-tools
proto-tools: $(BUF) $(PROTOC_GEN_GO) $(PROTOC_GEN_GO_GRPC) ## install the pinned buf, protoc-gen-go and protoc-gen-go-grpc
	@# Always re-point the stable names, so a pin moved back to a cached older version is honoured too.
	@ln -sfn $(notdir $(BUF)) $(TOOLS)/buf
	@ln -sfn $(notdir $(PROTOC_GEN_GO)) $(TOOLS)/protoc-gen-go
	@ln -sfn $(notdir $(PROTOC_GEN_GO_GRPC)) $(TOOLS)/protoc-gen-go-grpc

.PHONY: generate
generate: proto-tools ## regenerate schemas/gen from schemas/proto (buf generate)
	$(BUF) generate

.PHONY: proto-check
proto-check: proto-tools ## buf lint, buf format check, and buf breaking (WIRE_JSON) against BUF_BREAKING_REF
	$(BUF) lint
	$(BUF) format -d --exit-code
	@if ! git rev-parse --verify -q '$(BUF_BREAKING_REF)^{commit}' >/dev/null; then \
	  echo "buf breaking: skipped, $(BUF_BREAKING_REF) does not exist (first commit or shallow clone)"; \
	elif ! git ls-tree -r --name-only '$(BUF_BREAKING_REF)' -- schemas/proto | grep -q '\.proto$$'; then \
	  echo "buf breaking: skipped, $(BUF_BREAKING_REF) has no .proto files under schemas/proto yet"; \
	elif ! git cat-file -e '$(BUF_BREAKING_REF):buf.yaml' 2>/dev/null; then \
	  echo "buf breaking: skipped, $(BUF_BREAKING_REF) has no buf.yaml yet"; \
	else \
	  echo "$(BUF) breaking --against '.git#ref=$(BUF_BREAKING_REF)'"; \
	  $(BUF) breaking --against '.git#ref=$(BUF_BREAKING_REF)'; \
	fi
