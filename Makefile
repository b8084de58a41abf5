# Two entry points: `make demo` and `make test`. Everything installs into .venv.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check -q
SOURCES := $(wildcard csrc/*.c csrc/*.h csrc/*/*.c csrc/*/*.h src/tvmffi/*.py src/tvmffi/*/*.py src/tvmffi/*/*/*.py) setup.py pyproject.toml

.PHONY: demo test bench soak lint install clean

$(VENV)/.base:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install "setuptools>=77" wheel "apache-tvm-ffi>=0.1.15,<0.2"
	touch $@

# Test, benchmark and lint tools: pyproject.toml's `dev` extra (the `test` extra plus
# ruff and mypy), the one list. Installing it builds the project once more, as
# .installed does, against the runtime in the venv.
# TORCH picks the torch build this venv gets: the extra only asks for torch>=2.13,
# and pip would otherwise take the newest torch the index has (a CUDA build).
TORCH ?= torch==2.13.0

$(VENV)/.test-deps: $(VENV)/.base pyproject.toml
	$(PIP) install --no-build-isolation ".[dev]" "$(TORCH)"
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

demo: $(VENV)/.installed $(VENV)/.test-deps
	$(PY) examples/quickstart.py

test: $(VENV)/.installed $(VENV)/.test-deps
	$(PY) -m pytest -q tests

bench: $(VENV)/.installed $(VENV)/.test-deps
	for b in benchmarks/bench_*.py; do $(PY) $$b || exit 1; done

# Every kind of value and call path a million times; fails if RSS or a reference
# count grows (minutes; not part of `test`), after checking that deliberate leaks
# are caught. SOAK_ARGS, e.g. --calls 100000.
soak: $(VENV)/.installed $(VENV)/.test-deps
	$(PY) benchmarks/soak.py --self-test
	$(PY) benchmarks/soak.py $(SOAK_ARGS)

lint: $(VENV)/.test-deps
	$(VENV)/bin/ruff check src tests benchmarks examples
	$(VENV)/bin/mypy

clean:
	rm -rf build $(VENV) src/*.egg-info
