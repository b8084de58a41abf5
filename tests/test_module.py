"""Modules: loading libraries, the system library, lookups, metadata, errors, CLI."""

from __future__ import annotations

import ctypes
import gc
import json
import os
import subprocess
import sys
from typing import Any

import pytest

import tvmffi
import tvmffi.testing

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "module_fixtures"))
import fixture_build

# Subprocesses import the same tvmffi as this test run (installed, or src/).
SRC = os.path.dirname(os.path.dirname(os.path.abspath(tvmffi.__file__)))


@pytest.fixture(scope="session")
def fixture_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    if fixture_build.compiler("cc") is None:
        pytest.skip("no C compiler")
    return str(tmp_path_factory.mktemp("modules"))


@pytest.fixture(scope="session")
def plain_path(fixture_dir: str) -> str:
    return fixture_build.build("plain", fixture_dir)


@pytest.fixture(scope="session")
def cpp_path(fixture_dir: str) -> str:
    if fixture_build.compiler("c++") is None:
        pytest.skip("no C++ compiler")
    return fixture_build.build("cpp", fixture_dir)


@pytest.fixture(scope="session")
def syslib_loaded(fixture_dir: str) -> ctypes.CDLL:
    path = fixture_build.build("syslib", fixture_dir)
    return ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)


@pytest.fixture(scope="session")
def nosym_path(fixture_dir: str) -> str:
    return fixture_build.build("nosym", fixture_dir)


@pytest.fixture()
def plain(plain_path: str) -> tvmffi.Module:
    return tvmffi.load_module(plain_path)


@pytest.fixture()
def cpp(cpp_path: str) -> tvmffi.Module:
    return tvmffi.load_module(cpp_path)


# ---- loading and basic lookups ---------------------------------------------------
def test_load_module_returns_module(plain: tvmffi.Module) -> None:
    assert isinstance(plain, tvmffi.Module)
    assert isinstance(plain, tvmffi.Object)
    assert plain.type_key == "ffi.Module"
    assert plain.kind == "library"
    assert "library" in repr(plain)


def test_load_module_pathlike(plain_path: str) -> None:
    import pathlib

    mod = tvmffi.load_module(pathlib.Path(plain_path))
    assert mod.add_int(2, 3) == 5


def test_getitem_and_attribute(plain: tvmffi.Module) -> None:
    f = plain["add_int"]
    assert isinstance(f, tvmffi.Function)
    assert f(1, 2) == 3
    assert plain.add_int(40, 2) == 42
    assert plain.add_int(-5, 5) == 0


def test_missing_function_errors(plain: tvmffi.Module) -> None:
    with pytest.raises(AttributeError, match="nope"):  # official: AttributeError, not KeyError
        plain["nope"]
    with pytest.raises(AttributeError, match="nope"):
        _ = plain.nope
    with pytest.raises(AttributeError):  # missing: AttributeError, as official
        plain.get_function("nope")
    assert not hasattr(plain, "nope")
    with pytest.raises(TypeError):
        plain.get_function(1)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        plain[1]  # type: ignore[index]


def test_lookup_cache(plain: tvmffi.Module) -> None:
    f1 = plain["add_int"]
    assert plain["add_int"] is f1
    assert plain.get_function("add_int") is f1
    a1 = plain.add_int
    assert plain.add_int is a1
    assert "add_int" in vars(plain)  # attribute hits go through the instance dict


def test_library_functions_are_resolved_on_first_use(plain_path: str) -> None:
    # load_module resolves nothing (it costs about what dlopen does, whatever
    # the library exports); `mod.name` asks the runtime once, then is an
    # instance-dict hit.
    mod = tvmffi.load_module(plain_path)
    assert not {"add_int", "add_one_f32", "raise_error"} & set(vars(mod))
    assert type(mod) is tvmffi.Module
    assert mod.add_int is mod["add_int"] is mod.get_function("add_int")
    assert "add_int" in vars(mod) and "raise_error" not in vars(mod)
    assert mod.add_int(20, 22) == 42
    # A name the file does not export: AttributeError, and nothing is cached.
    with pytest.raises(AttributeError, match="nope"):
        _ = mod.nope
    with pytest.raises(AttributeError, match="nope"):
        mod.get_function("nope")
    assert "nope" not in vars(mod)
    # Deleting or replacing the attribute is the instance's own business, as officially.
    mod.add_int = 5  # type: ignore[assignment,method-assign]
    assert mod.add_int == 5
    del mod.add_int
    assert mod.add_int(1, 1) == 2  # resolved again
    assert mod["add_int"](1, 1) == 2


def test_library_load_asks_the_loader_not_the_file(plain_path: str) -> None:
    # The loader's probe: a handle, the file it mapped, and the embedded module tree
    # as mapped (None: plain.c defines none); None for what the
    # loader would not map, FIFOs and directories included (never opened).
    from tvmffi import _core

    probe = _core._library_probe(plain_path)
    assert probe is not None
    handle, picked, has_library_bin = probe
    try:
        assert handle != 0 and has_library_bin is None
        if sys.platform.startswith("linux"):
            assert picked is not None and os.path.samefile(picked, plain_path)
    finally:
        _core._library_release(handle)
    assert _core._library_probe(__file__) is None  # not a library
    assert _core._library_probe(os.path.dirname(plain_path)) is None
    assert _core._library_probe(os.path.join(os.path.dirname(plain_path), "missing.so")) is None
    with pytest.raises(TypeError, match="str path"):
        _core._library_probe(b"x")  # type: ignore[arg-type]


def test_exported_names_never_shadow_module_attributes(fixture_dir: str) -> None:
    # clash.c exports kind and get_function: the attributes stay Module's own,
    # the functions are reached by item lookup.
    mod = tvmffi.load_module(fixture_build.build("clash", fixture_dir))
    assert mod.kind == "library"
    assert mod.get_function("answer")() == 42
    assert mod.answer() == 42
    assert mod["kind"]() == 1
    assert mod["get_function"]() == 2
    assert "kind" not in vars(mod) and "get_function" not in vars(mod)


def test_module_through_ffi_keeps_lazy_attributes(plain: tvmffi.Module) -> None:
    # A module handed back by a call is a plain Module: it resolves names on access.
    back = tvmffi.testing.echo(plain)
    assert "add_int" not in vars(back)
    assert back.add_int(2, 2) == 4
    assert "add_int" in vars(back)
    with pytest.raises(AttributeError, match="Module has no function 'nope'"):
        _ = back.nope


def test_module_functions_release_the_gil(plain_path: str) -> None:
    # A kernel looked up through the runtime's ffi.ModuleGetFunction builtin is an
    # ordinary Function: it releases the GIL by default, as the official binding's.
    mod = tvmffi.load_module(plain_path)
    assert mod["add_int"].release_gil is True
    assert mod.get_function("add_int", query_imports=True).release_gil is True


def test_cache_never_shadows_methods(plain: tvmffi.Module) -> None:
    # Names of Module methods stay methods even after item lookups.
    with pytest.raises(AttributeError):  # missing: AttributeError, as official
        plain.get_function("get_function")
    with pytest.raises(AttributeError):
        plain["kind"]
    assert plain.kind == "library"


def test_function_keeps_module_alive(plain_path: str) -> None:
    f = tvmffi.load_module(plain_path)["add_int"]
    gc.collect()
    assert f(2, 2) == 4


def test_implements_function(plain: tvmffi.Module) -> None:
    assert plain.implements_function("add_int")
    assert plain.implements_function("add_one_f32")
    assert not plain.implements_function("nope")
    assert "add_int" in plain
    assert "nope" not in plain


def test_property_mask(plain: tvmffi.Module) -> None:
    mask = plain.property_mask
    assert mask & tvmffi.ModulePropertyMask.RUNNABLE
    assert mask & tvmffi.ModulePropertyMask.BINARY_SERIALIZABLE


# ---- calls through the module ------------------------------------------------------
def test_add_int_type_error(plain: tvmffi.Module) -> None:
    with pytest.raises(TypeError, match="add_int expects"):
        plain.add_int(1.5, 2)


@pytest.mark.parametrize(
    ("index", "exc"),
    [
        (0, ValueError),
        (1, TypeError),
        (2, RuntimeError),
        (3, IndexError),
        (4, KeyError),
        (5, AttributeError),
        (6, NotImplementedError),
    ],
)
def test_error_kinds(plain: tvmffi.Module, index: int, exc: type[Exception]) -> None:
    with pytest.raises(exc, match=r"raised from plain\.c"):
        plain.raise_error(index)


def test_add_one_f32_numpy(plain: tvmffi.Module) -> None:
    np = pytest.importorskip("numpy")
    a = np.arange(4, dtype="float32")
    try:
        plain.add_one_f32(a)
    except TypeError:
        pytest.skip("tvmffi does not convert numpy arrays to tensors (yet)")
    np.testing.assert_array_equal(a, np.arange(4, dtype="float32") + 1)


def test_add_one_f32_official_tensor(plain: tvmffi.Module) -> None:
    np = pytest.importorskip("numpy")
    tvm_ffi = pytest.importorskip("tvm_ffi")
    a = np.zeros((2, 3), dtype="float32")
    t = tvm_ffi.from_dlpack(a)  # a kTVMFFITensor object
    plain.add_one_f32(t)
    plain["add_one_f32"](t)
    np.testing.assert_array_equal(a, np.full((2, 3), 2, dtype="float32"))


def test_add_one_f32_rejects_non_tensor(plain: tvmffi.Module) -> None:
    with pytest.raises(TypeError, match="expects a tensor"):
        plain.add_one_f32(1)


# ---- doc and metadata ----------------------------------------------------------------
def test_doc_and_metadata_plain(plain: tvmffi.Module) -> None:
    assert plain.get_function_doc("add_int") == "Add two integers.\n\nReturns a + b."
    meta = plain.get_function_metadata("add_int")
    assert meta is not None
    assert meta["origin"] == "plain.c"
    assert json.loads(meta["type_schema"])["type"] == "ffi.Function"  # a JSON string
    assert plain.get_function_signature("add_int") == "(int, int) -> int"
    assert plain.get_function_doc("add_one_f32") is None
    assert plain.get_function_metadata("add_one_f32") is None
    assert plain.get_function_signature("add_one_f32") is None


def test_cpp_module(cpp: tvmffi.Module) -> None:
    assert cpp.kind == "library"
    assert cpp.mul(6, 7) == 42
    assert cpp["greet"]("world") == "hello world"
    assert cpp.get_function_doc("mul") == "Multiply two integers."
    assert cpp.get_function_doc("greet") is None
    meta = cpp.get_function_metadata("greet")
    assert meta is not None
    assert json.loads(meta["type_schema"])["type"] == "ffi.Function"  # a JSON string
    assert cpp.get_function_signature("mul") == "(int, int) -> int"
    assert cpp.get_function_signature("greet") == "(ffi.String) -> ffi.String"
    with pytest.raises(ValueError, match="bad value 3"):
        cpp.fail(3)
    with pytest.raises(TypeError):
        cpp.mul("a", 2)


# ---- imports -------------------------------------------------------------------------
def test_imports(plain_path: str, cpp_path: str) -> None:
    a = tvmffi.load_module(plain_path)
    b = tvmffi.load_module(cpp_path)
    assert a.imports == []
    a.import_module(b)
    imports = a.imports
    assert len(imports) == 1
    assert isinstance(imports[0], tvmffi.Module)
    assert imports[0].same_as(b)
    with pytest.raises(AttributeError):  # missing: AttributeError, as official
        a.get_function("mul")
    assert not a.implements_function("mul")
    f = a.get_function("mul", query_imports=True)
    assert f is not None and f(2, 3) == 6
    assert a.implements_function("mul", query_imports=True)
    assert a.get_function_doc("mul", query_imports=True) == "Multiply two integers."
    assert a.get_function_metadata("mul", query_imports=True) is not None
    with pytest.raises(RuntimeError, match=r"[Cc]yclic"):
        b.import_module(a)
    with pytest.raises(TypeError):
        a.import_module(1)  # type: ignore[arg-type]
    a.clear_imports()
    assert a.imports == []


# ---- source / write ------------------------------------------------------------------
def test_inspect_source_and_write(plain: tvmffi.Module, tmp_path: Any) -> None:
    assert plain.inspect_source() == ""
    assert plain.inspect_source("c") == ""
    assert plain.get_write_formats() == []
    target = tmp_path / "out.so"
    # The runtime's own refusal, as on the official binding (no pre-check on the formats).
    with pytest.raises(RuntimeError, match=r"library\].*does not support WriteToFile"):
        plain.write_to_file(target)
    assert not target.exists()


# ---- system library ------------------------------------------------------------------
def test_system_lib(syslib_loaded: ctypes.CDLL) -> None:
    s = tvmffi.system_lib()
    assert isinstance(s, tvmffi.Module)
    assert s.kind == "library"
    assert s.syslib_add(2, 3) == 5
    assert s["syslib_add"](4, 4) == 8
    assert s.implements_function("syslib_add")
    with pytest.raises(AttributeError):  # missing: AttributeError, as official
        s.get_function("not_registered")
    assert tvmffi.system_lib().same_as(s)  # one module per prefix


def test_system_lib_prefix(syslib_loaded: ctypes.CDLL) -> None:
    s = tvmffi.system_lib("tvmffitest_")
    assert s.neg(5) == -5
    assert s.syslib_add(1, 1) == 2  # falls back to unprefixed names
    with pytest.raises(TypeError):
        tvmffi.system_lib(1)  # type: ignore[arg-type]


# ---- passing modules through FFI -------------------------------------------------------
def test_module_through_ffi(plain: tvmffi.Module) -> None:
    back = tvmffi.testing.echo(plain)
    assert isinstance(back, tvmffi.Module)
    assert back.same_as(plain)
    assert back.add_int(1, 1) == 2
    assert tvmffi.testing.echo([plain])[0].same_as(plain)


def test_module_through_official_binding(plain_path: str) -> None:
    tvm_ffi = pytest.importorskip("tvm_ffi")
    name = "tvmffi_tests.module_identity"
    tvm_ffi.register_global_func(name, lambda m: m, override=True)
    ident = tvmffi.get_global_func(name)
    ours = tvmffi.load_module(plain_path)
    back = ident(ours)
    assert isinstance(back, tvmffi.Module)
    assert back.same_as(ours)
    official = tvm_ffi.load_module(plain_path)
    assert official.add_int(1, 2) == 3
    converted = tvmffi.testing.echo(official)
    assert isinstance(converted, tvmffi.Module)
    assert converted.add_int(3, 4) == 7
    assert tvmffi.testing.echo(tvm_ffi.get_global_func("testing.echo")(ours)).same_as(ours)


# ---- load errors -----------------------------------------------------------------------
def test_missing_file(tmp_path: Any) -> None:
    path = str(tmp_path / "missing.so")
    with pytest.raises(FileNotFoundError, match=r"missing\.so"):
        tvmffi.load_module(path)


def test_not_a_library(tmp_path: Any) -> None:
    path = tmp_path / "bogus.so"
    path.write_text("this is not a shared library")
    with pytest.raises(ValueError, match=r"bogus\.so"):
        tvmffi.load_module(str(path))


def test_directory(tmp_path: Any) -> None:
    with pytest.raises(IsADirectoryError):
        tvmffi.load_module(str(tmp_path))


def test_library_without_symbols(nosym_path: str) -> None:
    # Official semantics: any library the runtime can load is a module (this one
    # has no functions). tvmffi used to refuse it with ValueError.
    mod = tvmffi.load_module(nosym_path)
    assert mod.kind == "library"
    with pytest.raises(AttributeError):  # missing: AttributeError, as official
        mod.get_function("plain_function")


# ---- libraries that only register globals / types; keep_module_alive ------------------
@pytest.fixture(scope="session")
def static_init_path(fixture_dir: str) -> str:
    return fixture_build.build("static_init", fixture_dir)


def _run_python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=120
    )


@pytest.mark.parametrize("keep", [True, False])
def test_registration_only_library_stays_loaded(static_init_path: str, keep: bool) -> None:
    # Loading registers static_init_fixture.add_two from a static initializer;
    # dropping the module must not unload the code behind the global (it used
    # to be refused with ValueError, and the runtime's loader then crashed the
    # next call after the module was dropped).
    code = (
        "import gc, sys, tvmffi\n"
        f"mod = tvmffi.load_module(sys.argv[1], keep_module_alive={keep})\n"
        "assert mod.kind == 'library'\n"
        "del mod\n"
        "gc.collect()\n"
        "f = tvmffi.get_global_func('static_init_fixture.add_two')\n"
        "print(f(40))\n"
    )
    proc = _run_python(code, static_init_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "42"


_LOADS = {
    # Every route to the runtime's ".so" loader (issue 21, item 7): tvmffi's wrapper of
    # the runtime's own loader, and the official binding's load_module.
    "ffi.ModuleLoadFromFile": "mod = tvmffi.get_global_func('ffi.ModuleLoadFromFile')(path)\n",
    "tvm_ffi.load_module": "import tvm_ffi\nmod = tvm_ffi.load_module(path, False)\n",
}


@pytest.mark.parametrize("route", sorted(_LOADS))
def test_library_that_registered_globals_stays_loaded_on_every_route(
    static_init_path: str, route: str
) -> None:
    # The runtime's library object dlcloses its file when the last module goes; the
    # globals it registered stay, and their next call used to jump into unmapped code.
    code = (
        "import gc, sys, tvmffi\n"
        "path = sys.argv[1]\n" + _LOADS[route] + "assert mod.kind == 'library'\n"
        "del mod\n"
        "gc.collect()\n"
        "print(tvmffi.get_global_func('static_init_fixture.add_two')(40))\n"
    )
    proc = _run_python(code, static_init_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "42"


def test_plain_library_still_unloads_with_its_last_module(plain_path: str) -> None:
    # Only libraries that registered something are pinned: a kernel library loaded
    # through the runtime's loader goes with its module (dlopen RTLD_NOLOAD finds it no more).
    code = (
        "import ctypes, gc, os, sys, tvmffi\n"
        "path = sys.argv[1]\n"
        "mod = tvmffi.get_global_func('ffi.ModuleLoadFromFile')(path)\n"
        "assert mod.get_function('add_int')(2, 3) == 5\n"
        "libc = ctypes.CDLL(None)\n"
        "libc.dlopen.restype = ctypes.c_void_p\n"
        "noload = os.RTLD_LAZY | os.RTLD_NOLOAD\n"
        "before = libc.dlopen(path.encode(), noload)\n"
        "libc.dlclose(ctypes.c_void_p(before))\n"
        "del mod\n"
        "gc.collect()\n"
        "print(bool(before), bool(libc.dlopen(path.encode(), noload)))\n"
    )
    proc = _run_python(code, plain_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "False"]


def test_keep_module_alive_false_unloads_plain_library(plain_path: str) -> None:
    # A library whose loading registered nothing follows keep_module_alive=False:
    # its module goes with its last reference (and a new load works again). The
    # reference is the Python module's (functions are resolved on first use);
    # a module kept alive also has the runtime's globals reference.
    code = (
        "import gc, sys, tvmffi\n"
        "from tvmffi._core import object_use_count\n"
        "mod = tvmffi.load_module(sys.argv[1], keep_module_alive=False)\n"
        "n_free = object_use_count(mod)\n"
        "mod2 = tvmffi.load_module(sys.argv[1])\n"
        "print(n_free, object_use_count(mod2), mod2.add_int(2, 3))\n"
    )
    proc = _run_python(code, plain_path)
    assert proc.returncode == 0, proc.stderr
    n_free, n_kept, total = proc.stdout.split()
    assert (n_free, n_kept, total) == ("1", "2", "5")


def test_relative_paths_like_official(plain_path: str, tmp_path: Any) -> None:
    # A path with a directory part is relative to the working directory; a bare
    # name goes to the dynamic loader's search path, as with the official binding.
    import shutil

    shutil.copy(plain_path, tmp_path / "librel.so")
    code = (
        "import os, sys, tvmffi, tvm_ffi\n"
        "os.chdir(sys.argv[1])\n"
        "print(tvmffi.load_module('./librel.so').add_int(1, 2))\n"
        "print(tvm_ffi.load_module('./librel.so').add_int(1, 2))\n"
        "for load in (tvmffi.load_module, tvm_ffi.load_module):\n"
        "    try:\n"
        "        load('librel.so')\n"
        "        print('loaded')\n"
        "    except Exception as err:\n"
        "        print('refused' if 'librel.so' in str(err) else repr(err))\n"
    )
    proc = _run_python(code, str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["3", "3", "refused", "refused"]


# ---- ELF reader and CLI -----------------------------------------------------------------
def test_exported_function_names(plain_path: str, cpp_path: str, nosym_path: str) -> None:
    from tvmffi.module import _elf_dynamic_symbols, _exported_function_names

    assert _exported_function_names(plain_path) == ["add_int", "add_one_f32", "raise_error"]
    assert _exported_function_names(cpp_path) == ["fail", "greet", "mul"]
    assert _exported_function_names(nosym_path) == []
    syms = _elf_dynamic_symbols(nosym_path)
    assert syms is not None and "plain_function" in syms
    assert _elf_dynamic_symbols(__file__) is None


def test_elf_offsets_past_any_file(plain_path: str, tmp_path: Any) -> None:
    # A section table or symbol table offset of 2**63 or more (corrupt headers)
    # is reported like any other offset outside the file, not as OverflowError.
    import struct

    from tvmffi import _elf
    from tvmffi.codegen.library_bin import find_library_bin
    from tvmffi.module import _elf_dynamic_symbols

    with open(plain_path, "rb") as f:
        data = f.read()
    elf = _elf.parse(data)
    assert elf is not None and elf.type == _elf.ET_DYN
    dynsym = next(i for i, s in enumerate(elf.sections) if s.type == _elf.SHT_DYNSYM)
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    bad_table = bytearray(data)
    struct.pack_into("<Q", bad_table, shoff + dynsym * 64 + 24, 2**63 + 8)  # its sh_offset
    bad_shoff = bytearray(data)
    struct.pack_into("<Q", bad_shoff, 0x28, 2**64 - 8)
    for i, bad in enumerate((bad_table, bad_shoff)):
        path = tmp_path / f"huge{i}.so"
        path.write_bytes(bytes(bad))
        assert _elf_dynamic_symbols(str(path)) is None
        with pytest.raises(ValueError, match=r"huge\d\.so: malformed ELF headers"):
            find_library_bin(path)
        # The dynamic loader never reads section headers: the library still loads.
        assert tvmffi.load_module(str(path)).add_int(2, 3) == 5


def _run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run(
        [sys.executable, "-m", "tvmffi", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_cli_inspect_plain(plain_path: str) -> None:
    proc = _run_cli("inspect", plain_path)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "kind: library" in out
    assert "add_int(int, int) -> int" in out
    assert "Add two integers." in out
    assert "add_one_f32" in out
    assert "raise_error" in out
    assert "imports (0)" in out


def test_cli_inspect_cpp(cpp_path: str) -> None:
    proc = _run_cli("inspect", cpp_path)
    assert proc.returncode == 0, proc.stderr
    assert "mul(int, int) -> int" in proc.stdout
    assert "Multiply two integers." in proc.stdout
    assert "greet(ffi.String) -> ffi.String" in proc.stdout


def test_cli_inspect_errors(tmp_path: Any, nosym_path: str) -> None:
    proc = _run_cli("inspect", str(tmp_path / "missing.so"))
    assert proc.returncode == 1
    assert "missing.so" in proc.stderr
    bogus = tmp_path / "bogus.so"
    bogus.write_text("not a library")
    proc = _run_cli("inspect", str(bogus))
    assert proc.returncode == 1
    assert "bogus.so" in proc.stderr
    # A library without functions loads (official load_module semantics): none listed.
    proc = _run_cli("inspect", nosym_path)
    assert proc.returncode == 0, proc.stderr
    assert "functions (0):" in proc.stdout
    proc = _run_cli()
    assert proc.returncode != 0


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_and_devices_are_refused_at_once(tmp_path: Any) -> None:
    # Opening a FIFO for reading waits for a writer, and /dev/zero never ends:
    # both are refused before any read. Should the open block again, a writer
    # thread unblocks it after 20 s so the test fails instead of hanging.
    import threading

    from tvmffi.codegen.library_bin import find_library_bin, read_library_bin

    fifo = str(tmp_path / "module.so")
    os.mkfifo(fifo)
    done = threading.Event()

    def unblock() -> None:
        if not done.wait(20):
            with open(fifo, "wb"):
                pass

    threading.Thread(target=unblock, daemon=True).start()
    try:
        for target in (fifo, "/dev/zero", "/dev/null"):
            if not os.path.exists(target):
                continue
            for load in (tvmffi.load_module, find_library_bin, read_library_bin):
                with pytest.raises(ValueError, match="is not a regular file"):
                    load(target)
        assert not done.is_set()
    finally:
        done.set()
    proc = _run_cli("inspect", fifo)
    assert proc.returncode == 1
    assert proc.stderr.strip() == f"error: {fifo} is not a regular file (a FIFO, socket or device)"


def test_huge_file_is_not_read_whole(plain_path: str, tmp_path: Any) -> None:
    # A 64 GiB sparse file: reading it whole would exhaust memory. Only the
    # headers, the symbol table asked for and its string table are read.
    import resource

    from tvmffi.codegen.library_bin import find_library_bin
    from tvmffi.module import _exported_function_names

    huge = tmp_path / "libhuge.so"
    with open(plain_path, "rb") as f:
        huge.write_bytes(f.read())
    with open(huge, "r+b") as f:
        f.truncate(64 << 30)
    zeros = tmp_path / "libzeros.so"
    with open(zeros, "wb") as f:
        f.truncate(64 << 30)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert _exported_function_names(str(huge)) == ["add_int", "add_one_f32", "raise_error"]
    assert find_library_bin(huge) is None
    assert tvmffi.load_module(str(huge)).add_int(2, 3) == 5
    with pytest.raises(ValueError, match=r"libzeros\.so"):
        tvmffi.load_module(str(zeros))
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kib < 256 * 1024


def test_property_predicates_and_entry(plain: tvmffi.Module) -> None:
    mask = plain.get_property_mask()
    assert mask == plain.property_mask
    assert plain.is_runnable() == bool(mask & tvmffi.ModulePropertyMask.RUNNABLE)
    assert plain.is_runnable()
    assert plain.is_binary_serializable() == bool(
        mask & tvmffi.ModulePropertyMask.BINARY_SERIALIZABLE
    )
    assert plain.is_compilation_exportable() == bool(
        mask & tvmffi.ModulePropertyMask.COMPILATION_EXPORTABLE
    )
    assert tvmffi.Module.entry_name == "main"
    with pytest.raises(AttributeError, match="main"):
        plain()  # the fixture library has no entry function
    assert tvmffi.system_lib(symbol_prefix="").kind == "library"
