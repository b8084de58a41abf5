"""Build benchmark: ``cpp.build_inline`` / ``cpp.load_inline``, tvmffi vs tvm_ffi, one process.

Rows: the first build of a typical ``load_inline`` module (one C++ source using
the TVM FFI headers) into an empty build directory, and loading it again when
nothing changed (explicit ``build_directory``, and the default cache under
``TVM_FFI_CACHE_DIR``). Both bindings build the same source in the same process
and environment, interleaved, minimum over repeats. The official binding runs
``ninja``: a real ninja binary is put first on PATH (not a pyenv shim) so that it
is measured at its best.
Run: ``python benchmarks/bench_build.py``.
"""

from __future__ import annotations

import datetime
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import tvm_ffi  # noqa: E402
import tvm_ffi.cpp  # noqa: E402
from _harness import machine  # noqa: E402

import tvmffi  # noqa: E402
import tvmffi.cpp  # noqa: E402

SOURCE = r"""
// y[i] = x[i] + 1 over two float32 vectors of one length.
void add_one_cpu(tvm::ffi::TensorView x, tvm::ffi::TensorView y) {
  bool f32 = x.dtype().code == kDLFloat && x.dtype().bits == 32 && y.dtype() == x.dtype();
  TVM_FFI_ICHECK(f32 && x.ndim() == 1 && y.ndim() == 1) << "add_one_cpu: two 1-D float32 tensors";
  TVM_FFI_ICHECK(x.size(0) == y.size(0)) << "add_one_cpu: the lengths differ";
  const float* in = static_cast<const float*>(x.data_ptr());
  float* out = static_cast<float*>(y.data_ptr());
  for (int64_t i = 0, n = x.size(0); i < n; ++i) out[i] = in[i] + 1.0f;
}
"""
# Compiles on a shared machine are noisy: six each, interleaved, before taking the minimum.
BUILD_REPEATS = int(os.environ.get("TVMFFI_BENCH_BUILD_REPEATS", "6"))
LOAD_REPEATS = int(os.environ.get("TVMFFI_BENCH_REPEATS", "15"))


def _real_ninja_first() -> None:
    """Put the directory of an ELF ``ninja`` (not a shell shim) first on PATH."""
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        path = os.path.join(folder, "ninja")
        try:
            with open(path, "rb") as f:
                if f.read(4) == b"\x7fELF":
                    os.environ["PATH"] = folder + os.pathsep + os.environ["PATH"]
                    return
        except OSError:
            continue
    for path in ("/usr/bin/ninja", shutil.which("ninja") or ""):
        if path and os.path.isfile(path):
            os.environ["PATH"] = os.path.dirname(path) + os.pathsep + os.environ["PATH"]
            return


def _seconds(func: Callable[[int], object], i: int) -> float:
    start = time.perf_counter()
    func(i)
    return time.perf_counter() - start


def _pair(
    ours: Callable[[int], object], official: Callable[[int], object], repeats: int
) -> tuple[float, float]:
    """Min seconds of each, alternating which goes first."""
    a, b = [], []
    for i in range(repeats):
        if i % 2:
            b.append(_seconds(official, i))
            a.append(_seconds(ours, i))
        else:
            a.append(_seconds(ours, i))
            b.append(_seconds(official, i))
    return min(a), min(b)


def main() -> None:
    """Measure and print the table."""
    _real_ninja_first()
    os.environ.setdefault("TVMFFI_BUILD_VERBOSE", "0")
    work = tempfile.mkdtemp(prefix="bench-build-")
    try:

        def build(binding: object, tag: str) -> Callable[[int], object]:
            def run(i: int) -> object:
                return binding.cpp.build_inline(  # type: ignore[attr-defined]
                    "add_one",
                    cpp_sources=SOURCE,
                    functions=["add_one_cpu"],
                    build_directory=os.path.join(work, f"{tag}{i}"),
                )

            return run

        def load(binding: object, folder: str) -> Callable[[int], object]:
            def run(i: int) -> object:
                return binding.cpp.load_inline(  # type: ignore[attr-defined]
                    "add_one", cpp_sources=SOURCE, functions=["add_one_cpu"], build_directory=folder
                )

            return run

        def load_default(binding: object) -> Callable[[int], object]:
            def run(i: int) -> object:
                return binding.cpp.load_inline(  # type: ignore[attr-defined]
                    "add_one", cpp_sources=SOURCE, functions=["add_one_cpu"]
                )

            return run

        rows = [
            (
                "first build (build_inline, empty build_directory)",
                *_pair(build(tvmffi, "ours"), build(tvm_ffi, "official"), BUILD_REPEATS),
            )
        ]
        ours_dir, official_dir = os.path.join(work, "ours0"), os.path.join(work, "official0")
        rows.append(
            (
                "cached load (load_inline, same build_directory)",
                *_pair(load(tvmffi, ours_dir), load(tvm_ffi, official_dir), LOAD_REPEATS),
            )
        )
        os.environ["TVM_FFI_CACHE_DIR"] = os.path.join(work, "cache")
        load_default(tvmffi)(0)
        load_default(tvm_ffi)(0)
        rows.append(
            (
                "cached load (load_inline, default cache)",
                *_pair(load_default(tvmffi), load_default(tvm_ffi), LOAD_REPEATS),
            )
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(
        f"{datetime.date.today()} on {machine()}; tvmffi {tvmffi.__tvmffi_version__}, "
        f"tvm_ffi {tvm_ffi.__version__}; min of {BUILD_REPEATS} builds / "
        f"{LOAD_REPEATS} loads, interleaved"
    )
    print("| step | tvmffi (ms) | tvm_ffi (ms) | ratio ours/official |")
    print("| --- | ---: | ---: | ---: |")
    for name, ours, official in rows:
        print(f"| {name} | {ours * 1e3:.1f} | {official * 1e3:.1f} | {ours / official:.2f} |")


if __name__ == "__main__":
    main()
