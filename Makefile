# walkie — see README.md. Every target works on a fresh machine with Go.
GO      ?= go
BIN     := bin
PKGS    := ./...

.PHONY: build test bench demo lint install clis temporal clean

build: ## build walkie and the test/demo programs into bin/
	$(GO) build -o $(BIN)/walkie ./cmd/walkie
	$(GO) build -o $(BIN)/fakeagent ./cmd/fakeagent
	$(GO) build -o $(BIN)/fakemodel ./cmd/fakemodel

test: clis temporal ## vet, then every test with the race detector
	$(GO) vet $(PKGS)
	$(GO) test -race -timeout 30m $(PKGS)

clis: ## install the real agent CLIs (pinned) for the integration tests; tests say so when they skip
	@scripts/install-clis.sh || echo "make: the real agent CLIs could not be installed; their integration tests will skip and say why"

temporal: ## build the Temporal dev server once into .cache/ for the scale-out tests (minutes cold, nothing warm)
	@scripts/install-temporal.sh >/dev/null || echo "make: the Temporal dev server could not be built; the scale-out tests will skip (or fail under CI) and say why"

bench: temporal ## benchmarks; each prints its ratio measured in the same run
	scripts/bench.sh

demo: build ## a real debate between two scripted agents, no account needed
	scripts/demo.sh

lint: ## formatting and vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

install: ## install walkie into $(go env GOPATH)/bin
	$(GO) install ./cmd/walkie

clean:
	rm -rf $(BIN) demo/run
