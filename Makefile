# fastprof developer and CI entry points. `make help` lists them;
# docs/dev-setup.md explains them.
#
#   make test                      everything CI runs (.ci/run calls this)
#   make test-py PY=3.11 PYTEST_ARGS='-k foo -x'
#
# Variables (give them on the command line):
#   PY=...           Python versions for venvs / builds / test-py   (default: all supported)
#   ASAN_PY=...      versions for test-asan (default: all supported, or PY when PY is given)
#   DEV_PY=3.11      version for dev / demo / bench-smoke (default: python3's)
#   PYTEST_ARGS=...  extra pytest arguments (paths, -k, -x, -v, ...)
#   PYTEST_TIMEOUT=  seconds per test (default 300, 900 under ASan)

SHELL       := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help
.DELETE_ON_ERROR:
MAKEFLAGS   += --no-builtin-rules --no-print-directory

SUPPORTED_PY := 3.9 3.10 3.11 3.12 3.13 3.14 3.15
ifdef PY
ASAN_PY ?= $(PY)
endif
PY      ?= $(SUPPORTED_PY)
ASAN_PY ?= $(SUPPORTED_PY)
ifndef DEV_PY
DEV_PY  := $(shell python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || echo 3.11)
endif
export DEV_PY                   # computed once, not again in each sub-make
PYTEST_ARGS ?=

ALL_PY  := $(sort $(SUPPORTED_PY) $(PY) $(ASAN_PY) $(DEV_PY))
DEV_VENV := .venv/py$(DEV_PY)
DEV_LIB  := $(CURDIR)/build/py$(DEV_PY)/lib
BENCH_SMOKE ?= benchmarks/run.py timing --smoke

.PHONY: help deps venvs build build-asan dev test test-c test-py test-asan \
        bench bench-smoke demo clean distclean wheels lint

help:
	@echo "fastprof make targets:"
	@echo "  make test         everything CI runs: deps venvs build lint test-c test-py test-asan bench-smoke"
	@echo "  make lint         ruff check and lint-imports (Python), clang-format --dry-run (C); installs them if missing"
	@echo "  make deps         install missing Debian packages (scripts/apt-packages.txt)"
	@echo "  make venvs        .venv/pyX.Y for PY=\"$(PY)\" with requirements-test.txt"
	@echo "  make build        build/pyX.Y/lib for each PY, build/pyX.Y-asan/lib for each ASAN_PY"
	@echo "  make dev          in-place build into python/fastprof/ for python$(DEV_PY)"
	@echo "  make test-c       cmocka tests of the core: plain, valgrind, ASan+UBSan"
	@echo "  make test-py      pytest on each PY build       (e.g. PY=3.11 PYTEST_ARGS='-k foo')"
	@echo "  make test-asan    pytest on the ASan+UBSan builds for ASAN_PY=\"$(ASAN_PY)\""
	@echo "  make bench        the full benchmark on every Python (an hour or more): tables, benchmarks/results/overhead.json.gz, docs/benchmark.png"
	@echo "  make bench-smoke  $(BENCH_SMOKE) (skipped while that file does not exist)"
	@echo "  make demo         profile examples/demo.py with python -m fastprof, write demo.prof"
	@echo "  make wheels       dist/: the sdist and a manylinux_2_17 wheel for each PY (zig cc, auditwheel)"
	@echo "  make clean        remove build/, in-place .so, demo.prof   (distclean: .venv too)"
	@echo "  per version:      venv-3.11 build-3.11 build-asan-3.11 test-py-3.11 test-asan-3.11"

deps:
	@scripts/install-apt-deps.sh

# One set of rules per Python version X.Y:
#   venv-X.Y  build-X.Y  build-asan-X.Y  test-py-X.Y  test-asan-X.Y
define PY_RULES
.PHONY: venv-$(1) build-$(1) build-asan-$(1) test-py-$(1) test-asan-$(1)
venv-$(1): deps
	@scripts/venv.sh $(1)
build-$(1): venv-$(1)
	@scripts/build.sh $(1) normal
build-asan-$(1): venv-$(1)
	@scripts/build.sh $(1) asan
test-py-$(1): build-$(1)
	@scripts/pytest.sh $(1) normal $$(PYTEST_ARGS)
test-asan-$(1): build-asan-$(1)
	@scripts/pytest.sh $(1) asan $$(PYTEST_ARGS)
endef
$(foreach v,$(ALL_PY),$(eval $(call PY_RULES,$(v))))

venvs: $(PY:%=venv-%)
build: $(PY:%=build-%) $(ASAN_PY:%=build-asan-%)
build-asan: $(ASAN_PY:%=build-asan-%)

# Every version is built and tested even when one fails; the target fails if
# any did.
test-py:
	@fail=; for v in $(PY); do \
	   $(MAKE) test-py-$$v || fail="$$fail $$v"; \
	 done; \
	 if [ -z "$$fail" ]; then echo "test-py: passed on Python $(PY)"; \
	 else echo "test-py: FAILED on Python$$fail"; exit 1; fi

test-asan:
	@fail=; for v in $(ASAN_PY); do \
	   $(MAKE) test-asan-$$v || fail="$$fail $$v"; \
	 done; \
	 if [ -z "$$fail" ]; then echo "test-asan: passed on Python $(ASAN_PY) (ASan+UBSan)"; \
	 else echo "test-asan: FAILED on Python$$fail"; exit 1; fi

test-c: deps
	@$(MAKE) -C tests/c check BUILD_DIR=$(CURDIR)/build/c

bench-smoke: build-$(DEV_PY)
	@if [ -f "$(firstword $(BENCH_SMOKE))" ]; then \
	   echo "=== benchmark smoke: $(BENCH_SMOKE) (Python $(DEV_PY)) ==="; \
	   PYTHONPATH=$(DEV_LIB) $(DEV_VENV)/bin/python $(BENCH_SMOKE) < /dev/null; \
	 else echo "bench-smoke: $(firstword $(BENCH_SMOKE)) does not exist yet: skipped"; fi

# The style rules (pyproject.toml [tool.ruff], .clang-format) and the import
# graph (pyproject.toml [tool.importlinter]); scripts/lint.sh installs ruff and
# import-linter (pinned, .venv/ruff-VERSION, .venv/import-linter-VERSION) and
# clang-format (Debian) if missing.
lint:
	@scripts/lint.sh

# The full benchmark (benchmarks/README.md); not part of `make test`.
bench: deps
	@bash benchmarks/bench_all.sh

# `make -s print-PY` prints a variable's value (scripts/run-tests.sh reads
# PY and ASAN_PY so).
print-%:
	@echo '$($*)'

# Deps, venvs, builds, lint, C tests, pytest on every version, pytest under
# ASan+UBSan, benchmark smoke; a summary at the end; non-zero if anything failed.
test:
	+@scripts/run-tests.sh

# In-place build for quick iteration: the .so lands in python/fastprof/, so
# `PYTHONPATH=python python3 ...` works. The build/ dirs never use it.
dev: venv-$(DEV_PY)
	FASTPROF_WERROR=1 $(DEV_VENV)/bin/python setup.py build_ext --inplace --force --build-temp build/dev/temp --build-lib build/dev/lib

# The sdist and one manylinux_2_17 wheel per version into dist/ (not part of
# `make test`; tests/test_packaging.py builds one wheel). docs/dev-setup.md.
wheels: deps $(PY:%=venv-%)
	@scripts/build-wheels.sh $(PY)

demo: deps build-$(DEV_PY)
	@echo "=== python -m fastprof -s cumulative -o demo.prof examples/demo.py ==="
	@PYTHONPATH=$(DEV_LIB) $(DEV_VENV)/bin/python -m fastprof -s cumulative -o demo.prof examples/demo.py
	@echo
	@echo "=== demo.prof read back with pstats (top 15 by cumulative time) ==="
	@$(DEV_VENV)/bin/python scripts/show-prof.py demo.prof 15
	@echo "Profile written to $(CURDIR)/demo.prof"
	@echo "  view it: $(DEV_VENV)/bin/python -m pstats demo.prof"

clean:
	rm -rf build demo.prof
	find python -name '*.so' -delete
	find . -name __pycache__ -type d -not -path './.venv/*' -prune -exec rm -rf {} +

distclean: clean
	rm -rf .venv
