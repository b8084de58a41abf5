"""The ``__tvm_ffi__library_bin`` layout (tvmffi.codegen.library_bin) and embedded module libraries.

Layout tests are round-trip properties over many random import trees (fixed
seeds), malformed-array errors, and random corruption. Against the real
runtime: libraries compiled here carry arrays written by tvmffi, and the tree
the runtime rebuilds when it loads them must be the tree that was written;
libraries embedding other module libraries (``tvmffi_dso``) load through
tvmffi and through the official binding with their imports in place.
"""

from __future__ import annotations

import contextlib
import gc
import io
import os
import random
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest

import tvmffi
from tvmffi import _embedded_loader as _loader
from tvmffi.codegen import _embed
from tvmffi.codegen.library_bin import (
    DSO_KIND,
    LIB_KEY,
    SYMBOL,
    LibraryBin,
    LibraryBinEntry,
    find_library_bin,
    read_library_bin,
)

U64 = 8


def u64(v: int) -> bytes:
    return v.to_bytes(8, "little")


# ---- random trees -------------------------------------------------------------
def random_kind(rng: random.Random) -> str:
    alphabet = "abcxyz_.09" + "\u00e9\u4e2d"
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12)))


def random_bin(rng: random.Random, max_modules: int = 12) -> LibraryBin:
    """A random valid bin: random kinds/payloads/_lib entries, random DAG of imports.

    Edges only go from earlier to later nodes of a random order, so there is no
    cycle, but child indices can be lower than their parent's, shared children
    and repeated imports of one child occur, and some nodes are unreachable.
    """
    n = rng.randint(1, max_modules)
    entries = []
    for _ in range(n):
        if rng.random() < 0.25:
            entries.append(LibraryBinEntry(LIB_KEY))
        else:
            size = rng.choice([0, 1, 7, 8, 9, rng.randint(0, 300)])
            entries.append(LibraryBinEntry(random_kind(rng), rng.randbytes(size)))
    order = list(range(n))
    rng.shuffle(order)
    imports: list[list[int]] = [[] for _ in range(n)]
    for pos, node in enumerate(order):
        later = order[pos + 1 :]
        for _ in range(rng.randint(0, 3) if later else 0):
            imports[node].append(rng.choice(later))
    return LibraryBin.from_imports(entries, imports)


def reference_encoding(b: LibraryBin) -> bytes:
    """The layout written out field by field, independently of LibraryBin.to_bytes."""
    body = u64(len(b.indptr)) + b"".join(u64(v) for v in b.indptr)
    body += u64(len(b.child_indices)) + b"".join(u64(v) for v in b.child_indices)
    for e in b.entries:
        key = e.kind.encode()
        body += u64(len(key)) + key
        if e.kind != LIB_KEY:
            assert e.payload is not None
            body += u64(len(e.payload)) + e.payload
    return u64(len(body)) + body


@pytest.mark.parametrize("seed", range(20))
def test_round_trip_random_trees(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(25):
        b = random_bin(rng)
        data = b.to_bytes()
        assert data == reference_encoding(b)
        assert int.from_bytes(data[:8], "little") == len(data) - 8
        back = LibraryBin.from_bytes(data)
        assert back == b
        assert back.to_bytes() == data
        for i in range(len(b.entries)):
            assert back.imports_of(i) == b.child_indices[b.indptr[i] : b.indptr[i + 1]]


def test_from_imports_builds_csr() -> None:
    e = [LibraryBinEntry(LIB_KEY), LibraryBinEntry("a", b"1"), LibraryBinEntry("b", b"")]
    b = LibraryBin.from_imports(e, [[2, 1], [2]])
    assert b.indptr == (0, 2, 3, 3)
    assert b.child_indices == (2, 1, 2)
    assert b.imports_of(0) == (2, 1)
    assert b.imports_of(2) == ()
    assert b.root.is_lib
    assert "imports 2, 1 (root)" in b.describe()
    with pytest.raises(IndexError):
        b.imports_of(3)


def test_byte_layout_of_known_tree() -> None:
    b = LibraryBin.from_imports([LibraryBinEntry(LIB_KEY), LibraryBinEntry("k", b"xy")], [[1]])
    body = (
        u64(3)
        + u64(0)
        + u64(1)
        + u64(1)  # indptr [0, 1, 1]
        + u64(1)
        + u64(1)  # child_indices [1]
        + u64(4)
        + b"_lib"
        + u64(1)
        + b"k"
        + u64(2)
        + b"xy"
    )
    assert b.to_bytes() == u64(len(body)) + body


# ---- invalid trees and entries -----------------------------------------------
LIB = LibraryBinEntry(LIB_KEY)
K = LibraryBinEntry("k", b"")


@pytest.mark.parametrize(
    ("entries", "indptr", "children", "match"),
    [
        ((), (0,), (), "at least one module"),
        ((LIB,), (0,), (), "indptr has 1 items"),
        ((LIB, K), (1, 1, 1), (0,), r"indptr\[0\] must be 0"),
        ((LIB, K), (0, 1, 0), (1,), "indptr decreases at 2"),
        ((LIB, K), (0, 1, 1), (), r"indptr\[-1\] is 1 but there are 0"),
        ((LIB, K), (0, 1, 1), (2,), r"child_indices\[0\] = 2 names no module"),
        ((LIB,), (0, 1), (0,), "import cycle: module 0 imports module 0"),
        ((LIB, K, K), (0, 1, 2, 3), (1, 2, 1), "import cycle"),
        ((LIB,), (0, -1), (), r"indptr\[1\] must be an int"),
        ((LIB,), (0, 1 << 64), (), r"indptr\[1\] must be an int"),
        ((LIB,), (0, True), (), r"indptr\[1\] must be an int"),
    ],
)
def test_invalid_tree(entries: Any, indptr: Any, children: Any, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        LibraryBin(entries, indptr, children)


def test_invalid_entries() -> None:
    with pytest.raises(ValueError, match="carries no payload"):
        LibraryBinEntry(LIB_KEY, b"x")
    with pytest.raises(ValueError, match="needs a bytes payload"):
        LibraryBinEntry("k")
    with pytest.raises(ValueError, match="non-empty str"):
        LibraryBinEntry("", b"")
    with pytest.raises(ValueError, match=r"entries\[0\] must be a LibraryBinEntry"):
        LibraryBin(("_lib",), (0, 0))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="imports has 2 lists"):
        LibraryBin.from_imports([LIB], [[], []])
    assert LibraryBinEntry("k", bytearray(b"ab")).payload == b"ab"


# ---- malformed arrays -----------------------------------------------------------
def blob(body: bytes) -> bytes:
    return u64(len(body)) + body


GOOD_TREE = u64(2) + u64(0) + u64(0) + u64(0)  # one module, no imports


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (b"", "truncated nbytes at offset 0"),
        (b"\x01\x00", "truncated nbytes at offset 0"),
        (u64(5) + b"abc", "nbytes at offset 0 says 5 bytes follow, but 3 do"),
        (blob(b""), "truncated length of import tree indptr at offset 8"),
        (blob(u64(0)), "indptr at offset 8 is empty"),
        (blob(u64(2) + u64(0)), "import tree indptr at offset 8 declares 2 u64 values"),
        (blob(u64(1 << 62)), "declares 4611686018427387904 u64 values"),
        (
            blob(u64(2) + u64(0) + u64(0)),
            "truncated length of import tree child_indices at offset 32",
        ),
        (blob(GOOD_TREE), "truncated length of key of module 0 at offset 40"),
        (blob(GOOD_TREE + u64(9) + b"abc"), "key of module 0 at offset 40 declares 9 bytes"),
        (blob(GOOD_TREE + u64(0)), "key of module 0 at offset 40 is empty"),
        (blob(GOOD_TREE + u64(2) + b"\xff\xfe"), "key of module 0 at offset 40 is not UTF-8"),
        (blob(GOOD_TREE + u64(1) + b"k"), r"truncated length of payload of module 0 \(k\)"),
        (blob(GOOD_TREE + u64(1) + b"k" + u64(3) + b"x"), "payload of module 0"),
        (blob(GOOD_TREE + u64(4) + b"_lib" + b"zz"), "2 unread bytes at offset 52"),
        (blob(u64(2) + u64(0) + u64(1) + u64(1) + u64(0) + u64(4) + b"_lib"), "import cycle"),
        (blob(u64(2) + u64(0) + u64(1) + u64(1) + u64(5) + u64(4) + b"_lib"), "names no module"),
    ],
)
def test_malformed_array(data: bytes, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        LibraryBin.from_bytes(data)


@pytest.mark.parametrize("seed", range(5))
def test_corrupted_arrays_raise_only_value_error(seed: int) -> None:
    rng = random.Random(1000 + seed)
    for _ in range(200):
        data = bytearray(random_bin(rng, 5).to_bytes())
        how = rng.randrange(3)
        if how == 0:
            del data[rng.randrange(len(data)) :]
        elif how == 1:
            for _ in range(rng.randint(1, 4)):
                data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        else:
            data += rng.randbytes(rng.randint(1, 9))
        try:
            parsed = LibraryBin.from_bytes(bytes(data))
        except ValueError as err:
            assert str(err).startswith("library bin:")
        else:  # a flip that still parses must re-encode to the same bytes
            assert parsed.to_bytes() == bytes(data)


# ---- compiling libraries ----------------------------------------------------------
INNER_C = r"""
#include <tvm/ffi/c_api.h>
#define EXPORT __attribute__((visibility("default")))
EXPORT int __tvm_ffi_%(name)s(void* self, const TVMFFIAny* args, int32_t n, TVMFFIAny* result) {
  (void)self;
  if (n != 1 || args[0].type_index != kTVMFFIInt) {
    TVMFFIErrorSetRaisedFromCStr("TypeError", "%(name)s expects one int");
    return -1;
  }
  result->type_index = kTVMFFIInt;
  result->zero_padding = 0;
  result->v_int64 = args[0].v_int64 * %(factor)d + %(offset)d;
  return 0;
}
"""

NOSYM_C = "int plain_helper(int x);\nint plain_helper(int x) { return x + 1; }\n"


def cc() -> str:
    for name in ("cc", "gcc", "clang"):
        found = shutil.which(name)
        if found:
            return found
    pytest.skip("no C compiler")


def wheel_dirs() -> tuple[str, str]:
    lib_dir = os.path.dirname(tvmffi.lib_path())
    return os.path.realpath(os.path.join(lib_dir, "..", "include")), lib_dir


class Builder:
    """Compiles C sources into shared libraries (or objects) under one directory."""

    def __init__(self, out_dir: str) -> None:
        self.out_dir = out_dir

    def compile(self, name: str, *sources: str, link: bool = True, shared: bool = True) -> str:
        include_dir, lib_dir = wheel_dirs()
        files = []
        for i, text in enumerate(sources):
            src = os.path.join(self.out_dir, f"{name}_{i}.c")
            with open(src, "w") as f:
                f.write(text)
            files.append(src)
        out = os.path.join(self.out_dir, f"lib{name}.so" if shared else f"{name}.o")
        cmd = [cc(), "-std=c11", "-Wall", "-Wextra", "-Werror", "-fPIC", "-O1", "-I", include_dir]
        cmd += (
            ["-shared", "-fvisibility=hidden", "-o", out, *files]
            if shared
            else ["-c", "-o", out, *files]
        )
        if link and shared:
            cmd += [f"-L{lib_dir}", "-ltvm_ffi", f"-Wl,-rpath,{lib_dir}"]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stderr}"
        return out

    def inner(self, name: str, factor: int = 2, offset: int = 0) -> str:
        text = INNER_C % {"name": name, "factor": factor, "offset": offset}
        return self.compile(f"inner_{name}", text)

    def outer(self, name: str, embed: list[str], *own_sources: str) -> str:
        return self.compile(name, *own_sources, _embed.library_bin_c_source(embed))


@pytest.fixture(scope="module")
def builder(tmp_path_factory: pytest.TempPathFactory) -> Builder:
    cc()
    return Builder(str(tmp_path_factory.mktemp("library_bin")))


@pytest.fixture()
def private_tmp(tmp_path: Any) -> Iterator[str]:
    """Point tempfile (used by the tvmffi_dso loader) at an empty private directory."""
    d = tmp_path / "loader_tmp"
    d.mkdir()
    saved = tempfile.tempdir
    tempfile.tempdir = str(d)
    try:
        yield str(d)
    finally:
        tempfile.tempdir = saved


def handle(m: Any) -> int:
    if isinstance(m, tvmffi.Object):
        return m.__chandle__()
    return int(m.__chandle__())


# ---- the runtime reads what we write ----------------------------------------------
TEST_KIND = "tvmffi_test_bin_kind"


@pytest.fixture()
def recording_loader(builder: Builder) -> Iterator[list[tuple[bytes, int]]]:
    """Register a loader for TEST_KIND that records (payload, module handle) per call."""
    leaf = builder.inner("leaf", 5, 1)
    calls: list[tuple[bytes, int]] = []
    keep: list[tvmffi.Module] = []

    def load(payload: bytes) -> tvmffi.Module:
        mod = tvmffi.load_module(leaf)  # a fresh module object on every call
        keep.append(mod)
        calls.append((payload, mod.__chandle__()))
        return mod

    name = "ffi.Module.load_from_bytes." + TEST_KIND
    tvmffi.register_global_func(name, load, override=True)
    yield calls
    tvmffi.get_global_func("ffi.FunctionRemoveGlobal")(name)


@pytest.mark.parametrize("seed", range(8))
def test_runtime_rebuilds_the_written_tree(
    builder: Builder, recording_loader: list[tuple[bytes, int]], seed: int
) -> None:
    rng = random.Random(seed)
    shape = random_bin(rng, 7)
    # Same tree, with every custom entry of our recorded kind and a unique payload.
    entries = [
        e if e.is_lib else LibraryBinEntry(TEST_KIND, f"node{i}".encode() + rng.randbytes(3))
        for i, e in enumerate(shape.entries)
    ]
    b = LibraryBin(tuple(entries), shape.indptr, shape.child_indices)
    path = builder.compile(f"tree{seed}", _embed.library_bin_to_c(b))
    assert read_library_bin(path) == b

    root = tvmffi.load_module(path)
    payloads = [e.payload for e in b.entries if not e.is_lib]
    assert [p for p, _ in recording_loader] == payloads  # each module loaded once, in order
    custom = {p: h for p, h in recording_loader}

    assigned: dict[int, int] = {}  # entry index -> module handle
    stack: list[tuple[int, Any]] = [(0, root)]
    while stack:
        index, mod = stack.pop()
        if index in assigned:
            assert assigned[index] == handle(mod)
            continue
        assigned[index] = handle(mod)
        entry = b.entries[index]
        if entry.is_lib:
            assert handle(mod) not in custom.values()
        else:
            assert entry.payload is not None
            assert handle(mod) == custom[entry.payload]
        imports = mod.imports
        assert len(imports) == len(b.imports_of(index))
        for child, child_mod in zip(b.imports_of(index), imports, strict=True):
            stack.append((child, child_mod))
    if not b.root.is_lib:  # a custom root is what load_module returns
        assert b.root.payload is not None
        assert handle(root) == custom[b.root.payload]


def test_unknown_kind_reports_missing_loader(builder: Builder) -> None:
    b = LibraryBin.from_imports(
        [LibraryBinEntry(LIB_KEY), LibraryBinEntry("tvmffi_no_such_kind", b"x")], [[1]]
    )
    path = builder.compile("unknown_kind", _embed.library_bin_to_c(b))
    with pytest.raises(ValueError, match=r"ffi\.Module\.load_from_bytes\.tvmffi_no_such_kind"):
        tvmffi.load_module(path)


# ---- reading arrays out of files ---------------------------------------------------
def test_find_library_bin_in_shared_library_and_object(builder: Builder) -> None:
    b = LibraryBin.from_imports([LibraryBinEntry(LIB_KEY), LibraryBinEntry("k", b"\0" * 33)], [[1]])
    source = _embed.library_bin_to_c(b, comment="a */ comment\nwith a newline")
    so = builder.compile("find_so", source, link=False)
    obj = builder.compile("find_o", source, shared=False)
    assert find_library_bin(so) == b.to_bytes()
    assert find_library_bin(obj) == b.to_bytes()
    assert read_library_bin(obj) == b
    plain = builder.inner("plain")
    assert find_library_bin(plain) is None
    assert read_library_bin(plain) is None


def test_find_library_bin_bad_files(builder: Builder, tmp_path: Any) -> None:
    text = tmp_path / "notelf.so"
    text.write_bytes(b"hello, not a library")
    with pytest.raises(ValueError, match=r"notelf\.so is not an ELF file"):
        find_library_bin(text)
    with pytest.raises(FileNotFoundError):
        find_library_bin(tmp_path / "missing.so")
    # A library whose array is corrupt: the error names the file and the field.
    bad = (
        '__attribute__((visibility("default"))) const unsigned char %s[16] = {8,0,0,0,0,0,0,0,0};\n'
    )
    path = builder.compile("corrupt", bad % SYMBOL, link=False)
    with pytest.raises(
        ValueError, match=r"libcorrupt\.so: library bin: import tree indptr at offset 8 is empty"
    ):
        read_library_bin(path)
    short = '__attribute__((visibility("default"))) const unsigned char %s[9] = {200};\n'
    path = builder.compile("short", short % SYMBOL, link=False)
    with pytest.raises(ValueError, match="says 200 bytes follow its header but the symbol holds 1"):
        find_library_bin(path)


# ---- load_module validates the array the runtime trusts ---------------------------------
EXPORTED_FN = r"""
__attribute__((visibility("default"))) int __tvm_ffi_f(void* s, const TVMFFIAny* a, int32_t n,
                                                       TVMFFIAny* r) {
  (void)s; (void)a; (void)n;
  r->type_index = kTVMFFINone;
  return 0;
}
"""

TWO_LIBS = u64(4) + b"_lib" + u64(4) + b"_lib"


def library_with_bin(builder: Builder, name: str, data: bytes) -> str:
    """A module library exporting one function and ``data`` as its library bin."""
    array = ",".join(str(b) for b in data) or "0"
    source = (
        "#include <tvm/ffi/c_api.h>\n"
        f'__attribute__((visibility("default"))) const unsigned char {SYMBOL}[{max(len(data), 1)}]'
        f" = {{{array}}};\n" + EXPORTED_FN
    )
    return builder.compile(name, source)


@pytest.mark.parametrize(
    ("name", "data", "match"),
    [
        # Module 0 imports module 5 of 2 (the runtime checks this one itself).
        (
            "oor",
            blob(u64(3) + u64(0) + u64(1) + u64(1) + u64(1) + u64(5) + TWO_LIBS),
            r"child_indices\[0\] = 5 names no module",
        ),
        # 0 imports 1 imports 0: the runtime's import lookup would recurse forever.
        (
            "cycle",
            blob(u64(3) + u64(0) + u64(1) + u64(2) + u64(2) + u64(1) + u64(0) + TWO_LIBS),
            "import cycle: module 1 imports module 0",
        ),
        # indptr ends past the child list: the runtime would read past the array.
        (
            "indptr",
            blob(u64(2) + u64(0) + u64(7) + u64(0) + u64(4) + b"_lib"),
            r"indptr\[-1\] is 7 but there are 0 child_indices",
        ),
        # A key longer than the array.
        (
            "key",
            blob(u64(2) + u64(0) + u64(0) + u64(0) + u64(1 << 40) + b"_lib"),
            "key of module 0 at offset 40 declares 1099511627776 bytes",
        ),
        # nbytes past the symbol.
        ("nbytes", u64(1 << 50) + u64(0), "says 1125899906842624 bytes follow its header"),
    ],
)
def test_load_module_rejects_corrupt_library_bin(
    builder: Builder, name: str, data: bytes, match: str
) -> None:
    path = library_with_bin(builder, f"corrupt_{name}", data)
    expected = rf"cannot load module from .*libcorrupt_{name}\.so: .*{match}"
    with pytest.raises(ValueError, match=expected):
        tvmffi.load_module(path)
    # The command line tool says the same in one line, without a traceback.
    from tvmffi.__main__ import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        assert main(["inspect", path]) == 1
    assert err.getvalue().startswith("error: cannot load module from")
    assert "Traceback" not in err.getvalue()
    # Given as a bare name (from its directory), the file checked is the file loaded.
    cwd = os.getcwd()
    os.chdir(os.path.dirname(path))
    try:
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            assert main(["inspect", os.path.basename(path)]) == 1
        assert err.getvalue().startswith("error: cannot load module from")
    finally:
        os.chdir(cwd)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="dlinfo tells the file (Linux)")
def test_bare_name_is_validated_too(builder: Builder) -> None:
    # A bare name goes down the dynamic loader's search path (LD_LIBRARY_PATH is
    # read at process start, hence a child process); the file it picks is checked.
    cycle = blob(u64(3) + u64(0) + u64(1) + u64(2) + u64(2) + u64(1) + u64(0) + TWO_LIBS)
    bad = library_with_bin(builder, "bare_cycle", cycle)
    good = library_with_bin(
        builder, "bare_ok", blob(u64(2) + u64(0) + u64(0) + u64(0) + u64(4) + b"_lib")
    )
    code = (
        "import tvmffi\n"
        "try:\n"
        "    tvmffi.load_module('libbare_cycle.so')\n"
        "except ValueError as err:\n"
        "    print('refused:', err)\n"
        "print('loaded:', tvmffi.load_module('libbare_ok.so').f() is None)\n"
    )
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.dirname(bad))
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert f"refused: cannot load module from {bad}: library bin: import cycle" in proc.stdout
    assert "loaded: True" in proc.stdout
    assert os.path.dirname(good) == os.path.dirname(bad)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the loader's mapping (Linux)")
def test_tree_checked_is_the_mapped_one_not_the_file_replaced_since(builder: Builder) -> None:
    # Issue 32: a path already mapped (here by ctypes, which checks nothing) and then
    # replaced on disk is not mapped again: the runtime walks the old mapping. The check
    # must read that mapping, not the new file (which was valid: a segfault followed).
    cycle = blob(u64(3) + u64(0) + u64(1) + u64(2) + u64(2) + u64(1) + u64(0) + TWO_LIBS)
    bad = library_with_bin(builder, "mapped_cycle", cycle)
    good = library_with_bin(
        builder, "mapped_ok", blob(u64(2) + u64(0) + u64(0) + u64(0) + u64(4) + b"_lib")
    )
    code = (
        "import ctypes, os, shutil, sys, tvmffi\n"
        "bad, good = sys.argv[1:]\n"
        "ctypes.CDLL(bad)  # mapped, unchecked\n"
        "os.replace(shutil.copy(good, bad + '.new'), bad)  # a valid file on disk now\n"
        "try:\n"
        "    tvmffi.load_module(bad)\n"
        "except ValueError as err:\n"
        "    print('refused:', err)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, bad, good], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert "refused: cannot load module from" in proc.stdout
    assert "library bin: import cycle" in proc.stdout


def test_load_module_accepts_a_valid_library_bin(builder: Builder) -> None:
    # Module 0 (the library) imports module 1 (the library again): a valid tree.
    data = blob(u64(3) + u64(0) + u64(1) + u64(1) + u64(1) + u64(1) + TWO_LIBS)
    mod = tvmffi.load_module(library_with_bin(builder, "valid_bin", data))
    assert len(mod.imports) == 1
    with pytest.raises(AttributeError):  # missing: AttributeError, as official
        mod.get_function("missing", query_imports=True)
    assert mod.get_function("f", query_imports=True) is not None


def test_corrupt_nested_library_bin_is_rejected(builder: Builder, private_tmp: str) -> None:
    # The corrupt tree sits in a library embedded in another: the embedded loader
    # validates it as load_module does, and the outer load fails cleanly.
    cycle = blob(u64(3) + u64(0) + u64(1) + u64(2) + u64(2) + u64(1) + u64(0) + TWO_LIBS)
    inner = library_with_bin(builder, "nested_cycle", cycle)
    outer = builder.outer("outer_of_cycle", [inner])
    with pytest.raises(ValueError, match="import cycle: module 1 imports module 0"):
        tvmffi.load_module(outer)


# ---- embedding module libraries ------------------------------------------------------
def test_embed_validates_paths(builder: Builder, tmp_path: Any) -> None:
    missing = str(tmp_path / "nope.so")
    with pytest.raises(FileNotFoundError, match=r"nope\.so"):
        _embed.library_bin_c_source([missing])
    text = tmp_path / "text.so"
    text.write_text("not a library")
    with pytest.raises(ValueError, match=r"text\.so is not a shared library"):
        _embed.library_bin_c_source([text])
    obj = builder.compile("an_object", NOSYM_C, shared=False)
    with pytest.raises(ValueError, match=r"an_object\.o is not a shared library \(ELF type 1"):
        _embed.library_bin_c_source([obj])
    nosym = builder.compile("nosym", NOSYM_C, link=False)
    with pytest.raises(ValueError, match=r"libnosym\.so exports no __tvm_ffi_ symbols"):
        _embed.library_bin_c_source([nosym])
    with pytest.raises(ValueError, match="is a directory"):
        _embed.library_bin_c_source([str(tmp_path)])
    inner = builder.inner("twice")
    with pytest.raises(ValueError, match="embedded twice"):
        _embed.library_bin_c_source(
            [inner, os.path.join(os.path.dirname(inner), ".", os.path.basename(inner))]
        )
    with pytest.raises(TypeError, match="single path"):
        _embed.library_bin_c_source(inner)


def test_embed_layout(builder: Builder) -> None:
    a, b = builder.inner("la"), builder.inner("lb")
    tree = _embed.embed_library_bin([a, b])
    assert [e.kind for e in tree.entries] == [LIB_KEY, DSO_KIND, DSO_KIND]
    assert tree.imports_of(0) == (1, 2)
    with open(a, "rb") as f:
        assert tree.entries[1].payload == f.read()
    assert _embed.embed_library_bin([]).entries == (LibraryBinEntry(LIB_KEY),)


def test_inspect_shows_the_embedded_tree(builder: Builder) -> None:
    from tvmffi.__main__ import main

    outer = builder.outer("shown", [builder.inner("shown_inner")])
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["inspect", outer]) == 0
    text = out.getvalue()
    assert "embedded modules (2 in __tvm_ffi__library_bin):" in text
    assert "[0] _lib: library symbols; imports 1 (root)" in text
    assert f"[1] {DSO_KIND}: " in text
    plain = builder.inner("not_embedding")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["inspect", plain]) == 0
    assert "embedded modules" not in out.getvalue()


def test_loader_registered() -> None:
    assert _loader.LOADER_NAME == "ffi.Module.load_from_bytes." + DSO_KIND
    assert tvmffi.get_global_func(_loader.LOADER_NAME, True) is not None
    assert _loader.register() is False  # already there: never replaced


def test_one_embedded_module(builder: Builder, private_tmp: str, tvm_ffi: Any) -> None:
    inner = builder.inner("triple", 3)
    outer = builder.outer("one", [inner])
    mod = tvmffi.load_module(outer)
    assert os.listdir(private_tmp) == []  # the temp copy is unlinked once loaded
    assert len(mod.imports) == 1
    assert mod.imports[0].kind == "library"
    with pytest.raises(AttributeError):  # missing: AttributeError, as official
        mod.get_function("triple")
    f = mod.get_function("triple", query_imports=True)
    assert f is not None and f(7) == 21
    assert mod.implements_function("triple", query_imports=True)
    with pytest.raises(TypeError, match="triple expects one int"):
        f("x")
    del mod
    gc.collect()
    assert f(2) == 6  # the function keeps its (embedded) module alive

    official = tvm_ffi.load_module(outer)
    assert len(official.imports) == 1
    g = official.get_function("triple", query_imports=True)
    assert g(5) == 15
    assert os.listdir(private_tmp) == []


def test_two_embedded_modules(builder: Builder, tvm_ffi: Any) -> None:
    a, b = builder.inner("twice_a", 2), builder.inner("plus_b", 1, 100)
    mod = tvmffi.load_module(builder.outer("two", [a, b]))
    assert len(mod.imports) == 2
    assert mod.imports[0].get_function("twice_a") is not None
    assert mod.imports[1].get_function("plus_b") is not None
    assert mod.get_function("twice_a", query_imports=True)(4) == 8
    assert mod.get_function("plus_b", query_imports=True)(4) == 104
    official = tvm_ffi.load_module(builder.outer("two_b", [b, a]))
    assert official.get_function("plus_b", query_imports=True)(1) == 101
    assert official.imports[0].get_function("plus_b") is not None


def test_outer_with_own_functions(builder: Builder, tvm_ffi: Any) -> None:
    inner = builder.inner("emb", 10)
    own = INNER_C % {"name": "own", "factor": 1, "offset": 42}
    outer = builder.outer("own", [inner], own)
    for load in (tvmffi.load_module, tvm_ffi.load_module):
        mod = load(outer)
        assert mod.get_function("own")(0) == 42  # the root is the outer library itself
        assert not mod.implements_function("emb")  # only through the imports
        assert mod.implements_function("emb", True)
        assert mod.get_function("emb", query_imports=True)(3) == 30
        assert mod.get_function("own", query_imports=True)(1) == 43


def test_nested_embedding(builder: Builder) -> None:
    inner = builder.inner("deep", 7)
    middle = builder.outer("middle", [inner], INNER_C % {"name": "mid", "factor": 1, "offset": 1})
    top = builder.outer("top", [middle])
    mod = tvmffi.load_module(top)
    assert mod.get_function("mid", query_imports=True)(1) == 2
    assert mod.get_function("deep", query_imports=True)(2) == 14
    assert len(mod.imports[0].imports) == 1


def test_empty_embed_list_loads(builder: Builder) -> None:
    own = INNER_C % {"name": "alone", "factor": 1, "offset": 0}
    mod = tvmffi.load_module(builder.outer("alone", [], own))
    assert mod.imports == []
    assert mod.get_function("alone")(9) == 9


def test_embedded_copies_are_independent(builder: Builder) -> None:
    # Same inner embedded by two outers: each load gets its own library instance.
    inner = builder.inner("shared_inner", 4)
    m1 = tvmffi.load_module(builder.outer("copy1", [inner]))
    m2 = tvmffi.load_module(builder.outer("copy2", [inner]))
    assert handle(m1.imports[0]) != handle(m2.imports[0])
    assert m1.get_function("shared_inner", True)(1) == m2.get_function("shared_inner", True)(1) == 4


def test_loader_rejects_bad_payload(builder: Builder, private_tmp: str) -> None:
    loader = tvmffi.get_global_func(_loader.LOADER_NAME)
    with pytest.raises(
        ValueError, match=r"tvmffi_dso payload \(4 bytes, .*\) is not a shared library"
    ):
        loader(b"junk")
    with pytest.raises(TypeError, match="payload must be bytes"):
        _loader.load_dso_from_bytes("text")  # type: ignore[arg-type]
    # Through the runtime: an outer whose embedded payload is not a library.
    b = LibraryBin.from_imports(
        [LibraryBinEntry(LIB_KEY), LibraryBinEntry(DSO_KIND, b"\0" * 8)], [[1]]
    )
    path = builder.compile("badpayload", _embed.library_bin_to_c(b))
    with pytest.raises(ValueError, match="is not a shared library"):
        tvmffi.load_module(path)
    # ELF magic but not loadable: dlopen's error comes back, the temp file is gone.
    b = LibraryBin.from_imports(
        [LibraryBinEntry(LIB_KEY), LibraryBinEntry(DSO_KIND, b"\x7fELF" + b"\0" * 60)], [[1]]
    )
    path = builder.compile("badelf", _embed.library_bin_to_c(b))
    with pytest.raises(ValueError, match="cannot load the embedded tvmffi_dso module"):
        tvmffi.load_module(path)
    assert os.listdir(private_tmp) == []


@pytest.mark.parametrize("lang", ["c", "c++"])
def test_c_source_compiles_pedantic(builder: Builder, lang: str) -> None:
    inner = builder.inner("ped")
    source = _embed.library_bin_c_source([inner])
    assert f"const unsigned char {SYMBOL}[" in source
    src = os.path.join(builder.out_dir, f"pedantic_{lang}.c")
    with open(src, "w") as f:
        f.write(source)
    out = os.path.join(builder.out_dir, f"libpedantic_{lang}.so")
    if lang == "c":
        cmd = [cc(), "-std=c11"]
    else:  # the same text inside a C++ (or .cu) translation unit keeps C linkage
        cxx = shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")
        if cxx is None:
            pytest.skip("no C++ compiler")
        cmd = [cxx, "-std=c++17", "-x", "c++"]
    cmd += ["-Wall", "-Wextra", "-Werror", "-pedantic", "-fPIC", "-shared"]
    cmd += ["-fvisibility=hidden", "-o", out, src]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert read_library_bin(out) == _embed.embed_library_bin([inner])
    assert tvmffi.load_module(out).get_function("ped", query_imports=True)(4) == 8
