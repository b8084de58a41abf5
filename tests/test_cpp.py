"""tvmffi.cpp (load_inline / build_inline / build / load) and the build system under it.

Compiles are slow (two shared cores): modules are built once per test module
(fixtures) and every test asserts on what it built.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import tvmffi
import tvmffi.cpp
from tvmffi import _build, codegen
from tvmffi._build import toolchain
from tvmffi.codegen import Scalar, Signature, Tensor, Var
from tvmffi.utils import FileLock
from tvmffi.utils.embed_cubin import embed_cubin

ADD = "int add(int a, int b) { return a + b; }"


def _build_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("tvmffi: building")]


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cpp-cache")


@pytest.fixture(scope="module")
def add_lib(cache: Path) -> str:
    return tvmffi.cpp.build_inline(
        "adder",
        cpp_sources=ADD,
        functions={"add": "Add two ints."},
        extra_cflags=["-DTVM_FFI_DLL_EXPORT_INCLUDE_METADATA=1"],
        build_directory=str(cache / "adder"),
    )


# ---- results and caching -------------------------------------------------------------------
def test_load_inline_exports_functions_with_docs(add_lib: str) -> None:
    mod = tvmffi.load_module(add_lib)
    assert mod.add(2, 40) == 42
    assert mod.get_function_doc("add") == "Add two ints."
    assert add_lib.endswith("adder.so")


def test_unchanged_build_is_a_load(add_lib: str, cache: Path) -> None:
    mtime = os.stat(add_lib).st_mtime_ns
    runs = _build.stats["compiler_runs"]
    mod = tvmffi.cpp.load_inline(
        "adder",
        cpp_sources=ADD,
        functions={"add": "Add two ints."},
        extra_cflags=["-DTVM_FFI_DLL_EXPORT_INCLUDE_METADATA=1"],
        build_directory=str(cache / "adder"),
    )
    assert _build.stats["compiler_runs"] == runs
    assert os.stat(add_lib).st_mtime_ns == mtime
    assert mod.add(1, 2) == 3


def test_second_load_inline_in_a_new_process_does_not_compile(add_lib: str, cache: Path) -> None:
    mtime = os.stat(add_lib).st_mtime_ns
    code = textwrap.dedent(f"""
        import tvmffi.cpp
        from tvmffi import _build
        mod = tvmffi.cpp.load_inline(
            "adder", cpp_sources={ADD!r}, functions={{"add": "Add two ints."}},
            extra_cflags=["-DTVM_FFI_DLL_EXPORT_INCLUDE_METADATA=1"],
            build_directory={str(cache / "adder")!r})
        print(mod.add(20, 22), _build.stats["compiler_runs"])
    """)
    env = dict(os.environ, TVMFFI_BUILD_VERBOSE="1")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["42", "0"]
    assert _build_lines(proc.stderr) == []
    assert os.stat(add_lib).st_mtime_ns == mtime


def test_default_cache_dir_is_tvm_ffi_cache_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TVM_FFI_CACHE_DIR", str(tmp_path / "c"))
    path = tvmffi.cpp.build(
        "plain_c", sources=[_c_file(tmp_path, "p.c", "int32_t v(void) { return 5; }\n")]
    )
    (entry,) = os.listdir(tmp_path / "c")
    assert entry.startswith("plain_c_") and path == str(tmp_path / "c" / entry / "plain_c.so")
    assert tvmffi.load_module(path).v() == 5


def _c_file(folder: Path, name: str, body: str, header: str = "") -> str:
    """A C source exporting ``v`` through the C ABI (no C++ headers: compiles fast)."""
    src = folder / name
    src.write_text(
        "#include <tvm/ffi/c_api.h>\n"
        + header
        + "static "
        + body
        + "TVM_FFI_DLL_EXPORT int __tvm_ffi_v(void* self, const TVMFFIAny* args, int32_t n,\n"
        "                                   TVMFFIAny* result) {\n"
        "  (void)self; (void)args; (void)n;\n"
        "  result->type_index = kTVMFFIInt; result->zero_padding = 0;\n"
        "  result->v_int64 = v();\n  return 0;\n}\n"
    )
    return str(src)


def test_changed_header_rebuilds(tmp_path: Path) -> None:
    (tmp_path / "value.h").write_text("#define VALUE 1\n")
    src = _c_file(tmp_path, "h.c", "int32_t v(void) { return VALUE; }\n", '#include "value.h"\n')
    out = str(tmp_path / "out")
    assert tvmffi.load_module(tvmffi.cpp.build("hdr1", sources=src, build_directory=out)).v() == 1
    (tmp_path / "value.h").write_text("#define VALUE 22\n")
    runs = _build.stats["compiler_runs"]
    # A new name: the process keeps the first library loaded under its old path.
    path = tvmffi.cpp.build("hdr2", sources=src, build_directory=out)
    assert _build.stats["compiler_runs"] > runs
    assert tvmffi.load_module(path).v() == 22


# ---- errors --------------------------------------------------------------------------------
def test_compile_error_has_message_command_and_generated_file(tmp_path: Path) -> None:
    with pytest.raises(tvmffi.cpp.CompileError) as info:
        tvmffi.cpp.build_inline(
            "broken",
            cpp_sources="int f() { return undefined_name; }",
            functions="f",
            build_directory=str(tmp_path),
        )
    err = info.value
    assert isinstance(err, RuntimeError)
    message = str(err)
    assert "undefined_name" in message and "error" in message
    generated = str(tmp_path / "main.cpp")
    assert err.path == generated and generated in message and os.path.isfile(generated)
    assert "$ " in message and toolchain.compiler("c++") in message
    assert err.command[0] == toolchain.compiler("c++")
    assert not any(name.endswith(".so") for name in os.listdir(tmp_path))


def test_bad_flag_is_a_compile_error(tmp_path: Path) -> None:
    with pytest.raises(tvmffi.cpp.CompileError, match="--no-such-flag-xyz"):
        src = _c_file(tmp_path, "b.c", "int32_t v(void) { return 1; }\n")
        tvmffi.cpp.build(
            "badflag",
            sources=src,
            extra_cflags=["--no-such-flag-xyz"],
            build_directory=str(tmp_path / "o"),
        )


def test_declared_but_undefined_function_fails_the_build(tmp_path: Path) -> None:
    with pytest.raises(tvmffi.cpp.CompileError) as info:
        tvmffi.cpp.build_inline(
            "undef",
            cpp_sources="int missing_impl(int x);",
            functions=["missing_impl"],
            build_directory=str(tmp_path),
        )
    err = info.value
    assert err.undefined_symbols == ("missing_impl(int)",)
    assert "undefined symbol: missing_impl(int)" in str(err)
    assert err.path == str(tmp_path / "undef.so")
    assert not os.path.exists(tmp_path / "undef.so")


def test_failed_build_leaves_nothing_a_later_build_loads(tmp_path: Path) -> None:
    folder = str(tmp_path / "b")
    good = _c_file(tmp_path, "g.c", "int32_t v(void) { return 3; }\n")
    first = tvmffi.cpp.build("flip", sources=good, build_directory=folder)
    assert tvmffi.load_module(first).v() == 3
    Path(good).write_text(Path(good).read_text().replace("return 3;", "return oops;"))
    for _ in range(2):  # the second try compiles again: no stamp claims the old library
        runs = _build.stats["compiler_runs"]
        with pytest.raises(tvmffi.cpp.CompileError, match="oops"):
            tvmffi.cpp.build("flip", sources=good, build_directory=folder)
        assert _build.stats["compiler_runs"] > runs
    assert not [f for f in os.listdir(folder) if f.endswith(".stamp") or f.startswith(".flip.so.")]


def test_argument_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cpp_sources or cuda_sources"):
        tvmffi.cpp.build_inline("x")
    with pytest.raises(ValueError, match="identifiers"):
        tvmffi.cpp.build_inline("x", cpp_sources=ADD, functions=["not a name"])
    with pytest.raises(ValueError, match="file name"):
        tvmffi.cpp.build_inline("a/b", cpp_sources=ADD)
    with pytest.raises(FileNotFoundError, match=r"nope\.cc"):
        tvmffi.cpp.build("x", sources=[str(tmp_path / "nope.cc")])
    with pytest.raises(ValueError, match="Invalid backend"):
        tvmffi.cpp.build_inline("x", cpp_sources=ADD, backend="metal")
    with pytest.raises(ValueError, match="at least one source"):
        tvmffi.cpp.build("x")


# ---- codegen through the same build system (issue 12 item 5) -------------------------------
n = Var("n")


def test_codegen_kernel_with_cpp_linkage_is_a_build_error(tmp_path: Path) -> None:
    (tmp_path / "k.cc").write_text(
        "#include <cstdint>\nint scale_k(int64_t* x, int64_t n) { return 0; }\n"
    )
    sig = Signature("scale", [Tensor("x", [n], "int64")])
    with pytest.raises(codegen.CompileError) as info:
        codegen.build(
            [(sig, "scale_k")], sources=[tmp_path / "k.cc"], name="scale", output_dir=tmp_path
        )
    message = str(info.value)
    assert info.value.undefined_symbols == ("scale_k",)
    assert 'extern "C"' in message and "_Z7scale_k" in message
    assert not list(tmp_path.glob("scale-*/libscale.so"))
    # The fix the message names, given as C++ text this time.
    mod = codegen.build(
        [(sig, "scale_k")],
        name="scale",
        output_dir=tmp_path,
        cpp_sources=[
            '#include <cstdint>\nextern "C" int scale_k(int64_t* x, int64_t n) {\n'
            "  for (int64_t i = 0; i < n; ++i) x[i] *= 3;\n  return 0;\n}\n"
        ],
    )
    x = np.arange(3, dtype=np.int64)
    mod.scale(x)
    assert x.tolist() == [0, 3, 6]


def test_codegen_misspelled_kernel_is_a_build_error(tmp_path: Path) -> None:
    sig = Signature("fill", [Scalar("v", "int32")])
    with pytest.raises(codegen.CompileError) as info:
        codegen.build(
            [(sig, "fill_kernal")],
            sources=["int fill_kernel(int v) { return v; }"],
            name="fill",
            output_dir=tmp_path,
        )
    assert info.value.undefined_symbols == ("fill_kernal",)
    assert "fill_kernal: not defined" in str(info.value)


OPENMP = """
#include <stdint.h>
int omp_k(int64_t* x, int64_t n) {
#pragma omp parallel for
  for (int64_t i = 0; i < n; ++i) x[i] = i * 2;
  return 0;
}
"""


def test_codegen_openmp_needs_link_flags(tmp_path: Path) -> None:
    sig = Signature("omp", [Tensor("x", [n], "int64")])
    with pytest.raises(codegen.CompileError) as info:
        codegen.build(
            [(sig, "omp_k")],
            sources=[OPENMP],
            name="omp",
            output_dir=tmp_path,
            extra_cflags=["-fopenmp"],
        )
    assert any(s.startswith("GOMP_") for s in info.value.undefined_symbols)
    assert "add -fopenmp to the linker flags" in str(info.value)
    mod = codegen.build(
        [(sig, "omp_k")],
        sources=[OPENMP],
        name="omp",
        output_dir=tmp_path,
        extra_cflags=["-fopenmp"],
        extra_ldflags=["-fopenmp"],
    )
    x = np.zeros(5, np.int64)
    mod.omp(x)
    assert x.tolist() == [0, 2, 4, 6, 8]


# ---- concurrency ---------------------------------------------------------------------------
def test_concurrent_builds_of_one_module(tmp_path: Path) -> None:
    code = textwrap.dedent(f"""
        import tvmffi.cpp
        mod = tvmffi.cpp.load_inline("race", cpp_sources={ADD!r}, functions="add",
                                     build_directory={str(tmp_path / "race")!r})
        print(mod.add(1, 1))
    """)
    env = dict(os.environ, TVMFFI_BUILD_VERBOSE="1")
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(3)
    ]
    results = [p.communicate(timeout=600) for p in procs]
    for proc, (out, err) in zip(procs, results, strict=True):
        assert proc.returncode == 0, err
        assert out.strip() == "2"
    # One process built it; the others waited on the lock and found it built.
    assert sum(len(_build_lines(err)) for _, err in results) == 1


# ---- feedback ------------------------------------------------------------------------------
def test_verbose_and_silent(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    src = _c_file(tmp_path, "q.c", "int32_t v(void) { return 1; }\n")
    monkeypatch.setenv("TVMFFI_BUILD_VERBOSE", "1")
    tvmffi.cpp.build("loud", sources=src, build_directory=str(tmp_path / "loud"))
    err = capfd.readouterr().err
    assert _build_lines(err) == [f"tvmffi: building loud (q.c) in {tmp_path / 'loud'} ..."]
    assert "tvmffi: $ " in err
    monkeypatch.setenv("TVMFFI_BUILD_VERBOSE", "0")
    tvmffi.cpp.build("quiet", sources=src, build_directory=str(tmp_path / "quiet"))
    assert capfd.readouterr().err == ""


# ---- object output, cubins, config, dtype, lock ----------------------------------------------
CUBIN_READER = """
extern "C" {
extern const unsigned char __tvm_ffi__cubin_blob[];
extern const unsigned char __tvm_ffi__cubin_blob_end[];
}
int64_t blob_size() { return __tvm_ffi__cubin_blob_end - __tvm_ffi__cubin_blob; }
int64_t blob_byte(int64_t i) { return __tvm_ffi__cubin_blob[i]; }
"""


def test_embed_cubin_bytes_reach_the_library(tmp_path: Path) -> None:
    data = bytes(range(256)) * 3 + b"end"
    mod = tvmffi.cpp.load_inline(
        "blob",
        cpp_sources=CUBIN_READER,
        functions=["blob_size", "blob_byte"],
        embed_cubin={"blob": data},
        build_directory=str(tmp_path),
    )
    assert mod.blob_size() == len(data)
    assert [mod.blob_byte(i) for i in (0, 255, 700, len(data) - 1)] == [0, 255, 700 % 256, 100]


def test_embed_cubin_utility_and_object_output(tmp_path: Path) -> None:
    obj = tvmffi.cpp.build(
        "reader",
        sources=_c_file(
            tmp_path,
            "r.c",
            "int32_t v(void) { return (int32_t)(__tvm_ffi__cubin_k_end - __tvm_ffi__cubin_k); }\n",
            "extern const unsigned char __tvm_ffi__cubin_k[], __tvm_ffi__cubin_k_end[];\n",
        ),
        output="reader.o",
        build_directory=str(tmp_path / "o"),
    )
    assert obj == str(tmp_path / "o" / "reader.o")
    (tmp_path / "k.cubin").write_bytes(b"x" * 77)
    embed_cubin(tmp_path / "k.cubin", Path(obj), tmp_path / "with.o", "k")
    symbols = subprocess.run(
        ["nm", str(tmp_path / "with.o")], capture_output=True, text=True
    ).stdout
    # Local (lower-case type letter) after embedding.
    assert " r __tvm_ffi__cubin_k\n" in symbols and " r __tvm_ffi__cubin_k_end\n" in symbols
    lib = tvmffi.cpp.build(
        "with", sources=[str(tmp_path / "with.o")], build_directory=str(tmp_path / "o")
    )
    assert tvmffi.load_module(lib).v() == 77
    with pytest.raises(FileNotFoundError):
        embed_cubin(tmp_path / "none.cubin", Path(obj), tmp_path / "x.o", "k")
    with pytest.raises(ValueError, match="C identifier"):
        embed_cubin(tmp_path / "k.cubin", Path(obj), tmp_path / "x.o", "bad-name")
    # The command line does the same, and reports a bad input as status 1 with the reason.
    cubin = str(tmp_path / "k.cubin")

    def cli(out: str, name: str) -> subprocess.CompletedProcess[str]:
        args = ["--input-obj", obj, "--output-obj", out, "--cubin", cubin, "--name", name]
        return subprocess.run(
            [sys.executable, "-m", "tvmffi.utils.embed_cubin", *args],
            capture_output=True,
            text=True,
        )

    ok = cli(str(tmp_path / "cli.o"), "k")
    assert ok.returncode == 0 and (tmp_path / "cli.o").is_file(), ok.stderr
    bad = cli(str(tmp_path / "y.o"), "bad-name")
    assert bad.returncode == 1 and "C identifier" in bad.stderr


def test_config_flags_build_an_outside_library(tmp_path: Path) -> None:
    from tvmffi import config, libinfo

    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "tvmffi",
            "config",
            "--ldflags",
            "--libs",
            "--includedir",
            "--libdir",
            "--cxxflags",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    # In the official tool's order, whatever the order asked in.
    libdir = os.path.dirname(libinfo.find_libtvm_ffi())
    assert out == [
        libinfo.find_include_path(),
        libdir,
        config.cxxflags(),
        config.libs(),
        config.ldflags(),
    ]
    assert os.path.isfile(os.path.join(out[0], "tvm", "ffi", "c_api.h"))
    includes = [f for f in config.cxxflags().split() if f.startswith("-I")]
    assert f"-I{out[0]}" in includes and len(includes) == len(set(includes))  # each dir once
    assert os.path.samefile(os.path.join(out[1], "libtvm_ffi.so"), tvmffi.lib_path())
    src = _c_file(tmp_path, "o.c", "int32_t v(void) { return 9; }\n")
    lib = str(tmp_path / "libo.so")
    subprocess.run(
        [
            toolchain.compiler("c"),
            "-shared",
            "-fPIC",
            *config.cflags().split(),
            src,
            *config.ldflags().split(),
            *config.libs().split(),
            "-o",
            lib,
        ],
        check=True,
    )
    assert tvmffi.load_module(lib).v() == 9


def test_to_cpp_dtype() -> None:
    torch = pytest.importorskip("torch")
    assert tvmffi.cpp.to_cpp_dtype("float32") == "float"
    assert tvmffi.cpp.to_cpp_dtype(torch.int64) == "int64_t"
    assert tvmffi.cpp.to_cpp_dtype("bool") == "bool"
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="float16"):
            tvmffi.cpp.to_cpp_dtype("float16")


def test_file_lock_excludes_other_processes(tmp_path: Path) -> None:
    path = str(tmp_path / "l.lock")
    probe = (
        "import sys; from tvmffi.utils import FileLock; "
        "sys.exit(0 if FileLock(sys.argv[1]).acquire() else 3)"
    )
    with FileLock(path) as lock:
        assert lock.acquire() is False  # held by this instance already
        with pytest.raises(RuntimeError, match="already held"):
            lock.blocking_acquire()
        assert subprocess.run([sys.executable, "-c", probe, path]).returncode == 3
        with pytest.raises(TimeoutError):
            FileLock(path).blocking_acquire(timeout=0.2, poll_interval=0.05)
    assert subprocess.run([sys.executable, "-c", probe, path]).returncode == 0
    with pytest.raises(RuntimeError, match="cannot lock"):
        FileLock(str(tmp_path / "no" / "dir" / "l.lock")).acquire()


# ---- CUDA ----------------------------------------------------------------------------------
def test_cuda_sources_compile_with_nvcc(tmp_path: Path) -> None:
    try:
        toolchain.compiler("cuda")
        toolchain.cuda_home()
    except RuntimeError:
        pytest.skip("nvcc not found")
    path = tvmffi.cpp.build_inline(
        "cu",
        cuda_sources="""
        __global__ void k(float* x) { x[threadIdx.x] += 1; }
        int64_t launch(tvm::ffi::TensorView x) { k<<<1, 1>>>(static_cast<float*>(x.data_ptr()));
                                                 return 1; }
        """,
        functions="launch",
        build_directory=str(tmp_path),
    )
    mod = tvmffi.load_module(path)  # loads without a GPU (cudart is linked with its rpath)
    assert mod.get_function("launch") is not None
    if shutil.which("nvidia-smi") is None:
        return
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        x = torch.zeros(1, device="cuda")
        assert mod.launch(x) == 1
        torch.cuda.synchronize()
        assert x.item() == 1.0


def test_submodules_load_on_first_attribute_use() -> None:
    """`import tvmffi` stays light; tvmffi.cpp / utils / codegen are each the
    module of that name on first attribute use (official: `tvm_ffi.cpp.load_inline`)."""
    code = (
        "import sys, tvmffi\n"
        "assert 'tvmffi.cpp' not in sys.modules\n"
        "assert tvmffi.cpp.__name__ == 'tvmffi.cpp' and callable(tvmffi.cpp.load_inline)\n"
        "assert tvmffi.utils.__name__ == 'tvmffi.utils' and tvmffi.utils.FileLock\n"
        "assert tvmffi.codegen.__name__ == 'tvmffi.codegen'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
