"""Property tests (hypothesis) of the two inputs tvmffi reads from outside: library bins and
codegen specs.

* ``__tvm_ffi__library_bin`` bytes, random or mutated from valid trees: parsing gives a
  valid tree that re-encodes to the same bytes, or a ``ValueError`` (never
  ``struct.error``, ``OverflowError``, ``IndexError`` ...); mutated ELF files give the
  same from the file readers; a library whose array was mutated either loads through
  ``load_module`` with the tree the reader saw, or raises ``ValueError`` -- never a
  crash, even on ``get_function(..., query_imports=True)``.
* codegen specs from arbitrary constructor arguments: made, or refused with
  ``ValueError``; a spec that is made emits C and metadata for any name and doc; a few
  random valid signatures (names taken from the C headers, any doc, numeric fields at
  their edges) are built, called with matching arguments and with a mismatched one.

Builds are few (each costs a compiler run); the spec-only properties take many examples.
"""

from __future__ import annotations

import contextlib
import json
import os
import struct
import subprocess
import tempfile
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import tvmffi
from tvmffi import codegen
from tvmffi._build import toolchain
from tvmffi.codegen import EnvStream, Scalar, Signature, Tensor, Var, _emit, emit_c
from tvmffi.codegen.library_bin import (
    LIB_KEY,
    SYMBOL,
    LibraryBin,
    LibraryBinEntry,
    _read_library_bin,
)
from tvmffi.module import _exported_function_names

# Explore, but write nothing into the work tree and allow slow examples (builds, a
# loaded machine).
FAST = settings(
    deadline=None, database=None, max_examples=120, suppress_health_check=[HealthCheck.too_slow]
)
FEW = settings(
    deadline=None,
    database=None,
    max_examples=25,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
# No shrinking: each step would be a compiler run (a failure prints its example whole).
BUILDS = settings(
    deadline=None,
    database=None,
    max_examples=4,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

U64_EDGES = [0, 1, 2, 7, 8, 9, 2**31, 2**32, 2**62, 2**63 - 1, 2**63, 2**64 - 1]


# ---- library bins ---------------------------------------------------------------------
entry_st = st.one_of(
    st.just(LibraryBinEntry(LIB_KEY)),
    st.builds(
        LibraryBinEntry,
        st.text(min_size=1, max_size=10).filter(lambda k: k != LIB_KEY),
        st.binary(max_size=40),
    ),
)


@st.composite
def trees(draw: Any) -> LibraryBin:
    """A valid tree: edges only go forward in a random order (no cycle), shared children."""
    n = draw(st.integers(1, 7))
    entries = [draw(entry_st) for _ in range(n)]
    order = draw(st.permutations(range(n)))
    imports: list[list[int]] = [[] for _ in range(n)]
    for pos, node in enumerate(order):
        later = order[pos + 1 :]
        if later:
            imports[node] = draw(st.lists(st.sampled_from(later), max_size=3))
    return LibraryBin.from_imports(entries, imports)


@st.composite
def mutated(draw: Any, source: Any) -> bytes:
    """Bytes of ``source`` with 1-4 edits: bit flips, u64 fields set to edge values,
    truncation, inserted or deleted bytes."""
    data = bytearray(draw(source))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "u64", "truncate", "insert", "delete"]))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if op == "flip" and data:
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif op == "u64" and len(data) >= 8:
            at = min(at - at % 8, len(data) - 8)
            value = draw(st.sampled_from([*U64_EDGES, len(data), len(data) - 8]))
            data[at : at + 8] = struct.pack("<Q", value % 2**64)
        elif op == "truncate":
            del data[at:]
        elif op == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=9))
        elif op == "delete":
            del data[at : at + draw(st.integers(1, 9))]
    return bytes(data)


def parses_or_value_error(data: bytes) -> LibraryBin | None:
    try:
        tree = LibraryBin.from_bytes(data)
    except ValueError as err:
        assert str(err).startswith("library bin:"), err
        return None
    assert tree.to_bytes() == data
    return tree


@FAST
@given(trees())
def test_valid_trees_round_trip(tree: LibraryBin) -> None:
    data = tree.to_bytes()
    assert LibraryBin.from_bytes(data) == tree
    assert len(tree.describe().splitlines()) == len(tree.entries)


@FAST
@given(
    st.one_of(
        st.binary(max_size=120),
        st.binary(max_size=100).map(lambda b: struct.pack("<Q", len(b)) + b),
    )
)
def test_random_bytes_parse_or_raise_value_error(data: bytes) -> None:
    parses_or_value_error(data)


@FAST
@given(mutated(trees().map(LibraryBin.to_bytes)))
def test_mutated_trees_parse_or_raise_value_error(data: bytes) -> None:
    parses_or_value_error(data)


@FAST
@given(st.text(min_size=1, max_size=6), st.binary(max_size=4))
def test_entry_kinds_are_checked_when_made(kind: str, payload: bytes) -> None:
    # Any str is a kind or a ValueError when the entry is made, never later in to_bytes.
    try:
        entry = LibraryBinEntry(kind, None if kind == LIB_KEY else payload)
    except ValueError:
        return
    tree = LibraryBin.from_imports([entry], [])
    assert LibraryBin.from_bytes(tree.to_bytes()) == tree


# ---- library files ----------------------------------------------------------------------
FUNC_C = r"""
__attribute__((visibility("default"))) int __tvm_ffi_f(void* s, const TVMFFIAny* a, int32_t n,
                                                       TVMFFIAny* r) {
  (void)s; (void)a; (void)n;
  r->type_index = kTVMFFINone;
  return 0;
}
"""

# Three library entries: 0 imports 1 and 2, 1 imports 2. A mutation of this array
# can only name library entries or kinds without a loader.
BASE_TREE = LibraryBin.from_imports([LibraryBinEntry(LIB_KEY)] * 3, [[1, 2], [2]])


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, int]:
    """(bytes of a module library carrying BASE_TREE, file offset of the array)."""
    try:
        cc = toolchain.compiler("c")
    except RuntimeError:
        pytest.skip("no C compiler")
    includes = [f"-I{d}" for d in toolchain.include_dirs()]
    lib_dir = toolchain.lib_dir()
    out = tmp_path_factory.mktemp("props")
    data = BASE_TREE.to_bytes()
    src = out / "lib.c"
    src.write_text(
        "#include <tvm/ffi/c_api.h>\n"
        f'__attribute__((visibility("default"))) const unsigned char {SYMBOL}[{len(data)}] = '
        f"{{{','.join(map(str, data))}}};\n" + FUNC_C
    )
    so = out / "libprops.so"
    subprocess.run(
        [
            cc,
            "-shared",
            "-fPIC",
            "-O1",
            *includes,
            "-o",
            str(so),
            str(src),
            f"-L{lib_dir}",
            "-ltvm_ffi",
            f"-Wl,-rpath,{lib_dir}",
        ],
        check=True,
    )
    raw = so.read_bytes()
    at = raw.find(data)
    assert at > 0 and raw.find(data, at + 1) < 0
    return raw, at


@FEW
@given(st.data())
def test_mutated_library_files_read_or_raise_value_error(
    library: tuple[bytes, int], data: st.DataObject
) -> None:
    raw, _ = library
    # Mostly the headers and tables (the first pages and the section table at the end).
    edits = data.draw(
        st.lists(
            st.tuples(
                st.one_of(
                    st.integers(0, min(len(raw), 4096) - 1),
                    st.integers(max(len(raw) - 2048, 0), len(raw) - 1),
                    st.integers(0, len(raw) - 1),
                ),
                st.integers(0, 255),
            ),
            min_size=1,
            max_size=8,
        )
    )
    bad = bytearray(raw)
    for at, value in edits:
        bad[at] = value
    blob = bytes(bad)
    for read in (_read_library_bin, _exported_function_names):
        with contextlib.suppress(ValueError):  # anything else fails the test
            read("mutated.so", blob)


@FEW
@given(mutated(st.just(BASE_TREE.to_bytes())))
def test_libraries_with_mutated_arrays_load_or_raise_value_error(
    library: tuple[bytes, int], blob: bytes
) -> None:
    raw, at = library
    size = len(BASE_TREE.to_bytes())
    blob = (blob + bytes(size))[:size]  # the symbol keeps its size
    expected = parses_or_value_error(blob)
    fd, path = tempfile.mkstemp(suffix=".so")  # a new file: dlopen loads it anew
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw[:at] + blob + raw[at + size :])
        try:
            mod = tvmffi.load_module(path)
        except ValueError as err:
            assert path in str(err)
            return
        # Loaded: the runtime built the tree the reader validated.
        assert expected is not None
        assert len(mod.imports) == len(expected.imports_of(0))
        with pytest.raises(AttributeError):  # missing: AttributeError, as official
            mod.get_function("missing", query_imports=True)
        assert mod.get_function("f", query_imports=True) is not None
    finally:
        os.unlink(path)


# ---- codegen specs: made or refused ----------------------------------------------------
HEADER_NAMES = [
    "INT32_MAX",
    "SIZE_MAX",
    "EOF",
    "errno",
    "DLPACK_MAJOR_VERSION",
    "NULL",
    "index",
    "printf",
    "TVMFFIEnvGetStream",
    "kDLCPU",
    "offsetof",
    "INT64_C",
    "sig",
    "args",
    "result",
    "t0",
    "p0",
    "var0",
    "stream",
    "int",
    "bool",
    "true",
    "int64_t",
    "DLTensor",
    "__x",
    "_X",
]
name_st = st.one_of(
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,7}", fullmatch=True),
    st.sampled_from(HEADER_NAMES),
)
any_name_st = st.one_of(name_st, st.text(max_size=4), st.integers(), st.none())
int_edges = st.sampled_from(
    [0, 1, -1, 3, 2**31, 2**62, 2**63 - 1, 2**63, 2**64, 2**70, -(2**63), -(2**63) - 1]
)
any_int_st = st.one_of(
    int_edges,
    st.integers(),
    st.booleans(),
    st.floats(allow_nan=False),
    st.text(max_size=2),
    st.none(),
)
dtype_st = st.one_of(
    st.sampled_from([*codegen._spec.DTYPES, "float128", "int4", ""]), st.text(max_size=3)
)
var_st = st.builds(
    lambda name, dtype, div: made(Var, name, dtype, divisibility=div),
    name_st,
    st.sampled_from(["int8", "int32", "int64", "uint8", "uint64", "float32"]),
    st.one_of(st.none(), int_edges, st.integers(1, 16)),
)


def made(make: Any, *args: Any, **kwargs: Any) -> Any:
    """The spec, or None when it is refused (ValueError is the one way to refuse)."""
    try:
        return make(*args, **kwargs)
    except ValueError:
        return None


@st.composite
def any_param(draw: Any) -> Any:
    kind = draw(st.sampled_from(["tensor", "scalar", "stream", "junk"]))
    if kind == "tensor":
        dims = st.lists(st.one_of(any_int_st, var_st), max_size=4)
        shape = draw(st.one_of(dims, any_int_st))
        strides = draw(st.one_of(st.none(), dims))
        return made(
            Tensor,
            draw(any_name_st),
            shape,
            draw(dtype_st),
            device=draw(st.sampled_from(["cpu", "cuda", "rocm", "tpu", ""])),
            strides=strides,
            data_alignment=draw(st.one_of(st.none(), any_int_st)),
        )
    if kind == "scalar":
        return made(Scalar, draw(any_name_st), draw(dtype_st))
    if kind == "stream":
        return made(EnvStream, draw(any_name_st))
    return draw(any_int_st)


@settings(
    deadline=None,
    database=None,
    max_examples=200,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(any_name_st, st.lists(any_param(), max_size=5), st.one_of(st.none(), st.text()))
def test_specs_are_made_or_refused_and_emit(name: Any, params: list[Any], doc: Any) -> None:
    params = [p for p in params if p is not None]
    sig = made(Signature, name, params, doc=doc)
    if sig is None:
        return
    # A spec that was made emits C (ASCII: every name and text is escaped) and metadata.
    text = emit_c(sig, f"{sig.name}_k")
    assert text.isascii()
    meta = json.loads(_emit.metadata_json(sig, f"{sig.name}_k"))
    assert [p["name"] for p in meta["params"]] == [p.name for p in sig.params]
    assert [v["name"] for v in meta["vars"]] == [v.name for v in sig.vars]
    for v in sig.vars:
        assert v.divisibility is None or 1 <= v.divisibility < 2**63
    for t in sig.tensors:
        assert t.data_alignment is None or 1 <= t.data_alignment < 2**63
        for d in (*t.shape, *(t.strides or ())):
            assert isinstance(d, Var) or -(2**63) <= d < 2**63


# ---- codegen specs: built and called ---------------------------------------------------
VAR_VALUES = {None: [1, 2, 3], 1: [1, 2], 2: [2, 4], 3: [3, 6], 2**62: [0], 2**63 - 1: [0]}


@st.composite
def runnable(draw: Any, index: int) -> tuple[Signature, dict[str, int]]:
    """A valid signature (named from the headers too) and Var values that satisfy it."""
    names = draw(
        st.lists(
            name_st.filter(lambda n: made(Var, n) is not None), min_size=8, max_size=8, unique=True
        )
    )
    var_pool = [
        Var(
            n,
            draw(st.sampled_from(["int32", "int64", "uint16"])),
            divisibility=draw(st.sampled_from(list(VAR_VALUES))),
        )
        for n in names[:3]
    ]
    values = {v.name: draw(st.sampled_from(VAR_VALUES[v.divisibility])) for v in var_pool}
    params: list[Any] = []
    for pname in names[3:]:
        if draw(st.booleans()):
            params.append(Scalar(pname, draw(st.sampled_from(["int32", "int64", "float64"]))))
            continue
        shape = draw(st.lists(st.one_of(st.sampled_from(var_pool), st.integers(0, 3)), max_size=3))
        # (2**62 is refused at call time even for an empty array: test_codegen_names.)
        align = draw(st.sampled_from([None, 1, 4]))
        params.append(
            Tensor(
                pname,
                shape,
                draw(st.sampled_from(["int8", "float32", "int64"])),
                data_alignment=align,
            )
        )
    doc = draw(st.text(max_size=20))
    return Signature(f"prop{index}", params, doc=doc), values


def call_args(sig: Signature, values: dict[str, int]) -> list[Any]:
    out: list[Any] = []
    for p in sig.ffi_params:
        if isinstance(p, Scalar):
            out.append(3 if p.dtype != "float64" else 2.5)
        else:
            dims = [d if isinstance(d, int) else values[d.name] for d in p.shape]
            out.append(
                np.zeros(dims, {"int8": np.int8, "float32": np.float32, "int64": np.int64}[p.dtype])
            )
    return out


@BUILDS
@given(cases=st.tuples(runnable(0), runnable(1), runnable(2)))
def test_random_valid_specs_build_and_run(
    cases: tuple[tuple[Signature, dict[str, int]], ...], tmp_path_factory: pytest.TempPathFactory
) -> None:
    sigs = [sig for sig, _ in cases]
    source = "#include <stdbool.h>\n#include <stdint.h>\n"
    for sig in sigs:
        params = [f"{ctype} p{i}" for i, (ctype, _) in enumerate(_emit._kernel_params(sig))]
        source += f"int {sig.name}_k({', '.join(params) or 'void'}) {{ return 0; }}\n"
    mod = codegen.build(
        [(s, f"{s.name}_k") for s in sigs],
        sources=[source],
        name="props",
        output_dir=tmp_path_factory.mktemp("props_build"),
        extra_cflags=["-O0", "-Wno-unused-parameter"],
    )
    for sig, values in cases:
        func = mod[sig.name]
        args = call_args(sig, values)
        assert func(*args) is None
        expected_doc = sig.doc.encode("utf-8", "backslashreplace").decode("utf-8")
        assert mod.get_function_doc(sig.name) == expected_doc
        with pytest.raises(TypeError, match=f"Expects {len(args)} arguments"):
            func(*args, 0)
        tensors = [i for i, p in enumerate(sig.ffi_params) if isinstance(p, Tensor)]
        if not tensors:
            continue
        i = tensors[-1]
        bad = list(args)
        bad[i] = np.expand_dims(args[i], 0)
        with pytest.raises(ValueError, match=f"Parameter `{sig.ffi_params[i].name}` expects"):
            func(*bad)
