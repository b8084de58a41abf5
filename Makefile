# Two entry points: `make demo` and `make test`. Everything installs into .venv.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check -q
SOURCES := $(wildcard csrc/*.c csrc/*.h src/tvmffi/*.py src/tvmffi/*/*.py) setup.py pyproject.toml

.PHONY: demo test bench lint install clean

$(VENV)/.base:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install "setuptools>=77" wheel "apache-tvm-ffi>=0.1.15,<0.2"
	touch $@

$(VENV)/.test-deps: $(VENV)/.base
	$(PIP) install "pytest>=7" "numpy>=1.24" "torch==2.13.0" "ml_dtypes>=0.5" ruff mypy
	touch $@

# Build against the runtime installed in the venv so headers and library match.
$(VENV)/.installed: $(VENV)/.base $(SOURCES)
	$(PIP) install --no-build-isolation --no-deps --force-reinstall .
	touch $@

install: $(VENV)/.installed

demo: $(VENV)/.installed $(VENV)/.test-deps
	$(PY) examples/quickstart.py

test: $(VENV)/.installed $(VENV)/.test-deps
	$(PY) -m pytest -q tests

bench: $(VENV)/.installed $(VENV)/.test-deps
	for b in benchmarks/bench_*.py; do $(PY) $$b || exit 1; done

lint: $(VENV)/.test-deps
	$(VENV)/bin/ruff check src tests benchmarks examples
	$(VENV)/bin/mypy

clean:
	rm -rf build $(VENV) src/*.egg-info
