"""After ``import tvmffi``, every attribute the official ``import tvm_ffi`` offers exists.

A hosted client (``TVMFFI_HOST=1``) reads ``tvm_ffi._dtype.DataTypeCode``,
``tvm_ffi._ffi_api.X`` or ``tvm_ffi.cpp`` right after ``import tvm_ffi``, without
importing the submodule: the official ``__init__`` imported it. tvmffi answers those
names on first use (``import tvmffi`` stays light), and this test walks ``dir()`` of
the official package and of its public submodules against tvmffi's.

The official names are collected in a subprocess (the official package's classes and
tvmffi's are not loaded into one interpreter). In a submodule, a name counts when the
official module lists it in ``__all__``, or it is public and the module's own: its
imports (``typing`` names, stdlib modules, loggers, the binding's other modules) are
not API. ``LEFT_OUT`` is the short list of official names tvmffi does not answer, each
with its reason.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys

import pytest

import tvmffi

# Official modules compared (relative to the package); "" is the package itself.
MODULES = (
    "",
    "_dtype",
    "_ffi_api",
    "_tensor",
    "_version",
    "_optional_torch_c_dlpack",
    "access_path",
    "container",
    "core",
    "cpp",
    "cpp.dtype",
    "cpp.extension",
    "dataclasses",
    "error",
    "libinfo",
    "module",
    "registry",
    "serialization",
    "stream",
    "structural",
    "testing",
    "utils",
    "utils.kwargs_wrapper",
    "utils.lockfile",
)

_CYTHON = "a helper class of the official Cython core; tvmffi's C core has no such layer"
LEFT_OUT: dict[tuple[str, str], str] = {
    ("", "CAny"): _CYTHON + " (values cross as Python objects)",
    ("", "CContainerBase"): _CYTHON + " (containers derive from Object)",
    ("", "torch"): "the official __init__ imports torch when installed; tvmffi does not "
    "(import time), and tvmffi.torch is tvmffi's own module",
    ("", "sys"): "an import of the official __init__, not API",
    ("", "TYPE_CHECKING"): "an import of the official __init__, not API",
    ("core", "CContainerBase"): _CYTHON,
    ("core", "ByteArrayArg"): _CYTHON + " (bytes arguments are read in C)",
    ("core", "DLTensorTestWrapper"): _CYTHON + " (a DLPack test fixture of the official suite)",
    ("core", "FieldGetter"): _CYTHON + " (fields are C descriptors)",
    ("core", "FieldSetter"): _CYTHON + " (fields are C descriptors)",
    ("core", "ObjectRValueRef"): _CYTHON + " (moves are Object.__move_handle_from__)",
    ("core", "PyNativeObject"): _CYTHON + " (str/bytes/Shape subclass their Python type)",
    ("core", "ERROR_NAME_TO_TYPE"): _CYTHON + " (tvmffi.error keeps its own registry)",
    ("core", "ERROR_TYPE_TO_NAME"): _CYTHON + " (tvmffi.error keeps its own registry)",
    ("core", "attr_name"): "a loop variable the Cython module leaves behind",
    ("core", "dl_dtype"): "a loop variable the Cython module leaves behind",
    ("core", "extra_types"): "a loop variable the Cython module leaves behind",
    ("error", "TracebackManager"): "the official Python side of backtraces; tvmffi builds "
    "them in C (tvmffi.error)",
}
# Names the official package has in some builds or environments only: the Cython
# module's leftover loop variables (not in every CPython's build of it) and the
# package's import of torch (only where torch is installed).
NOT_EVERYWHERE = frozenset(
    {("", "torch"), ("core", "attr_name"), ("core", "dl_dtype"), ("core", "extra_types")}
)

_COLLECT = r"""
import importlib, json, logging, sys, types, typing

PKG = "tvm_ffi"

def own(mod, name, value):
    if isinstance(value, types.ModuleType):
        return value.__name__.startswith(mod.__name__ + ".")  # its own submodules
    if isinstance(value, (typing.TypeVar, logging.Logger)) or name == "TYPE_CHECKING":
        return False
    if value is None:  # an optional import that failed here (core.torch, core.cuda_driver)
        return False
    if type(value).__module__ == "__future__":
        return False
    return not callable(value) or getattr(value, "__module__", None) == mod.__name__

importlib.import_module(PKG)
out = {}
for rel in sys.argv[1:]:
    mod = importlib.import_module(PKG + ("." + rel if rel else ""))
    listed = set(getattr(mod, "__all__", ()))
    if rel == "":
        names = [n for n in dir(mod) if not n.startswith("__") or n in listed]
        names += [n for n in ("__version__", "__version_tuple__") if hasattr(mod, n)]
    else:
        names = [
            n for n in dir(mod)
            if n in listed or (not n.startswith("_") and own(mod, n, getattr(mod, n)))
        ]
    out[rel] = sorted(set(names))
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def official() -> dict[str, list[str]]:
    pytest.importorskip("tvm_ffi")
    proc = subprocess.run(
        [sys.executable, "-c", _COLLECT, *MODULES],
        capture_output=True,
        text=True,
        timeout=300,
        env={k: v for k, v in os.environ.items() if k != "TVMFFI_HOST"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result: dict[str, list[str]] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def _ours(rel: str) -> object:
    return importlib.import_module("tvmffi" + ("." + rel if rel else ""))


@pytest.mark.parametrize("rel", MODULES)
def test_every_official_name_is_answered(official: dict[str, list[str]], rel: str) -> None:
    ours = _ours(rel)
    missing = [
        name for name in official[rel] if (rel, name) not in LEFT_OUT and not hasattr(ours, name)
    ]
    assert not missing, f"tvmffi{'.' + rel if rel else ''} lacks official names {missing}"


def test_left_out_names_are_still_official(official: dict[str, list[str]]) -> None:
    # A name the official package dropped leaves the list, so it stays short and true.
    stale = [
        key for key in LEFT_OUT if key[1] not in official[key[0]] and key not in NOT_EVERYWHERE
    ]
    assert not stale, stale


def test_submodules_are_attributes_after_a_bare_import() -> None:
    # In a fresh interpreter: nothing else has imported them yet.
    code = (
        "import tvmffi\n"
        "for name in ('_dtype', '_ffi_api', '_tensor', '_version', "
        "'_optional_torch_c_dlpack', 'cpp', 'utils'):\n"
        "    assert getattr(tvmffi, name).__name__ == 'tvmffi.' + name, name\n"
        "assert tvmffi._dtype.DataTypeCode.INT == 0\n"
        "assert tvmffi._tensor.Tensor is tvmffi.Tensor\n"
        "assert tvmffi._version.__version__ == tvmffi.__version__\n"
        "assert tvmffi.__version_tuple__[:2] == tuple(int(p) for p in "
        "tvmffi.__version__.split('.')[:2])\n"
        "assert tvmffi.LIB._name == tvmffi.lib_path()\n"
        "assert tvmffi._is_config_mode() is False\n"
        "assert {'_dtype', 'cpp', '__version__'} <= set(dir(tvmffi))\n"
        "assert 'float32' in dir(tvmffi._dtype)\n"
        "print('OK')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.stdout.strip() == "OK", proc.stderr[-3000:]


def test_lazy_submodules_are_not_imported_by_import_tvmffi() -> None:
    code = (
        "import sys, tvmffi\n"
        "print(sorted(m for m in ('tvmffi._tensor', 'tvmffi.cpp', 'tvmffi._version', "
        "'tvmffi._optional_torch_c_dlpack') if m in sys.modules))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.stdout.strip() == "[]", proc.stdout + proc.stderr[-3000:]


def test_container_index_helpers() -> None:
    from tvmffi.container import getitem_helper, normalize_index

    items = [10, 20, 30]
    assert normalize_index(3, -1) == 2
    with pytest.raises(IndexError):
        normalize_index(3, 3)
    assert getitem_helper(items, lambda o, i: o[i], 3, 1) == 20
    assert getitem_helper(items, lambda o, i: o[i], 3, slice(None, None, -1)) == [30, 20, 10]


def test_version_module_names() -> None:
    from tvmffi import _version

    assert _version.version == tvmffi.__version__
    assert _version.version_tuple == _version._version_tuple(tvmffi.__version__)
    assert _version._version_tuple("0.1.15.post2") == (0, 1, 15, "post2")
    assert _version.commit_id is None


# ---- registered classes ------------------------------------------------------------
# Every attribute the official ``register_object`` / ``@c_class`` puts on a class, the
# same decoration in tvmffi puts on it too (fields, methods, ``__ffi_init__``,
# ``__init__``, ``__tvm_ffi_type_info__``, the dataclass dunders).
REGISTERED_KEYS = (
    "testing.TestIntPair",
    "testing.TestObjectBase",
    "testing.TestObjectDerived",
    "testing.TestCxxNoAutoInit",
    "testing.TestVisitHook",
    "testing.TestCxxAutoInit",
    "testing.TestCxxClassDerived",
    "testing.TestNonCopyable",
)
# The ABC machinery of the official ``Object`` metaclass and the instance layout
# (``__slots__``: the official metaclass adds an empty one to every class; tvmffi's
# enum classes keep a ``__dict__``): not attributes a registration gives.
_CLASS_MACHINERY = frozenset(
    {"__abstractmethods__", "_abc_impl", "__weakref__", "__dict__", "__slots__"}
)

_COLLECT_CLASSES = r"""
import json, sys
import tvm_ffi, tvm_ffi.testing

def registered(key, own_init):
    body = {"__slots__": ()}
    if own_init:
        body["__init__"] = lambda self, *args: self.__ffi_init__(*args)
    cls = type("C", (tvm_ffi.Object,), body)
    return sorted(tvm_ffi.register_object(key)(cls).__dict__)

out = {"bare": {}, "own_init": {}, "testing": {}}
for key in sys.argv[1:]:
    out["bare"][key] = registered(key, False)
    out["own_init"][key] = registered(key, True)
for name in getattr(tvm_ffi.testing, "__all__", dir(tvm_ffi.testing)):
    value = getattr(tvm_ffi.testing, name)
    if isinstance(value, type) and issubclass(value, tvm_ffi.Object):
        out["testing"][name] = sorted(value.__dict__)
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def official_classes() -> dict[str, dict[str, list[str]]]:
    pytest.importorskip("tvm_ffi")
    proc = subprocess.run(
        [sys.executable, "-c", _COLLECT_CLASSES, *REGISTERED_KEYS],
        capture_output=True,
        text=True,
        timeout=300,
        env={k: v for k, v in os.environ.items() if k != "TVMFFI_HOST"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result: dict[str, dict[str, list[str]]] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def _registered(key: str, own_init: bool) -> type:
    body: dict[str, object] = {"__slots__": ()}
    if own_init:
        body["__init__"] = lambda self, *args: self.__ffi_init__(*args)
    cls = type("C", (tvmffi.Object,), body)
    made: type = tvmffi.register_object(key)(cls)
    return made


@pytest.mark.parametrize("own_init", [False, True], ids=["bare", "own_init"])
@pytest.mark.parametrize("key", REGISTERED_KEYS)
def test_register_object_gives_every_official_class_attribute(
    official_classes: dict[str, dict[str, list[str]]], key: str, own_init: bool
) -> None:
    import tvmffi.testing  # noqa: F401  (the testing library's types)
    from tvmffi.object import _REGISTERED, _bind_class, _key_to_index

    index = _key_to_index(key)
    before = _REGISTERED.get(index)
    try:
        cls = _registered(key, own_init)
        wanted = set(official_classes["own_init" if own_init else "bare"][key]) - _CLASS_MACHINERY
        assert sorted(wanted - set(cls.__dict__)) == []
        if "__ffi_init__" in wanted:  # and it constructs, for a class whose __init__ calls it
            assert callable(cls.__dict__["__ffi_init__"])
    finally:  # the testing library's own class wraps its objects again for later tests
        if before is not None:
            _bind_class(index, before)


def test_testing_classes_have_every_official_class_attribute(
    official_classes: dict[str, dict[str, list[str]]],
) -> None:
    import tvmffi.testing

    missing = {}
    for name, official_names in official_classes["testing"].items():
        ours = getattr(tvmffi.testing, name, None)
        if ours is None:
            continue  # the module-level name parity is the test above
        # An enum class's dunders (eq/hash/repr/str, `name`) are defined once on tvmffi's
        # Enum bases rather than installed on every enum class: they count as the class's.
        given = set(vars(ours)).union(
            *(
                vars(base)
                for base in ours.__mro__[1:]
                if base.__module__ == "tvmffi.dataclasses.enum"
            )
        )
        lacking = sorted(set(official_names) - _CLASS_MACHINERY - given)
        lacking = [n for n in lacking if not n.startswith("__tvm_ffi_stub")]
        if lacking:
            missing[name] = lacking
    assert missing == {}
