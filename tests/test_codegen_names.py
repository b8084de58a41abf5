"""Names and values in codegen specs that the generated C must survive.

Every identifier the headers of the generated code declare or define (macros
such as ``INT32_MAX``, ``EOF``, ``DLPACK_MAJOR_VERSION``; functions such as
``index`` or ``TVMFFIEnvGetStream``) is taken from the compiler itself and used
as a parameter or Var name: each one is either refused when the spec is made
(only C keywords and the type names of kernel prototypes are) or builds and
runs, through ``build`` (the wrapper never spells a user's name) and through
``inline`` (where the names are the body's own variables). Docs holding any
text, and numeric fields at the edge of what the C can hold, build too.
"""

from __future__ import annotations

import re
import subprocess
from typing import Any

import numpy as np
import pytest

import tvmffi
from tvmffi import codegen, libinfo
from tvmffi._build import toolchain
from tvmffi.codegen import Scalar, Signature, Tensor, Var, _spec

# The headers of the generated wrapper (its prelude) and of `inline` kernels.
HEADERS = [
    "stdarg.h",
    "stdbool.h",
    "stddef.h",
    "stdint.h",
    "stdio.h",
    "string.h",
    "tvm/ffi/c_api.h",
    "tvm/ffi/extra/c_env_api.h",
]
C_KEYWORDS = {
    "auto",
    "break",
    "case",
    "char",
    "const",
    "continue",
    "default",
    "do",
    "double",
    "else",
    "enum",
    "extern",
    "float",
    "for",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "register",
    "restrict",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "struct",
    "switch",
    "typedef",
    "union",
    "unsigned",
    "void",
    "volatile",
    "while",
}


def header_identifiers() -> list[str]:
    """Every identifier (macro or declared) the headers bring in, as the compiler sees them."""
    try:
        cc = toolchain.compiler("c")
    except RuntimeError:
        pytest.skip("no C compiler")
    include = libinfo.find_include_path()
    text = "".join(f"#include <{h}>\n" for h in HEADERS)
    names: set[str] = set()
    for mode in ("-P", "-dM"):  # declarations after preprocessing; macro definitions
        proc = subprocess.run(
            [cc, "-std=c11", "-E", mode, "-I", include, "-x", "c", "-"],
            input=text,
            capture_output=True,
            text=True,
            check=True,
        )
        out = proc.stdout
        if mode == "-dM":  # "#define NAME ..." / "#define NAME(args) ...": the NAME
            out = "\n".join(line.split()[1].split("(")[0] for line in out.splitlines())
        names.update(re.findall(r"\b[A-Za-z_][A-Za-z0-9_]*\b", out))
    # Names with a leading underscore are reserved to the implementation (and
    # refused as '__'), keywords are not names.
    return sorted(n for n in names if not n.startswith("_") and n not in C_KEYWORDS)


@pytest.fixture(scope="module")
def names() -> list[str]:
    found = header_identifiers()
    # The compiler agrees with the brief: these are among them.
    for expected in (
        "INT32_MAX",
        "SIZE_MAX",
        "EOF",
        "DLPACK_MAJOR_VERSION",
        "NULL",
        "printf",
        "TVMFFIEnvGetStream",
        "kDLCPU",
        "DLTensor",
        "offsetof",
        "INT64_C",
    ):
        assert expected in found
    return found


def accepted(names: list[str]) -> list[str]:
    """The names a spec accepts; the refused ones must be the documented few."""
    ok = []
    for n in names:
        try:
            Var(n)
        except ValueError as err:
            assert n in _spec._C_RESERVED, f"{n!r} refused: {err}"
            assert "reserved C name" in str(err)
        else:
            ok.append(n)
    return ok


def test_header_names_refused_only_when_reserved(names: list[str]) -> None:
    ok = accepted(names)
    assert "INT32_MAX" in ok and "errno" not in _spec._C_RESERVED
    assert {"NULL", "int64_t", "bool", "true", "DLTensor"} <= set(names) - set(ok)


def collision_signature(sig_name: str, ok: list[str]) -> Signature:
    """`out` (int64, one element) then one Tensor per Var name, then one int64 Scalar per name."""
    var_names, scalar_names = ok[:24], ok[24:]
    params: list[Any] = [Tensor("tvmffi_test_out", [1], "int64")]
    params += [Tensor(f"tvmffi_test_t{i}", [Var(n)], "int8") for i, n in enumerate(var_names)]
    params += [Scalar(n, "int64") for n in scalar_names]
    return Signature(sig_name, params)


def arguments(sig: Signature) -> tuple[list[Any], int]:
    """Arguments for collision_signature and the sum the kernel must store."""
    out = np.zeros(1, np.int64)
    args: list[Any] = [out]
    total = 0
    for i, p in enumerate(sig.ffi_params[1:]):
        if isinstance(p, Tensor):
            args.append(np.zeros(i % 3 + 1, np.int8))
            total += i % 3 + 1  # the Var's value
        else:
            args.append(i * 7 - 3)
            total += i * 7 - 3
    return args, total


def test_header_names_build_and_run(names: list[str], tmp_path: Any) -> None:
    sig = collision_signature("hdr_build", accepted(names))
    # The kernel's own source names its parameters p0, p1, ... (out, the int8
    # tensors, the scalars, then the Vars): only the wrapper sees the spec's
    # names, and it must not spell them.
    n_tensors = len(sig.tensors)
    n_params = len(sig.ffi_params) + len(sig.vars)
    params = ["int64_t* p0"] + [f"int8_t* p{i}" for i in range(1, n_tensors)]
    params += [f"int64_t p{i}" for i in range(n_tensors, n_params)]
    total_expr = " + ".join(f"p{i}" for i in range(n_tensors, n_params))
    source = (
        "#include <stdint.h>\n"
        f"int index({', '.join(params)}) {{ p0[0] = {total_expr}; return 0; }}\n"
    )
    mod = codegen.build(
        [(sig, "index")],
        sources=[source],
        name="hdr_build",
        output_dir=tmp_path,
        extra_cflags=["-O0"],
    )
    args, total = arguments(sig)
    assert mod["hdr_build"](*args) is None
    assert int(args[0][0]) == total
    # Errors name the user's names.
    scalar = next(i for i, p in enumerate(sig.ffi_params) if isinstance(p, Scalar))
    bad = list(args)
    bad[scalar] = "text"
    name = sig.ffi_params[scalar].name
    with pytest.raises(TypeError, match=f"Parameter `{name}` expects int64 but got str"):
        mod["hdr_build"](*bad)
    meta = mod.get_function_metadata("hdr_build")
    assert meta is not None and [v["name"] for v in meta["vars"]] == [v.name for v in sig.vars]


def test_header_names_inline(names: list[str], tmp_path: Any) -> None:
    sig = collision_signature("hdr_inline", accepted(names))
    terms = [v.name for v in sig.vars] + [p.name for p in sig.ffi_params if isinstance(p, Scalar)]
    func = codegen.inline(
        sig, f"tvmffi_test_out[0] = {' + '.join(terms)};", output_dir=tmp_path, extra_cflags=["-O0"]
    )
    args, total = arguments(sig)
    func(*args)
    assert int(args[0][0]) == total


KERNELS = ["sig", "t0", "args", "result", "var0", "EOF", "stdin"]


def test_kernel_names_like_wrapper_locals_and_macros(tmp_path: Any) -> None:
    # The wrapper declares each kernel under a mangled C name bound to its symbol.
    sigs = [Signature(f"k_{k}", [Scalar("x", "int64"), Tensor("y", [1], "int64")]) for k in KERNELS]
    source = "#include <stdint.h>\n" + "".join(
        f"int {k}(int64_t x, int64_t* y) {{ y[0] = x * {i + 2}; return 0; }}\n"
        for i, k in enumerate(KERNELS)
    )
    functions = list(zip(sigs, KERNELS, strict=True))
    mod = codegen.build(functions, sources=[source], name="kernel_names", output_dir=tmp_path)
    for i, k in enumerate(KERNELS):
        y = np.zeros(1, np.int64)
        mod[f"k_{k}"](21, y)
        assert y[0] == 21 * (i + 2)


DOCS = [
    "lone surrogates \ud800 and \udfff, a pair \ud83d\ude00 escaped separately",
    "NUL \x00 inside, quotes \" ' and backslashes \\ \\n, trigraph ??= ??/ and */ /*",
    "non-BMP \U0001f600, CJK \u4e2d\u6587, bidi \u202e, ZWJ \u200d, BOM \ufeff",
    "%s %d %n printf directives are text",
    "",
]


def test_any_doc_builds(tmp_path: Any) -> None:
    sigs = [Signature(f"doc{i}", [Scalar("x", "int32")], doc=d) for i, d in enumerate(DOCS)]
    source = "#include <stdint.h>\n" + "".join(
        f"int doc{i}_kernel(int32_t x) {{ (void)x; return 0; }}\n" for i in range(len(DOCS))
    )
    mod = codegen.build(
        [(s, f"{s.name}_kernel") for s in sigs], sources=[source], name="docs", output_dir=tmp_path
    )
    for i, doc in enumerate(DOCS):
        # Valid UTF-8 all the way: a lone surrogate comes back as its \udXXX escape.
        expected = doc.encode("utf-8", "backslashreplace").decode("utf-8")
        assert mod.get_function_doc(f"doc{i}") == expected
        assert mod[f"doc{i}"](1) is None

    # A str subclass is taken as its text.
    class Doc(str):
        def __str__(self) -> str:
            return "not this"

    assert Signature("f", [], doc=Doc("this")).doc == "this"


def test_numeric_edges_build_and_check(tmp_path: Any) -> None:
    big = 2**62
    sigs = [
        Signature("div_big", [Tensor("x", [Var("n", divisibility=2**63 - 1)], "int8")]),
        Signature("align_big", [Tensor("x", [Var("n")], "int8", data_alignment=big)]),
        Signature("dims_edge", [Tensor("x", [0, Var("m")], "int8", strides=[2**63 - 1, -(2**63)])]),
    ]
    source = "#include <stdint.h>\n" + "".join(
        f"int {s.name}_kernel(int8_t* x, int64_t v) {{ (void)x; (void)v; return 0; }}\n"
        for s in sigs
    )
    mod = codegen.build(
        [(s, f"{s.name}_kernel") for s in sigs], sources=[source], name="edges", output_dir=tmp_path
    )
    mod["div_big"](np.zeros(0, np.int8))  # 0 is a multiple of anything
    with pytest.raises(ValueError, match="to be divisible by 9223372036854775807 but got"):
        mod["div_big"](np.zeros(3, np.int8))
    with pytest.raises(ValueError, match=f"data_alignment={big} but got a data address that is"):
        mod["align_big"](np.zeros(4, np.int8))
    # Strides of an empty tensor are whatever DLPack says; explicit ones are still checked.
    with pytest.raises(ValueError, match="strides"):
        mod["dims_edge"](np.zeros((0, 2), np.int8))


def test_signature_names_outside_the_runtime_prefix() -> None:
    # __tvm_ffi__library_bin, __tvm_ffi__doc_f, ... belong to the runtime.
    for name in ("_library_bin", "_doc_f", "_"):
        with pytest.raises(ValueError, match="must not start with '_'"):
            Signature(name, [])


def test_numeric_fields_refused_when_c_cannot_hold_them() -> None:
    with pytest.raises(ValueError, match=r"divisibility must be a positive int below 2\*\*63"):
        Var("n", divisibility=2**70)
    with pytest.raises(ValueError, match=r"power of two below 2\*\*63"):
        Tensor("x", [1], "int8", data_alignment=2**64)
    assert tvmffi is not None
