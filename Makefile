# walkie — see README.md. Every target works on a fresh machine with Go.
GO      ?= go
BIN     := bin
PKGS    := ./...
# Platforms every change must vet and build for besides this one: most
# people who run agent CLIs all day do it on a Mac.
CROSS   := darwin/arm64 darwin/amd64
# The packages whose files differ under -tags temporal (the build that
# links the Temporal engine, installed as walkie-temporal): vetted and
# tested a second time with the tag. handoff_test.go checks the list.
TEMPORAL_PKGS := ./cmd/walkie
INSTALL_DIR = $(or $(shell $(GO) env GOBIN),$(shell $(GO) env GOPATH)/bin)

.PHONY: build test cross bench demo lint install clis chromium tools temporal goreleaser release-snapshot clean

build: ## build walkie, walkie-temporal (the Temporal engine) and the test/demo programs into bin/
	$(GO) build -o $(BIN)/walkie ./cmd/walkie
	$(GO) build -tags temporal -o $(BIN)/walkie-temporal ./cmd/walkie
	$(GO) build -o $(BIN)/fakeagent ./cmd/fakeagent
	$(GO) build -o $(BIN)/fakemodel ./cmd/fakemodel

test: clis chromium tools temporal goreleaser ## vet, cross-vet and build for macOS, then every test with the race detector (the snapshot release included)
	$(GO) vet $(PKGS)
	$(GO) vet -tags temporal $(TEMPORAL_PKGS)
	@$(MAKE) --no-print-directory cross
	$(GO) test -race -timeout 30m $(PKGS)
	$(GO) test -race -timeout 30m -tags temporal $(TEMPORAL_PKGS)

cross: ## vet and build the whole tree, tests included, for each of $(CROSS); walkie-temporal's packages with the tag too
	@set -e; for p in $(CROSS); do \
		echo "cross: $$p"; \
		GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) vet $(PKGS); \
		GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) build $(PKGS); \
		GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) vet -tags temporal $(TEMPORAL_PKGS); \
		GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) build -tags temporal -o /dev/null ./cmd/walkie; \
	done

clis: ## install the real agent CLIs (pinned) for the integration tests; off CI their tests skip and say why when this fails, in CI (CI set) the run fails
	@scripts/install-clis.sh || { if [ -n "$$CI" ]; then echo "make: CI is set and the real agent CLIs could not be installed" >&2; exit 1; fi; \
		echo "make: the real agent CLIs could not be installed; their integration tests will skip and say why"; }

chromium: ## install Chromium (Debian's package) for the fleet page's browser tests; with CI set they fail without it
	@scripts/install-chromium.sh >/dev/null || echo "make: Chromium could not be installed; the browser tests will skip and say why (with CI set they fail)"

tools: ## install tmux (and rpm on Linux) for the terminal and package tests; they fail without them when CI is set
	@scripts/install-tools.sh || echo "make: tmux or rpm could not be installed; the terminal and package tests will skip (or fail in CI) and say why"

temporal: ## build the Temporal dev server once into .cache/ for the scale-out tests (minutes cold, nothing warm)
	@scripts/install-temporal.sh >/dev/null || echo "make: the Temporal dev server could not be built; the scale-out tests will skip (or fail under CI) and say why"

goreleaser: ## build GoReleaser (pinned in scripts/versions.env) once into .cache/ for the snapshot-release test and make release-snapshot; with CI set a failure fails the run
	@scripts/install-goreleaser.sh >/dev/null || { if [ -n "$$CI" ]; then echo "make: CI is set and GoReleaser could not be built" >&2; exit 1; fi; \
		echo "make: GoReleaser could not be built; the snapshot-release tests will skip and say why"; }

release-snapshot: goreleaser ## the whole release (4 platforms, archives, checksums, .deb/.rpm, cask) into bin/release, offline; publishes nothing
	$$(scripts/install-goreleaser.sh --check) release --snapshot --clean --config scripts/release/goreleaser.yaml

bench: temporal ## benchmarks; each prints its ratio measured in the same run
	scripts/bench.sh

demo: ## a real debate between two scripted agents, no account needed; builds only walkie and the fake agent it runs
	$(GO) build -o $(BIN)/walkie ./cmd/walkie
	$(GO) build -o $(BIN)/fakeagent ./cmd/fakeagent
	scripts/demo.sh

lint: ## formatting and vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) vet -tags temporal $(TEMPORAL_PKGS)

install: ## install walkie and walkie-temporal (which walkie hands worker and serve --engine temporal to) into $(go env GOBIN), else $(go env GOPATH)/bin
	$(GO) install ./cmd/walkie
	$(GO) build -tags temporal -o $(INSTALL_DIR)/walkie-temporal ./cmd/walkie

clean:
	rm -rf $(BIN) demo/run
