"""The examples in the public docstrings run (doctest), and the most used names have them."""

from __future__ import annotations

import doctest
import importlib
import inspect

import pytest

import tvmffi

MODULES = [
    "tvmffi.registry",
    "tvmffi.object",
    "tvmffi.module",
    "tvmffi.cpp.extension",
    "tvmffi.codegen._library",
    "tvmffi.container",
    "tvmffi._convert",
    "tvmffi.device",
    "tvmffi.stream",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.failed == 0
    assert result.attempted > 0


@pytest.mark.parametrize(
    "obj",
    [
        tvmffi.get_global_func,
        tvmffi.register_global_func,
        tvmffi.register_object,
        tvmffi.load_module,
        tvmffi.Module.get_function,
        tvmffi.cpp.load_inline,
        tvmffi.cpp.build_inline,
        tvmffi.codegen.inline,
    ],
    ids=lambda o: o.__qualname__,
)
def test_most_used_names_document_parameters_returns_and_examples(obj: object) -> None:
    doc = inspect.getdoc(obj) or ""
    for section in ("Parameters", "Returns", "Examples"):
        assert f"\n{section}\n---" in doc, section
    assert ">>>" in doc


@pytest.mark.parametrize(
    "cls",
    [tvmffi.Function, tvmffi.Object, tvmffi.Device, tvmffi.dtype, tvmffi.Tensor],
    ids=lambda c: c.__name__,
)
def test_type_docstrings_document_and_their_examples_run(cls: type) -> None:
    doc = inspect.getdoc(cls) or ""
    assert "\nExamples\n---" in doc and len(doc) > 500
    finder = doctest.DocTestFinder(recurse=False)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    tests = finder.find(cls, cls.__name__, globs={})
    assert tests and tests[0].examples
    for test in tests:
        runner.run(test)
    assert runner.failures == 0
