# Lifeboat's build, local environment and tests. `make help` lists the targets.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

BIN        ?= $(CURDIR)/bin
LIFEBOAT   := $(BIN)/lifeboat
STATE_DIR  ?= .lifeboat
MEMBERS    ?= 3
E2E_TIMEOUT ?= 60m
GO         ?= go

# The build's identity, from git when there is one: `lifeboat version`, the
# bench report and the image's labels show it.
VERSION    ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
REVISION   ?= $(shell r=$$(git rev-parse HEAD 2>/dev/null) && { git diff --quiet HEAD 2>/dev/null || r=$$r-dirty; echo $$r; } || true)
# Expanded once: a commit made while make runs must not give the image one
# tag and the tests another.
VERSION    := $(VERSION)
REVISION   := $(REVISION)
GO_LDFLAGS := -X github.com/lifeboat-dev/lifeboat/internal/version.version=$(VERSION) -X github.com/lifeboat-dev/lifeboat/internal/version.revision=$(REVISION)

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_.-]+:.*## / {printf "  \033[36m%-14s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

# The image: a static binary (no cgo, paths trimmed, no build ID) and the
# commit's time, so that two builds of one commit give the same digest.
IMAGE_REPO ?= ghcr.io/lifeboat-dev/lifeboat
IMAGE_TAG  ?= $(VERSION)
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)

.PHONY: image
image: ## Build the container image as bin/lifeboat-image.tar (docker/podman load, ctr images import); no Docker needed.
	@mkdir -p $(BIN)/image
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 $(GO) build -trimpath -ldflags '-s -w -buildid= $(GO_LDFLAGS)' -o $(BIN)/image/lifeboat ./cmd/lifeboat
	$(GO) run ./hack/image --binary $(BIN)/image/lifeboat --out $(BIN)/lifeboat-image.tar \
	  --tag $(IMAGE_REPO):$(IMAGE_TAG) --version $(VERSION) --revision $(REVISION) --created $(SOURCE_DATE_EPOCH)

.PHONY: build
build: ## Build bin/lifeboat.
	@mkdir -p $(BIN)
	$(GO) build -ldflags '$(GO_LDFLAGS)' -o $(LIFEBOAT) ./cmd/lifeboat

.PHONY: generate
generate: ## Regenerate deepcopy code and CRD manifests (config/crd/bases).
	hack/generate.sh

.PHONY: fmt
fmt: ## Format the Go code.
	gofmt -w $$(git ls-files '*.go')

.PHONY: verify
verify: ## Fail when generated files are stale, code is unformatted, or go vet or staticcheck complains.
	hack/verify.sh

UP_ARGS    ?=

.PHONY: up
up: build ## Build everything and start the local environment (MEMBERS=3, STATE_DIR=.lifeboat, UP_ARGS=--with-kyverno adds Kyverno).
	$(LIFEBOAT) up --members $(MEMBERS) --state-dir $(STATE_DIR) $(UP_ARGS)

.PHONY: host-deps
host-deps: ## Install the Debian packages the host cluster needs (containerd, runc, CNI plugins, iptables, conntrack, iproute2), when missing.
	@missing=""; for p in $(HOST_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "Installing Debian packages:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi

HOST_PACKAGES := containerd runc containernetworking-plugins iptables conntrack iproute2

.PHONY: up-host
up-host: build image host-deps ## Like `make up`, plus the host cluster with a real node and Lifeboat's image in it, to install charts/lifeboat into (root).
	$(LIFEBOAT) up --members $(MEMBERS) --state-dir $(STATE_DIR) --host --host-image $(BIN)/lifeboat-image.tar $(UP_ARGS)

.PHONY: down
down: build ## Stop the local environment and remove its state.
	$(LIFEBOAT) down --state-dir $(STATE_DIR)

.PHONY: status
status: build ## Show the local environment's components, their health and restarts.
	$(LIFEBOAT) status --state-dir $(STATE_DIR)

BENCH_STATE_DIR ?= $(BIN)/bench-env
BENCH_OUT       ?= $(BIN)/bench
BENCH_ARGS      ?=

.PHONY: bench
bench: build ## Benchmarks on a fresh local environment; report in bin/bench/report.md (BENCH_ARGS adds `lifeboat bench` flags).
	$(LIFEBOAT) down --state-dir $(BENCH_STATE_DIR)
	rc=0; $(LIFEBOAT) up --members $(MEMBERS) --state-dir $(BENCH_STATE_DIR) && \
	  $(LIFEBOAT) bench --state-dir $(BENCH_STATE_DIR) --out $(BENCH_OUT) $(BENCH_ARGS) || rc=$$?; \
	  $(LIFEBOAT) down --state-dir $(BENCH_STATE_DIR); exit $$rc

.PHONY: test-unit
test-unit: ## Unit tests with the race detector (no processes started; `go test ./...` alone takes seconds).
	$(GO) test -race ./...

.PHONY: test-e2e
test-e2e: build ## End-to-end tests on their own local environment (LIFEBOAT_E2E_STATE_DIR=dir reuses a running one).
	LIFEBOAT_BIN=$(LIFEBOAT) $(GO) test -tags e2e -count=1 -timeout $(E2E_TIMEOUT) -v ./test/e2e/... 2>&1 | tee $(BIN)/e2e.log | hack/e2e-summary.sh

.PHONY: helm
helm: ## Build the pinned helm (hack/tools/helm) into bin/helm.
	@mkdir -p $(BIN)
# Without --kube-version, helm template and helm lint take the cluster for the
# Kubernetes version linked into helm: a plain go build links 1.20, which the
# charts' kubeVersion (>=1.27) refuses. Link, as Helm's own release build
# does, the version of the k8s.io/client-go go.mod pins (v0.35: 1.35).
	minor=$$(awk '$$1 == "k8s.io/client-go" { split($$2, v, "."); print v[2] }' go.mod) && test -n "$$minor" && \
	  cd hack/tools/helm && $(GO) build -o $(BIN)/helm \
	  -ldflags "-X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$$minor -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$$minor" \
	  helm.sh/helm/v3/cmd/helm

# The host suite's scenarios: its own, and the seeds' walkthroughs run
# against the control plane the chart installs.
HOST_TESTS ?= TestHost|TestFailoverSeedWalkthrough|TestSeedNginxPropagates

.PHONY: test-host
test-host: build image helm host-deps ## End-to-end tests on a host cluster with a real node: install charts/lifeboat, join the members, run the seeds, upgrade, uninstall (root).
	LIFEBOAT_BIN=$(LIFEBOAT) LIFEBOAT_E2E_HOST=1 LIFEBOAT_E2E_HELM=$(BIN)/helm \
	LIFEBOAT_E2E_IMAGE=$(BIN)/lifeboat-image.tar LIFEBOAT_E2E_IMAGE_REF=$(IMAGE_REPO):$(IMAGE_TAG) \
	  $(GO) test -tags e2e -count=1 -timeout $(E2E_TIMEOUT) -v -run '$(HOST_TESTS)' ./test/e2e/... 2>&1 | tee $(BIN)/e2e-host.log | hack/e2e-summary.sh

.PHONY: test
test: verify test-unit test-e2e test-host ## Everything CI runs: verify, unit and end-to-end tests, and the host suite.
