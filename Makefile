# Napwake's front door. `make help` lists the targets.
#
# The two commands a newcomer needs:
#   make demo   a local cluster, Napwake on it, a workload pausing and a request waking it
#   make test   every test: unit and envtest suites, then the end-to-end suite on a local cluster
SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

ROOT := $(CURDIR)
BIN := $(ROOT)/bin
OUT := $(ROOT)/_out
GO ?= go
# Tools live in hack/tools, a module outside the workspace, so their
# dependencies never shift the components' build list.
TOOL := GOWORK=off $(GO) -C $(ROOT)/hack/tools tool
MODULES := apis shared operator doorman forwarder kubectl-napwake e2e
COMPONENTS := operator doorman forwarder
# Each deployable module carries its own version: images are tagged with it.
COMMIT := $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
# Local images are named napwake.local/<image>:<module version>; nothing pulls them.
IMAGE_PREFIX ?= napwake.local
GOTEST_FLAGS ?= -race -count=1
FUZZTIME ?= 30s
# How long `make soak` runs its traffic after the baseline.
SOAK_DURATION ?= 30m
# envtest's etcd, kube-apiserver and kubectl, and the kube-controller-manager
# e2e/chart runs for ClusterRole aggregation: built from source once, cached by version.
ASSETS = $$($(ROOT)/hack/testbed/build-binaries.sh etcd kube-apiserver kubectl kube-controller-manager | tail -n 1)

##@ Everyday

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} /^[a-zA-Z0-9_-]+:.*##/ { printf "  \033[36m%-16s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)

.PHONY: demo
demo: ## Bring up a local cluster (or use $KUBECONFIG), install Napwake, watch a workload pause and a request wake it.
	@$(ROOT)/hack/packages.sh
	@$(ROOT)/hack/demo.sh

.PHONY: demo-down
demo-down: ## Remove what `make demo` made (the local cluster included).
	@$(ROOT)/hack/demo.sh down

.PHONY: demo-remote-test
demo-remote-test: ## Run make demo in its KUBECONFIG + NAPWAKE_REGISTRY mode against the test bed, with an in-memory registry.
	@$(ROOT)/hack/testbed/demo-remote.sh

.PHONY: test
test: ## Run every test: lint and generated files, unit + envtest suites with -race, then the end-to-end suite; ends with a table of each step's time and the slowest tests.
	@$(ROOT)/hack/test.sh

# A test that fails is run once more on its own (gotestsum --rerun-fails;
# UNIT_RERUNS=0 turns that off); gotestsum's summary names every rerun,
# pass or fail, and so does the last line make test-unit prints. A data
# race fails the step even when the rerun passed.
UNIT_RERUNS ?= 1

.PHONY: test-unit
test-unit: ## Unit and envtest suites of every module, with -race; a failed test runs once more, and is named.
	@export KUBEBUILDER_ASSETS=$(ASSETS); \
	GOWORK=off $(GO) -C $(ROOT)/hack/tools build -o $(BIN)/gotestsum gotest.tools/gotestsum; \
	echo "[$$(date +%H:%M:%S)] go test $(GOTEST_FLAGS) over $(MODULES) (envtest binaries: $$KUBEBUILDER_ASSETS; a failed test runs again up to $(UNIT_RERUNS) time)"; \
	mkdir -p $(OUT); rm -f $(OUT)/unit-reruns.txt; \
	$(BIN)/gotestsum --format standard-quiet --rerun-fails=$(UNIT_RERUNS) --rerun-fails-max-failures=5 \
	  --rerun-fails-report=$(OUT)/unit-reruns.txt --jsonfile $(OUT)/unit.json --packages="$(foreach m,$(MODULES),./$(m)/...)" -- $(GOTEST_FLAGS); \
	if [ -s $(OUT)/unit-reruns.txt ]; then echo "[$$(date +%H:%M:%S)] tests that failed once and were run again (their first failure is above):"; cat $(OUT)/unit-reruns.txt; fi; \
	if grep -q 'WARNING: DATA RACE' $(OUT)/unit.json; then \
	  echo "[$$(date +%H:%M:%S)] FAIL: the race detector reported a data race (above, and in $(OUT)/unit.json), in:"; \
	  grep 'WARNING: DATA RACE' $(OUT)/unit.json | sed -n 's/.*"Package":"\([^"]*\)".*"Test":"\([^"]*\)".*/  \1 \2/p' | sort -u; \
	  echo "  A race is a bug, never a timing flake: it fails the step even when the rerun passed."; exit 1; fi; \
	GOWORK=off $(GO) -C $(ROOT)/hack/chart test $(GOTEST_FLAGS) ./readme/ ./crdtemplate/ ./apiref/; \
	GOWORK=off $(GO) -C $(ROOT)/hack/tools test $(GOTEST_FLAGS) ./timings/ ./pkgdoc/ ./releasecheck/ ./doclinks/

.PHONY: e2e
e2e: cluster-up images ## End-to-end suite (ginkgo) on the local cluster; brings it up if needed.
	@$(ROOT)/hack/e2e.sh

.PHONY: soak
soak: ## Soak on a fresh local cluster, then take it down: pauses, wakes, held requests, doorman restarts for SOAK_DURATION (default 30m) after a 13-minute warm-up, about 50 min in all; docs/bench/soak.md.
	@$(ROOT)/hack/testbed/cluster.sh down
	@rc=0; { $(MAKE) --no-print-directory cluster-up images && SOAK_DURATION=$(SOAK_DURATION) $(ROOT)/hack/soak.sh; } || rc=$$?; \
	  $(ROOT)/hack/testbed/cluster.sh down; exit $$rc

.PHONY: fuzz
fuzz: ## Run every fuzz target (or those FUZZ, a regexp, names) for FUZZTIME (default 30s) each; their corpora are kept in testdata/fuzz.
	@$(ROOT)/hack/fuzz.sh $(FUZZTIME) $(FUZZ)

.PHONY: bench
bench: envtest-bins ## Benchmarks against their peers (HAProxy, a direct connection, raw API writes); results in docs/bench/*.md.
	@export KUBEBUILDER_ASSETS=$(ASSETS); for b in $(ROOT)/hack/bench/*.sh; do echo "[$$(date +%H:%M:%S)] $$b"; "$$b"; done

.PHONY: bench-wake
bench-wake: cluster-up images ## The wake's benchmarks on the local cluster, alone on the machine: Napwake's added time over 50 wakes with the operator's part (strict 30/60 ms targets) and the three-deep chain against each tier alone; results in _out/coldstart.txt and _out/chain.txt, recorded in docs/bench/coldstart.md and deps.md.
	@E2E_FOCUS='adds little to a cold start|three-tier environment' E2E_ATTEMPTS=1 E2E_PROCS=1 NAPWAKE_E2E_COLDSTART_WAKES=50 NAPWAKE_E2E_STRICT_TIMING=1 $(ROOT)/hack/e2e.sh; \
	  cat $(ROOT)/_out/coldstart.txt $(ROOT)/_out/chain.txt

.PHONY: bench-podready
bench-podready: envtest-bins ## Only the wake on a pod Ready by its own status through the real API watch, 1/50/256 held beside a bare dialler; prints its section.
	@export KUBEBUILDER_ASSETS=$(ASSETS); NAPWAKE_BENCH_ONLY=podready $(ROOT)/hack/bench/doorman.sh

.PHONY: forecast-sim
forecast-sim: ## Replay a trace under each wake policy, one JSON object on stdout: ENVS=environments.csv EVENTS=events.csv [SCORE_FROM_WEEK=N] [WAKES=wakes.csv].
	@test -n "$(ENVS)" -a -n "$(EVENTS)" || { echo "give the trace: make forecast-sim ENVS=environments.csv EVENTS=events.csv" >&2; exit 2; }
	@$(GO) run ./operator/internal/tools/forecastsim -envs "$(ENVS)" -events "$(EVENTS)" -score-from-week "$(or $(SCORE_FROM_WEEK),1)" $(if $(WAKES),-wakes "$(WAKES)")

##@ Build

.PHONY: build
build: ## Static binaries of every deployable into bin/.
	@mkdir -p $(BIN)
	@for c in $(COMPONENTS) kubectl-napwake; do \
	  echo "[$$(date +%H:%M:%S)] building bin/$$c $$(cat $(ROOT)/$$c/VERSION)"; \
	  CGO_ENABLED=0 $(GO) build -trimpath -buildvcs=false -ldflags "$$($(ROOT)/hack/ldflags.sh $$(cat $(ROOT)/$$c/VERSION) $(COMMIT))" -o $(BIN)/$$c ./$$c; \
	done

.PHONY: images
images: build ## One OCI image per component (no Docker), tagged with its module's version, into _out/images.
	@mkdir -p $(OUT)/images
	@GOWORK=off $(GO) -C $(ROOT)/hack/tools build -o $(BIN)/imagebuild ./imagebuild
	@for c in $(COMPONENTS); do \
	  v=$$(cat $(ROOT)/$$c/VERSION); \
	  d=$$($(BIN)/imagebuild --binary $(BIN)/$$c --image $(IMAGE_PREFIX)/napwake-$$c:$$v --entrypoint /$$c --out $(OUT)/images/napwake-$$c.tar); \
	  echo "[$$(date +%H:%M:%S)] image napwake-$$c:$$v $$d"; \
	done

.PHONY: push
push: build ## Push the images to REGISTRY (make push REGISTRY=registry.example.com/napwake); prints digests for Helm. PUSH_FLAGS=--insecure for plain HTTP.
	@test -n "$(REGISTRY)" || { echo "give a registry: make push REGISTRY=registry.example.com/napwake" >&2; exit 2; }
	@GOWORK=off $(GO) -C $(ROOT)/hack/tools build -o $(BIN)/imagebuild ./imagebuild
	@for c in $(COMPONENTS); do \
	  v=$$(cat $(ROOT)/$$c/VERSION); \
	  d=$$($(BIN)/imagebuild --binary $(BIN)/$$c --image $(IMAGE_PREFIX)/napwake-$$c:$$v --entrypoint /$$c --push $(REGISTRY) $(PUSH_FLAGS)); \
	  echo "$$c.image.digest=$$d"; \
	done

.PHONY: dist
dist: ## kubectl-napwake archives for linux and darwin, amd64 and arm64, into dist/kubectl-napwake.
	@$(ROOT)/hack/dist/dist.sh

.PHONY: krew-manifest
krew-manifest: ## Write plugins/napwake.yaml (krew) with the archives' sha256 sums; run after make dist.
	@$(ROOT)/hack/dist/krew-manifest.sh

.PHONY: release
release: ## Everything a release ships into _out/release/<version>/: chart, OCI image layouts and digests, plugin archives, krew manifest, notes from CHANGELOG.md, SHA256SUMS.
	@$(ROOT)/hack/dist/release.sh

.PHONY: release-check
release-check: release ## make release, then check what it wrote (hack/tools/releasecheck: sums, krew manifest, archives, chart, image digests).
	@GOWORK=off $(GO) -C $(ROOT)/hack/tools run ./releasecheck $(OUT)/release/$$(cat $(ROOT)/operator/VERSION)

##@ Generated files and checks

.PHONY: generate
generate: ## Regenerate deepcopy and the CRD from apis/ (controller-gen through go tool) into config/crd/, then the chart's CRD template, install.yaml, Kustomize and the chart README from them, and the API and flags references in docs/reference/.
	cd apis && $(TOOL) controller-gen object paths=$(ROOT)/apis/... crd:crdVersions=v1 output:crd:artifacts:config=$(ROOT)/config/crd
	@if [ -x $(ROOT)/hack/chart/generate.sh ]; then $(ROOT)/hack/chart/generate.sh; fi
	@GOWORK=off $(GO) -C $(ROOT)/hack/chart run ./apiref -crds $(ROOT)/config/crd -out $(ROOT)/docs/reference/api.md
	@$(ROOT)/hack/docs/flags.sh $(ROOT)/docs/reference/flags.md

.PHONY: verify
verify: lint ## Fail when generated files are stale, a component imports another, or a package doc names what does not exist.
	@$(ROOT)/hack/verify.sh

.PHONY: lint
lint: ## golangci-lint (.golangci.yml: module boundaries, import aliases, vet, ...) over every module, and every go.mod tidy.
	@$(ROOT)/hack/lint.sh $(MODULES)

##@ Local cluster

.PHONY: packages
packages: ## Install the Debian packages the demo and tests need (hack/packages.sh lists them), if any is missing.
	@$(ROOT)/hack/packages.sh

.PHONY: envtest-bins
envtest-bins: ## Build (once, cached by version) the test bed's Kubernetes binaries in one go build; envtest uses etcd, kube-apiserver and kubectl.
	@$(ROOT)/hack/testbed/build-binaries.sh >/dev/null

.PHONY: cluster-up
cluster-up: packages ## A real single-node cluster in its own network namespace (root; builds binaries on first use).
	@$(ROOT)/hack/testbed/cluster.sh up

.PHONY: cluster-down
cluster-down: ## Remove the local cluster: processes, mounts, namespaces, cgroups, state.
	@$(ROOT)/hack/testbed/cluster.sh down
