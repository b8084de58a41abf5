"""FFI functions carry __name__, __qualname__, __doc__ and __signature__ from their schemas."""

from __future__ import annotations

import gc
import inspect
import pydoc
import weakref

import numpy as np
import pytest

import tvmffi
from tvmffi import _function_doc, codegen, cpp
from tvmffi.codegen import Scalar, Signature, Tensor, Var


def test_global_function_signature_name_and_doc() -> None:
    f = tvmffi.get_global_func("testing.add_one")
    assert str(inspect.signature(f)) == "(arg0: int, /) -> int"
    assert f.__name__ == "add_one"
    assert f.__qualname__ == "testing.add_one"
    assert f.__doc__.startswith("add_one(arg0: int, /) -> int")
    assert "add_one(arg0: int, /) -> int" in pydoc.render_doc(f)
    assert f(41) == 42  # still a plain Function


def test_values_are_cached_in_the_instance_dict_only_when_read() -> None:
    f = tvmffi.get_global_func("testing.add_one")
    assert "__signature__" not in f.__dict__  # nothing computed at lookup
    sig = f.__signature__
    assert f.__dict__["__signature__"] is sig
    assert f.__signature__ is sig


def test_container_parameter_renders_its_schema() -> None:
    f = tvmffi.get_global_func("ffi.ArraySize")
    assert str(inspect.signature(f)) == "(arg0: Array[Any], /) -> int"


def test_function_without_schema_keeps_the_old_answers() -> None:
    g = tvmffi.convert_func(lambda x: x)
    assert g.__signature__ is None
    # inspect then falls back as for any callable object: CPython < 3.13 raises,
    # 3.13 reports the generic signature of the type's __call__.
    try:
        generic = str(inspect.signature(g))
    except ValueError:
        generic = None
    assert generic in (None, "(*args, **kwargs)")
    with pytest.raises(AttributeError):
        _ = g.__name__
    assert g.__doc__ == tvmffi.Function.__doc__


def test_registered_python_function_is_named_from_the_registry() -> None:
    @tvmffi.register_global_func("test_function_doc.twice", override=True)
    def twice(x: int) -> int:
        return 2 * x

    try:
        f = tvmffi.get_global_func("test_function_doc.twice")
        assert f.__name__ == "twice"
        assert f.__qualname__ == "test_function_doc.twice"
    finally:
        tvmffi.remove_global_func("test_function_doc.twice")


def test_assigned_name_wins() -> None:
    f = tvmffi.get_global_func("testing.add_one")
    f.__name__ = "renamed"
    assert f.__name__ == "renamed"
    assert f.__qualname__ == "testing.add_one"
    del f.__name__
    assert f.__name__ == "add_one"


def test_reflected_method_signature() -> None:
    from tvmffi.testing import TestIntPair

    pair = TestIntPair(1, 2)
    assert str(inspect.signature(pair.sum)) == "() -> int"
    func = TestIntPair.sum.__func__
    assert func.__name__ == "sum"
    assert func.__qualname__ == "TestIntPair.sum"
    assert "sum of a and b" in func.__doc__


def test_cpp_load_inline_functions_have_signatures() -> None:
    mod = cpp.load_inline(
        "function_doc_add",
        cpp_sources="int64_t add(int64_t a, int64_t b) { return a + b; }",
        functions={"add": "Add two integers."},
        extra_cflags=["-DTVM_FFI_DLL_EXPORT_INCLUDE_METADATA=1"],
    )
    assert str(inspect.signature(mod.add)) == "(arg0: int, arg1: int, /) -> int"
    assert mod.add.__name__ == "add"
    assert mod.add.__doc__ == "add(arg0: int, arg1: int, /) -> int\n\nAdd two integers."
    assert mod.add(2, 3) == 5


def test_codegen_function_uses_parameter_names() -> None:
    n = Var("n")
    sig = Signature(
        "scale",
        [Tensor("x", [n], "float32"), Scalar("alpha", "float32")],
        doc="x *= alpha",
    )
    scale = codegen.inline(sig, "for (int64_t i = 0; i < n; ++i) x[i] *= alpha;")
    # Named parameters: positional or keyword (bound in C, csrc/kwargs_binder.c).
    assert str(inspect.signature(scale)) == "(x: Tensor, alpha: float) -> None"
    assert "Tensor([n], float32)" in scale.__doc__
    assert scale.__doc__.endswith("x *= alpha")
    x = np.ones(3, np.float32)
    scale(x, 2.0)
    assert x.tolist() == [2.0, 2.0, 2.0]
    scale(alpha=0.5, x=x)
    scale(x, alpha=3.0)
    assert x.tolist() == [3.0, 3.0, 3.0]
    with pytest.raises(
        TypeError, match=r"^scale\(\) missing 1 required positional argument: 'alpha'$"
    ):
        scale(x=x)
    with pytest.raises(TypeError, match=r"^scale\(\) got an unexpected keyword argument 'beta'$"):
        scale(x, beta=1.0)
    with pytest.raises(TypeError, match=r"^scale\(\) got multiple values for argument 'x'$"):
        scale(x, 1.0, x=x)
    with pytest.raises(TypeError, match=r"^scale\(\) got multiple values for argument 'alpha'$"):
        scale(x, 1.0, 2.0, alpha=1.0)  # keywords are bound first, as in a def


def test_unnamed_functions_refuse_keywords_as_officially() -> None:
    add_one = tvmffi.get_global_func("testing.add_one")
    with pytest.raises(TypeError, match=r"^__call__\(\) got an unexpected keyword argument 'x'$"):
        add_one(x=1)
    with pytest.raises(TypeError, match="unexpected keyword argument 'y'"):
        add_one(1, y=2)  # the answer is cached: the same again
    assert add_one(1) == 2


def test_module_function_notes_do_not_keep_functions_alive() -> None:
    mod = cpp.load_inline(
        "function_doc_sub",
        cpp_sources="int64_t sub(int64_t a, int64_t b) { return a - b; }",
        functions=["sub"],
    )
    func = mod.sub
    key = id(func)
    assert key in _function_doc._MODULE_FUNCS
    ref = weakref.ref(func)
    del mod, func
    gc.collect()
    assert ref() is None
    assert key not in _function_doc._MODULE_FUNCS


def test_class_level_reads_keep_the_type_answers() -> None:
    assert tvmffi.Function.__signature__ is None  # a getset would return itself here
    assert tvmffi.Function.__doc__.startswith("A TVM FFI function")
    assert tvmffi.Function.__name__ == "Function"
    assert "class Function" in pydoc.render_doc(tvmffi.Function)


# ---- malformed metadata: introspection falls back, it does not raise (issue 32) ---------
_BAD_METADATA_SRC = r"""
#include <string>
#include <tvm/ffi/c_api.h>
static int ret_str(const std::string& s, TVMFFIAny* r) {
  TVMFFIByteArray b{s.data(), s.size()};
  return TVMFFIStringFromByteArray(&b, r);
}
static std::string deep(int n) { return std::string(n, '[') + std::string(n, ']'); }
#define FUNC(name) int64_t name(int64_t x) { return x; }
FUNC(not_json) FUNC(schema_int) FUNC(schema_bad) FUNC(deep_meta) FUNC(deep_schema)
FUNC(meta_list) FUNC(doc_none) FUNC(doc_int)
#define META(name, text)                                                                 \
  extern "C" TVM_FFI_DLL_EXPORT int __tvm_ffi__metadata_##name(void*, const TVMFFIAny*,  \
                                                               int32_t, TVMFFIAny* r) {  \
    return ret_str(text, r);                                                             \
  }
#define DOC(name, index)                                                                 \
  extern "C" TVM_FFI_DLL_EXPORT int __tvm_ffi__doc_##name(void*, const TVMFFIAny*,       \
                                                          int32_t, TVMFFIAny* r) {       \
    r->type_index = index; r->zero_padding = 0; r->v_int64 = 7; return 0;                \
  }
META(not_json, "not json {")
META(schema_int, "{\"type_schema\": 5}")
META(schema_bad, "{\"type_schema\": \"{\\\"type\\\": 3, \\\"args\\\": 7}\"}")
META(deep_meta, deep(100000))
META(deep_schema, "{\"type_schema\": \"" + deep(100000) + "\"}")
META(meta_list, "[1, 2]")
DOC(doc_none, kTVMFFINone)
DOC(doc_int, kTVMFFIInt)
"""
_BAD_METADATA_NAMES = [
    "not_json",
    "schema_int",
    "schema_bad",
    "deep_meta",
    "deep_schema",
    "meta_list",
    "doc_none",
    "doc_int",
]


@pytest.fixture(scope="module")
def bad_metadata_module() -> tvmffi.Module:
    return cpp.load_inline(
        "function_doc_bad_metadata", cpp_sources=_BAD_METADATA_SRC, functions=_BAD_METADATA_NAMES
    )


@pytest.mark.parametrize("name", _BAD_METADATA_NAMES)
def test_malformed_metadata_falls_back(bad_metadata_module: tvmffi.Module, name: str) -> None:
    import functools

    # A fresh wrapper per read: each computes its answers anew.
    assert getattr(bad_metadata_module, name).__name__ == name
    assert getattr(getattr(bad_metadata_module, name), "__name__", None) == name
    assert functools.wraps(getattr(bad_metadata_module, name))(lambda: 0).__name__ == name
    assert name in pydoc.render_doc(getattr(bad_metadata_module, name))
    assert getattr(bad_metadata_module, name).__signature__ is None  # no signature, no error
    assert getattr(bad_metadata_module, name).__doc__.startswith(f"{name}(...)")
    assert getattr(bad_metadata_module, name)(3) == 3
