"""Regression tests of issue 40 (reliability, fifth round): views kept by containers,
handles moved during a call, lent tensors, pickled tensors and libraries, JAX partitions,
a second runtime. Crash classes run in a subprocess."""

from __future__ import annotations

import textwrap
from typing import Any

import pytest
from conftest import run_python


def run_ok(code: str, **kwargs: object) -> str:
    """Run ``code`` in a fresh interpreter; it must exit 0. Returns its stdout."""
    proc = run_python(textwrap.dedent(code), **kwargs)  # type: ignore[arg-type]
    assert proc.returncode == 0, f"rc={proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


# A large array's buffer is unmapped when it is freed: reading it through a pointer kept
# past its life segfaults at once instead of reading stale memory.
BIG = "np.full(1 << 22, 2.0, dtype='float32')"


# ---- 1. an official view kept by a container ------------------------------------------
@pytest.mark.parametrize(
    "wrap", ["[v]", "(v,)", "{'k': v}", "[[v]]", "{'k': [v]}", "[Value(v)]"],
    ids=["list", "tuple", "dict", "nested", "dict-of-list", "protocol"],
)
def test_official_view_in_a_container_argument_is_kept(wrap: str) -> None:
    # The callee keeps the container; the view's DLTensor and the array behind it must
    # outlive the call (before: a raw DLTensor* inside, heap-use-after-free).
    out = run_ok(
        f"""
        import gc, numpy as np, tvm_ffi, tvmffi
        echo = tvmffi.get_global_func("testing.echo")
        class Value:
            def __init__(self, v): self.v = v
            def __tvm_ffi_value__(self): return self.v
        kept = []
        def callback(v):
            assert v.__chandle__() == 0  # a handle-less official view
            kept.append(echo({wrap}))
        f = echo(tvm_ffi.convert(callback))
        a = {BIG}
        f(tvmffi.TensorView(a))
        del a; gc.collect()
        c = kept[0]
        while not isinstance(c, tvmffi.Tensor):
            c = c["k"] if isinstance(c, tvmffi.Map) else c[0]
        print(float(np.from_dlpack(c).sum()))
        """
    )
    assert float(out) == 2.0 * (1 << 22)


# ---- 2. a TensorView stored by a container's constructor or mutator -------------------
@pytest.mark.parametrize(
    "build",
    [
        "tvmffi.List([v])",
        "tvmffi.Array([v])",
        "tvmffi.Map({'k': v})",
        "tvmffi.Dict({'k': v})",
        "tvmffi.List([Value(v)])",
        "tvmffi.List([[v]])",
        "(lambda c: (c.append(v), c)[1])(tvmffi.List())",
        "(lambda c: (c.insert(0, v), c)[1])(tvmffi.List())",
        "(lambda c: (c.extend([v]), c)[1])(tvmffi.List())",
        "(lambda c: (c.__setitem__(0, v), c)[1])(tvmffi.List([0]))",
        "(lambda c: (c.__setitem__(slice(0, 1), [v]), c)[1])(tvmffi.List([0]))",
        "(lambda c: (c.__setitem__(slice(0, 2, 2), [v]), c)[1])(tvmffi.List([0]))",
        "(lambda c: (c.__setitem__('k', v), c)[1])(tvmffi.Dict())",
        "(lambda c: (c.update(k=v), c)[1])(tvmffi.Dict())",
        "tvmffi.convert([v])",
    ],
    ids=[
        "List", "Array", "Map", "Dict", "protocol", "nested", "append", "insert", "extend",
        "setitem", "setslice", "setslice-step", "dict-setitem", "dict-update", "convert",
    ],
)
def test_tensor_view_stored_by_a_container_keeps_its_array(build: str) -> None:
    # docs/guide/arrays.md: a view inside a container keeps its memory (before: the
    # container kept the temporary view's DLTensor*, read after the array was freed).
    out = run_ok(
        f"""
        import gc, numpy as np, tvmffi
        class Value:
            def __init__(self, v): self.v = v
            def __tvm_ffi_value__(self): return self.v
        a = {BIG}
        v = tvmffi.TensorView(a)
        c = {build}
        del a, v; gc.collect()
        while not isinstance(c, tvmffi.Tensor):
            c = c["k"] if isinstance(c, (tvmffi.Map, tvmffi.Dict)) else c[0]
        print(float(np.from_dlpack(c).sum()))
        """
    )
    assert float(out) == 2.0 * (1 << 22)


def test_tensor_view_argument_stays_a_view() -> None:
    # The fix keeps only what a container stores: a view passed to a plain call is still
    # the DLTensor* itself (no Tensor made, no reference taken).
    import sys

    import numpy as np

    import tvmffi

    a = np.arange(3.0)
    before = sys.getrefcount(a)
    v = tvmffi.TensorView(a)
    after_view = sys.getrefcount(a)
    tvmffi.get_global_func("testing.nop")(v, v)
    assert sys.getrefcount(a) == after_view >= before


# ---- 3. a handle moved while a call packs its arguments ------------------------------
MOVER = """
import gc, tvmffi
class Mover:
    # Converting it moves the handle out of `target` (into an empty wrapper, dropped
    # at once), or gives it away through `_move()` to a call that drops it.
    def __init__(self, target, how="move_handle"):
        self.target, self.how = target, how
    def __tvm_ffi_value__(self):
        if self.how == "move_handle":
            sink = type(self.target).__new__(type(self.target))
            sink.__move_handle_from__(self.target)
            del sink
        else:
            tvmffi.List().append(self.target._move())  # taken by a List, then dropped
        gc.collect()
        for _ in range(100):  # reuse the freed memory
            tvmffi.List([7, 7, 7]), tvmffi.Array([8, 8])
        return 0
class F(tvmffi.Function):
    pass
"""


@pytest.mark.parametrize("how", ["move_handle", "rvalue"])
@pytest.mark.parametrize("kind", ["List", "Array", "Map"])
def test_argument_moved_while_later_arguments_convert(kind: str, how: str) -> None:
    # echo(x, Mover(x)) returns x as it was packed (before: another object, an abort).
    out = run_ok(
        MOVER
        + f"""
make = {{"List": lambda: tvmffi.List([1, 2, 3]), "Array": lambda: tvmffi.Array([1, 2, 3]),
        "Map": lambda: tvmffi.Map({{1: 2, 3: 4}})}}["{kind}"]
echo = tvmffi.get_global_func("testing.echo")
x = make()
r = echo(x, Mover(x, "{how}"))
print(type(r).__name__, sorted(r) if "{kind}" == "Map" else list(r), x.__chandle__())
"""
    )
    name, rest = out.split(" ", 1)
    assert name == kind
    assert rest.strip().startswith("[1, 3]" if kind == "Map" else "[1, 2, 3]")
    assert rest.strip().endswith(" 0")  # the move did happen


@pytest.mark.parametrize("how", ["move_handle", "rvalue"])
def test_callee_moved_while_its_arguments_convert(how: str) -> None:
    # f(1, Mover(f)): the call holds the callee for its whole duration (before: segfault).
    out = run_ok(
        MOVER
        + f"""
f = tvmffi.convert(lambda a, b: a + b + 100)
if "{how}" == "move_handle":
    f = F.__new__(F); f.__move_handle_from__(tvmffi.convert(lambda a, b: a + b + 100))
print(f(1, Mover(f, "{how}")))
"""
    )
    assert out.strip() == "101"


def test_element_moved_while_later_elements_convert() -> None:
    # A container built from a list holds its earlier elements while later ones convert.
    out = run_ok(
        MOVER
        + """
lst = tvmffi.List([1, 2, 3])
arr = tvmffi.convert([lst, Mover(lst)])
print(list(arr[0]), arr[1])
echo = tvmffi.get_global_func("testing.echo")
lst2 = tvmffi.List([4, 5])
print(list(echo([[lst2, Mover(lst2)]])[0][0]))
"""
    )
    assert out.split("\n")[:2] == ["[1, 2, 3] 0", "[4, 5]"]


# ---- 4. a lent tensor escaping by a move ---------------------------------------------
@pytest.mark.parametrize("how", ["rvalue", "move_handle"])
def test_lent_tensor_moved_out_of_a_callback_expires(native: object, how: str) -> None:
    # A DLTensor* lent to a Python callback is valid until the callback returns, also
    # when the callback moved the Tensor's handle elsewhere (before: segfault reading it).
    lib = native.lib._name  # type: ignore[attr-defined]
    out = run_ok(
        f"""
import ctypes, gc, numpy as np, tvmffi
lib = ctypes.CDLL({lib!r})
lib.call_with_dltensor.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_longlong]
kept = tvmffi.List()
sinks = []
def cb(x):
    if "{how}" == "rvalue":
        kept.append(x._move())
    else:
        sink = tvmffi.Object.__new__(tvmffi.Object)
        sink.__move_handle_from__(x)
        sinks.append(sink)
        kept.append(sink)
    assert np.from_dlpack(kept[0]).sum() == 2.0 * (1 << 22)  # valid during the call
data = np.full(1 << 22, 2.0, dtype="float32")
f = tvmffi.convert(cb)
assert lib.call_with_dltensor(ctypes.c_void_p(f.__chandle__()), data.ctypes.data, 1 << 22) == 0
del data; gc.collect()
t = kept[0]
try:
    print("read", float(np.from_dlpack(t).sum()))
except (ValueError, BufferError, RuntimeError) as e:
    print("expired", type(e).__name__)
"""
    )
    first = out.split("\n")[0]
    assert first.startswith("expired") or first == "read 0.0", out


# ---- 5. read-only memory unpickled writable -------------------------------------------
def test_read_only_tensor_out_of_band_is_not_unpickled_writable() -> None:
    # The out-of-band buffer of a read-only tensor is read-only: the loader copies it
    # (before: a writable tensor over the same read-only memory; writing through it
    # changed an immutable bytes object, or segfaulted over a read-only mmap).
    import pickle

    import numpy as np

    import tvmffi

    src = np.arange(4.0)
    src.flags.writeable = False
    t = tvmffi.from_dlpack(src, allow_read_only=True)
    buffers: list[pickle.PickleBuffer] = []
    data = pickle.dumps(t, protocol=5, buffer_callback=buffers.append)
    assert buffers[0].raw().readonly
    back = pickle.loads(data, buffers=buffers)
    out = np.from_dlpack(back)
    assert out.tolist() == [0.0, 1.0, 2.0, 3.0]
    out[0] = 42.0  # a private copy: the source is untouched
    assert src[0] == 0.0
    # A writable tensor still travels without a copy.
    w = tvmffi.from_dlpack(np.arange(4.0))
    buffers = []
    data = pickle.dumps(w, protocol=5, buffer_callback=buffers.append)
    assert not buffers[0].raw().readonly
    assert np.from_dlpack(pickle.loads(data, buffers=buffers)).ctypes.data == (
        np.from_dlpack(w).ctypes.data
    )


def test_read_only_mmap_pickled_out_of_band_loads_without_crash(tmp_path: object) -> None:
    path = f"{tmp_path}/data.bin"
    out = run_ok(
        f"""
        import mmap, pickle, numpy as np, tvmffi
        with open({path!r}, "wb") as f:
            f.write(np.arange(8.0).tobytes())
        with open({path!r}, "rb") as f:
            m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        a = np.frombuffer(m, dtype="float64")
        t = tvmffi.from_dlpack(a, allow_read_only=True)
        bufs = []
        back = pickle.loads(pickle.dumps(t, protocol=5, buffer_callback=bufs.append), buffers=bufs)
        b = np.from_dlpack(back)
        b[:] = 1.0  # writes a copy (before: SIGSEGV writing the read-only mapping)
        print(float(b.sum()), float(a.sum()))
        """
    )
    assert out.split() == ["8.0", "28.0"]


# ---- 6-7. pickled libraries: a private cache, the bytes actually loaded -----------------
@pytest.fixture(scope="module")
def lib_file(tmp_path_factory: pytest.TempPathFactory) -> str:
    import tvmffi.cpp

    return str(
        tvmffi.cpp.build_inline(
            "test_rel5_lib",
            cpp_sources="int64_t thrice(int64_t x) { return 3 * x; }",
            functions=["thrice"],
            build_directory=str(tmp_path_factory.mktemp("rel5lib")),
        )
    )


def _pickled_parts(path: str) -> tuple[str, bytes, str]:
    import hashlib
    import os

    with open(path, "rb") as f:
        data = f.read()
    return os.path.basename(path), data, hashlib.sha256(data).hexdigest()


def test_pickled_library_refuses_a_cache_others_can_write(
    lib_file: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    from tvmffi import _pickle
    from tvmffi._build.private import UnsafeCacheError

    cache = tmp_path / "cache"
    cache.mkdir()
    monkeypatch.setenv("TVMFFI_CACHE_DIR", str(cache))
    name, data, digest = _pickled_parts(lib_file)
    os.chmod(cache, 0o777)  # a shared cache: anyone could plant a library there
    with pytest.raises(UnsafeCacheError, match="writable by"):
        _pickle._rebuild_library(name, data, digest, "/nonexistent/" + name)
    os.chmod(cache, 0o700)
    (cache / "pickled").mkdir()
    os.chmod(cache / "pickled", 0o775)
    with pytest.raises(UnsafeCacheError, match="group"):
        _pickle._rebuild_library(name, data, digest, None)


def test_pickled_library_never_follows_a_planted_link(
    lib_file: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os
    import shutil

    from tvmffi import _pickle
    from tvmffi.module import _source_of

    monkeypatch.setenv("TVMFFI_CACHE_DIR", str(tmp_path))
    name, data, digest = _pickled_parts(lib_file)
    folder = tmp_path / "pickled" / digest
    folder.mkdir(parents=True, mode=0o700)
    os.chmod(tmp_path / "pickled", 0o700)
    decoy = tmp_path / "decoy.so"
    shutil.copy(lib_file, decoy)  # same bytes now: the digest check would pass
    os.symlink(decoy, folder / name)
    mod = _pickle._rebuild_library(name, data, digest, None)
    assert not os.path.islink(folder / name)  # replaced by a private copy
    assert mod.thrice(3) == 9
    # An original path this process has not loaded is not trusted either: a private copy.
    other = _pickle._rebuild_library(name, data, digest, str(decoy))
    assert _source_of(other) == ("file", str(folder / name))


def test_pickling_a_module_whose_file_changed_is_refused(lib_file: str, tmp_path: Any) -> None:
    import os
    import pickle
    import shutil

    import tvmffi

    path = str(tmp_path / "libmine.so")
    shutil.copy(lib_file, path)
    mod = tvmffi.load_module(path)
    assert pickle.loads(pickle.dumps(mod)).thrice(2) == 6  # unchanged: travels
    with open(path, "ab") as f:  # rebuilt in place
        f.write(b"\0" * 16)
    with pytest.raises(RuntimeError, match="changed since it was loaded"):
        pickle.dumps(mod)
    replaced = str(tmp_path / "new.so")
    shutil.copy(lib_file, replaced)
    os.replace(replaced, path)  # replaced by another file (same bytes as loaded, new inode)
    with pytest.raises(RuntimeError, match="changed since it was loaded"):
        pickle.dumps(mod)


# ---- 10. smaller ones ------------------------------------------------------------------
def test_copy_copy_of_a_tensor_says_what_is_supported() -> None:
    import copy

    import numpy as np

    import tvmffi

    t = tvmffi.from_dlpack(np.arange(3.0))
    with pytest.raises(TypeError, match=r"copy.copy\(\) of a Tensor is not supported.*deepcopy"):
        copy.copy(t)
    d = copy.deepcopy(t)
    assert np.from_dlpack(d).tolist() == [0.0, 1.0, 2.0]
    assert np.from_dlpack(d).ctypes.data != np.from_dlpack(t).ctypes.data


@pytest.mark.parametrize("kind", ["List", "Dict"])
def test_deepcopy_of_a_self_containing_container_holding_a_tensor(kind: str) -> None:
    # Before: RecursionError (the same List without a tensor copied through ffi.DeepCopy).
    import copy

    import numpy as np

    import tvmffi

    t = tvmffi.from_dlpack(np.arange(3.0))
    if kind == "List":
        c: Any = tvmffi.List([t])
        c.append(c)
    else:
        c = tvmffi.Dict({"t": t})
        c["self"] = c
    d = copy.deepcopy(c)
    inner = d[1] if kind == "List" else d["self"]
    assert inner.same_as(d) and not d.same_as(c)
    first = d[0] if kind == "List" else d["t"]
    assert np.from_dlpack(first).tolist() == [0.0, 1.0, 2.0]
    assert np.from_dlpack(first).ctypes.data != np.from_dlpack(t).ctypes.data


def test_dir_of_a_registered_object_without_a_handle() -> None:
    from tvmffi.testing import TestIntPair

    empty = TestIntPair.__new__(TestIntPair)
    names = dir(empty)  # before: ValueError "holds no FFI handle"
    assert "a" in names and "b" in names
    assert set(names) == set(dir(TestIntPair(1, 2)))


# ---- 9. a second runtime ---------------------------------------------------------------
def _runtime_copy(tmp_path: Any, same_build: bool) -> str:
    import os
    import shutil

    import tvmffi

    folder = tmp_path / ("same" if same_build else "other")
    folder.mkdir()
    path = str(folder / "libtvm_ffi.so")
    shutil.copy(tvmffi.lib_path(), path)
    if not same_build:
        with open(path, "ab") as f:  # another build: other bytes, still loadable
            f.write(b"\0" * 64)
    assert os.path.getsize(path) > 0
    return path


def test_second_runtime_of_another_build_at_import(tmp_path: Any) -> None:
    import tvmffi

    other = _runtime_copy(tmp_path, same_build=False)
    proc = run_python(
        f"import ctypes, os\nctypes.CDLL({other!r}, mode=os.RTLD_LOCAL)\nimport tvmffi\n"
    )
    assert proc.returncode == 1, proc.stderr  # an ImportError, not a signal
    assert "ImportError: tvmffi: a second TVM FFI runtime is loaded" in proc.stderr
    assert other in proc.stderr and tvmffi.lib_path() in proc.stderr
    assert f"version {tvmffi.tvm_ffi_version()}" in proc.stderr


def test_second_runtime_of_the_same_build_warns_and_goes_on(tmp_path: Any) -> None:
    other = _runtime_copy(tmp_path, same_build=True)
    out = run_ok(
        f"""
        import ctypes, os, warnings
        ctypes.CDLL({other!r}, mode=os.RTLD_LOCAL)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            import tvmffi
        print([str(w.message) for w in seen if issubclass(w.category, RuntimeWarning)])
        """
    )
    assert "the same build" in out and other in out


def test_load_module_of_another_runtime_is_refused(tmp_path: Any) -> None:
    # Mapping it would run its static initializers against tvmffi's runtime: an abort
    # inside the dynamic loader (before: SIGABRT, "TypeAttr ... already registered").
    import tvmffi

    for same in (False, True):
        other = _runtime_copy(tmp_path, same_build=same)
        with pytest.raises(RuntimeError, match="it is a TVM FFI runtime") as err:
            tvmffi.load_module(other)
        assert other in str(err.value) and tvmffi.lib_path() in str(err.value)
        assert ("the same build as" in str(err.value)) == same


def test_build_lock_of_a_builder_killed_mid_build_is_recovered(tmp_path: Any) -> None:
    # Users of shared and network caches reported builds hanging on a lock whose holder
    # was gone. A builder killed mid-build must never block the next one.
    import os
    import signal
    import subprocess
    import sys
    import time

    from tvmffi._build.engine import _build_lock

    lock = str(tmp_path / "lock")
    builder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\nfrom tvmffi._build.engine import _build_lock\n"
            f"with _build_lock({lock!r}):\n"
            "    print('building', flush=True)\n    time.sleep(120)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert builder.stdout is not None and builder.stdout.readline().strip() == "building"
    with open(lock) as f:
        assert f.read().split()[0] == str(builder.pid)  # the holder is named in the file
    builder.send_signal(signal.SIGKILL)  # killed mid-build
    builder.wait()
    start = time.monotonic()
    with _build_lock(lock):  # the kernel released its flock: at once
        pass
    assert time.monotonic() - start < 5
    # A file system that keeps a dead holder's lock (a network lock daemon): another
    # process holds the flock, the file names the killed builder. Broken after ~2 s.
    with open(lock, "w") as f:
        f.write(f"{builder.pid} {__import__('socket').gethostname()}\n")
    keeper = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import fcntl, os, time\nfd = os.open({lock!r}, os.O_RDWR)\n"
            "fcntl.flock(fd, fcntl.LOCK_EX)\nprint('held', flush=True)\ntime.sleep(120)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert keeper.stdout is not None and keeper.stdout.readline().strip() == "held"
        start = time.monotonic()
        with _build_lock(lock), open(lock) as f:
            assert f.read().split()[0] == str(os.getpid())
        assert time.monotonic() - start < 30
    finally:
        keeper.kill()
        keeper.wait()
