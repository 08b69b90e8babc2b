# pipetop: a terminal monitor for training pipelines, and an instrumented trainer.
#   make demo   set up, build, generate the demo dataset, train, and watch it in pipetop
#   make test   set up and run every test (Go, libtorch, zarr-python and Python interop, tmux e2e)

SHELL := /bin/bash
export PATH := /usr/local/go/bin:$(PATH)
# go-nvml's cgo build warns about deprecated NVML calls; keep real warnings visible.
export CGO_CFLAGS := -Wno-deprecated-declarations
GO ?= go
PY := /usr/bin/python3
# FUZZTIME: how long make fuzz runs each fuzz target (make test: 1,000 inputs each,
# after go test ran every target's seed corpus).
FUZZTIME ?= 30s
DEMO_DATA ?= data/demo.zarr

.PHONY: all deps build shim test test-go test-tune test-python check-libtorch2 gpu-check-cpu gpu-check-prep fuzz lint bench demo screenshots clean

all: build

## deps: install missing Debian packages (as root) and Go modules
deps:
	@scripts/install-deps.sh

## build: the Go binaries into ./bin and the libtorch shim into ./build/torch
build: deps
	$(GO) build -o bin/ ./cmd/pipetop ./cmd/pipetrain ./examples/synthetic ./examples/gpusample
	@$(MAKE) --no-print-directory shim

shim:
	@scripts/build-shim.sh

## test: every test: lint, bounded fuzzing, the shim's C++ against libtorch 2.x
## and CUDA (when its sources changed), Python, Go unit/integration/libtorch/e2e
## with the binaries built here once, the GPU check's dry run on the CPU, then
## the live planted suites alone; a table of the phases' times at the end
## (scripts/test.sh)
test: build
	@scripts/test.sh

# test-go: the Go tests alone, in make test's order: the packages whose
# planted scenarios read the machine's CPU (threads waiting, idle cores,
# workers' busy shares, samples/s against the script's own) run after the
# rest, alone and one after the other.
test-go: build
	@scripts/test.sh go e2e live

## test-tune: pipetop tune end to end on the planted scripts (tests/tune):
## six whole tunes, 15-20 minutes on 2 cores, so make test runs only the
## quick one (a compute-bound script: nothing is tried)
test-tune: build
	PIPETOP_TEST_BIN=$(CURDIR)/bin $(GO) test -count=1 -timeout 40m -v ./tests/tune

## fuzz: run every fuzz target for FUZZTIME each (default 30 s)
fuzz:
	@scripts/fuzz.sh $(FUZZTIME)

test-python:
	@scripts/test.sh python

## check-libtorch2: type-check trainer/torch/csrc against libtorch 2.x (Debian trixie's
## headers, fetched once into build/) and 1.13, with and without the CUDA paths
check-libtorch2:
	@scripts/check-libtorch2.sh

## gpu-check-cpu: scripts/gpu-check.sh end to end on the CPU, small sizes, no NVML
gpu-check-cpu: build
	$(PY) -m unittest discover -s scripts/gpucheck -p 'test_*.py'
	@PYTHON=$(PY) scripts/gpu-check.sh --cpu

## gpu-check-prep: bin/ plus bin/lib (pipetrain's shared libraries) to carry to a GPU machine
gpu-check-prep: build
	@scripts/gpu-check.sh --prep

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
	/usr/bin/python3 -m pyflakes $$(git ls-files '*.py')

## bench: Go benchmarks and the side-by-side bench/ scripts
bench: build
	$(GO) test -run '^$$' -bench . -benchmem ./metrics/... ./ipc/... ./monitor/... ./tui/... ./trainer/zarr/... ./trainer/loader/...
	$(GO) test -run '^$$' -bench SmallPreset -benchtime 60x ./trainer
	$(PY) clients/python/bench_publish.py
	$(PY) clients/python/bench_auto.py
	$(PY) clients/python/bench_stacks.py
	@for s in bench/*.sh; do echo "== $$s"; "$$s" || exit 1; done

## demo: build, generate the demo dataset if missing, train, open pipetop
demo: build
	@scripts/demo.sh $(DEMO_DATA)

screenshots: build
	@scripts/screenshots.sh
	@scripts/bisect-screenshots.sh

clean:
	rm -rf bin build
