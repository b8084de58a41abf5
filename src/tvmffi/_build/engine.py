"""Compile translation units and link them into a library (or an object), cached.

A :class:`Job` lists what goes in (sources, generated sources, flags, CUBINs);
:func:`build` runs it in a build directory:

- **cache**: next to the output lies a stamp holding the job's key (a digest of
  every input but the contents of user files) and the size and mtime of every
  file the compilers read (from their dependency files, headers included) and of
  the output. When the key matches and no file changed, the build is a load: no
  lock, no process started.
- **lock**: otherwise the build takes ``<build dir>/lock`` (a :class:`FileLock`),
  checks the stamp again (another process may have just built it) and builds.
- **atomic**: objects and the output are written in a private directory; the
  output is renamed into place and the stamp written only after everything
  succeeded, and the stamp is removed first, so a failed or interrupted build
  leaves nothing a later build would take for a result.
- **feedback**: a build still running after a second says once, on stderr, what
  it compiles and where (``TVMFFI_BUILD_VERBOSE=0`` silences it, ``=1`` prints it
  at once with every command).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from .. import _lib
from ..utils.lockfile import FileLock
from . import toolchain
from .errors import CompileError, command_text, failure_message, undefined_symbols
from .private import check_private, make_private_dir, strip_shared_write

__all__ = ["Job", "Unit", "build", "stats"]

_VERSION = "tvmffi._build/1"

# Compiler and linker processes started (tests use it to tell a build from a load).
stats: dict[str, int] = {"compiler_runs": 0}


@dataclass(frozen=True)
class Unit:
    """One input: a file (absolute path, or the name of a generated file) and its language.

    ``lang`` is "c", "c++", "cuda" or "object" (linked as it is).
    """

    path: str
    lang: str


@dataclass
class Job:
    """Everything one build needs; see :func:`build`."""

    name: str
    units: list[Unit]
    output: str  # file name in the build dir; a ".o" suffix makes a relocatable object
    generated: dict[str, str] = field(default_factory=dict)  # written into the build dir
    # Generated files too costly to render for the key: name -> (digest, render).
    deferred: dict[str, tuple[bytes, Callable[[], str]]] = field(default_factory=dict)
    cflags: list[str] = field(default_factory=list)  # caller's flags, after the defaults
    cxxflags: list[str] = field(default_factory=list)
    cuda_cflags: list[str] = field(default_factory=list)
    ldflags: list[str] = field(default_factory=list)
    include_paths: list[str] = field(default_factory=list)
    embed_cubin: dict[str, bytes] = field(default_factory=dict)
    note: tuple[str, str] | None = None  # (label, generated file) named in every error
    verbose: bool | None = None

    @property
    def object_output(self) -> bool:
        return os.path.splitext(self.output)[1].lower() in (".o", ".obj")

    def langs(self) -> list[str]:
        return sorted({u.lang for u in self.units if u.lang != "object"})

    def linker(self) -> str:
        """C sources alone link with the C driver; anything else with the C++ one."""
        only_c = all(u.lang == "c" for u in self.units)
        return toolchain.compiler("c" if only_c else "c++")

    def key(self) -> str:
        """Digest of every input except the contents of the user's files (the stamp has those)."""
        h = hashlib.sha256()

        def put(*parts: str | bytes) -> None:
            for part in parts:
                data = part.encode("utf-8", "surrogatepass") if isinstance(part, str) else part
                h.update(len(data).to_bytes(8, "little"))
                h.update(data)

        put(_VERSION, self.output, _lib.lib_path())
        for unit in self.units:
            put("unit", unit.path, unit.lang)
        for name in sorted(self.generated):
            put("generated", name, self.generated[name])
        for name in sorted(self.deferred):
            put("deferred", name, self.deferred[name][0])
        for label, flags in (("c", self.cflags), ("c++", self.cxxflags),
                             ("cuda", self.cuda_cflags), ("ld", self.ldflags),
                             ("include", self.include_paths)):
            put(label, str(len(flags)), *flags)
        for name in sorted(self.embed_cubin):
            put("cubin", name, hashlib.sha256(self.embed_cubin[name]).digest())
        for lang in self.langs():
            put("tool", lang, toolchain.identity(toolchain.compiler(lang)))
        if not self.object_output:
            put("linker", toolchain.identity(self.linker()))
        if "cuda" in self.langs():
            put("cuda", os.environ.get("TVM_FFI_CUDA_ARCH_LIST", ""))
        return h.hexdigest()


def build(job: Job, build_dir: str, cache_root: str | None = None) -> str:
    """Build ``job`` in ``build_dir`` unless its stamp says it is built; return the output path.

    ``cache_root``: the shared build cache ``build_dir`` lies in, when it does. The
    cache, the build directory and the stamp and library found there must then be
    private to this user (:mod:`.private`), else :class:`UnsafeCacheError`.

    Raises :class:`CompileError` when a compiler or the linker fails.
    """
    build_dir = os.path.abspath(build_dir)
    out = os.path.join(build_dir, job.output)
    stamp = os.path.join(build_dir, f".{job.output}.stamp")
    key = job.key()
    checked_out = None
    if cache_root is not None:
        make_private_dir(cache_root)
        make_private_dir(build_dir)
        checked_out = out
    if _fresh(stamp, key, checked_out):
        return out
    os.makedirs(build_dir, exist_ok=True)
    with _build_lock(os.path.join(build_dir, "lock")):
        if not _fresh(stamp, key, checked_out):
            _build_locked(job, build_dir, out, stamp, key)
    return out


# ---- the build lock, and a stale one -------------------------------------------
# flock(2) is released by the kernel when its holder dies, but not on every file
# system (network and shared caches: a lock daemon may keep it, and users report
# builds hanging for ever). The holder writes "<pid> <host>" into the lock file; a
# waiter that sees the same holder, on this host and no longer alive, for
# _STALE_AFTER seconds (the holder writes right after taking the lock, so a holder
# just starting is never taken for a dead one) removes the file: the next attempt
# locks a new one.
_STALE_AFTER = 2.0
_POLL = 0.1


def _holder_text() -> bytes:

    return f"{os.getpid()} {socket.gethostname()}\n".encode()


def _dead_holder(path: str) -> str | None:
    """The lock file's holder ("<pid> <host>") when it is a process of this host that
    no longer exists; ``None`` otherwise (alive, another host, unknown)."""

    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read(200).strip()
    except OSError:
        return None
    parts = text.split()
    if len(parts) != 2 or not parts[0].isdigit() or parts[1] != socket.gethostname():
        return None
    try:
        os.kill(int(parts[0]), 0)
    except ProcessLookupError:
        return text
    except OSError:
        return None  # alive (another user's process)
    return None


@contextmanager
def _build_lock(path: str) -> Iterator[None]:
    """Hold ``path``'s :class:`FileLock`, breaking it when its holder died and the
    file system kept the lock."""

    lock = FileLock(path)
    dead_since: tuple[str, float] | None = None
    while not lock.acquire():
        dead = _dead_holder(path)
        now = time.monotonic()
        if dead is None:
            dead_since = None
        elif dead_since is None or dead_since[0] != dead:
            dead_since = (dead, now)
        elif now - dead_since[1] >= _STALE_AFTER:
            print(
                f"tvmffi: removing the stale build lock {path} (holder {dead} is gone)",
                file=sys.stderr,
            )
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
            dead_since = None
            continue
        time.sleep(_POLL)
    try:
        fd = lock._file_descriptor
        if fd is not None:
            os.ftruncate(fd, 0)
            os.pwrite(fd, _holder_text(), 0)
        yield
    finally:
        lock.release()


def _fresh(stamp: str, key: str, checked_out: str | None = None) -> bool:
    """Whether the stamp says the output is current; with ``checked_out`` (a cache's
    output), the stamp and the output must be private to this user as well."""
    if checked_out is not None:
        for path, what in ((stamp, "stamp"), (checked_out, "library")):
            if os.path.lexists(path):
                check_private(path, what)
    try:
        with open(stamp, encoding="utf-8") as f:
            data = json.load(f)
        if data["key"] != key:
            return False
        for path, size, mtime in data["files"]:
            st = os.stat(path)
            if st.st_size != size or st.st_mtime_ns != mtime:
                return False
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return True


def _build_locked(job: Job, build_dir: str, out: str, stamp: str, key: str) -> None:
    _remove(stamp)  # from here until success, nothing claims to be built
    for name, text in job.generated.items():
        _write_if_changed(os.path.join(build_dir, name), text)
    for name, (_, render) in job.deferred.items():
        _write_if_changed(os.path.join(build_dir, name), render())
    note = ""
    if job.note is not None:
        note = f"(generated {job.note[0]}: {os.path.join(build_dir, job.note[1])})"
    work = tempfile.mkdtemp(prefix=f".{job.output}.", dir=build_dir)
    try:
        with _progress(job, build_dir):
            objects, depfiles = _compile_all(job, build_dir, work, note)
            if job.embed_cubin:
                objects = [_embed_cubins(job, objects, work, note)]
            tmp_out = os.path.join(work, job.output)
            if job.object_output:
                _merge_objects(objects, tmp_out, out, note)
            else:
                _link(job, objects, tmp_out, out, note)
        files = _dependencies(depfiles)
        files += [u.path for u in job.units if u.lang == "object"]
        strip_shared_write(tmp_out)
        os.replace(tmp_out, out)
        _write_stamp(stamp, key, [*files, out])
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _source_path(unit: Unit, build_dir: str) -> str:
    return unit.path if os.path.isabs(unit.path) else os.path.join(build_dir, unit.path)


def _compile_command(job: Job, unit: Unit, src: str, obj: str) -> list[str]:
    extra = {"c": job.cflags, "c++": job.cxxflags, "cuda": job.cuda_cflags}[unit.lang]
    includes = [f"-I{d}" for d in [*toolchain.include_dirs(), *job.include_paths]]
    return [toolchain.compiler(unit.lang), *toolchain.compile_flags(unit.lang), *extra,
            *includes, "-MMD", "-MF", f"{obj}.d", "-c", src, "-o", obj]


def _compile_all(job: Job, build_dir: str, work: str, note: str) -> tuple[list[str], list[str]]:
    commands: list[tuple[list[str], str]] = []
    objects: list[str] = []
    depfiles: list[str] = []
    for i, unit in enumerate(job.units):
        src = _source_path(unit, build_dir)
        if unit.lang == "object":
            objects.append(src)
            continue
        obj = os.path.join(work, f"{i}_{os.path.splitext(os.path.basename(src))[0]}.o")
        commands.append((_compile_command(job, unit, src, obj), src))
        objects.append(obj)
        depfiles.append(f"{obj}.d")
    _run_parallel(commands, note, job)
    return objects, depfiles


def _run(cmd: list[str], job: Job) -> subprocess.CompletedProcess[str]:
    stats["compiler_runs"] += 1
    if _verbosity(job) > 1:
        print(f"tvmffi: $ {command_text(cmd)}", file=sys.stderr, flush=True)
    try:
        return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              errors="replace")
    except OSError as err:  # the tool itself cannot be started
        return subprocess.CompletedProcess(cmd, 127, f"cannot run {cmd[0]}: {err}")


def _run_parallel(commands: list[tuple[list[str], str]], note: str, job: Job) -> None:
    jobs = os.environ.get("MAX_JOBS", "")
    limit = int(jobs) if jobs.isdigit() and int(jobs) > 0 else (os.cpu_count() or 1)
    workers = max(1, min(len(commands), limit))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        results = list(pool.map(lambda c: _run(c[0], job), commands))
    for (cmd, src), proc in zip(commands, results, strict=True):
        if proc.returncode != 0:
            raise _failure("compiling", src, cmd, proc, note)


def _failure(what: str, path: str, cmd: list[str], proc: subprocess.CompletedProcess[str],
             note: str, objects: Sequence[str] = ()) -> CompileError:
    output = proc.stdout or ""
    names = undefined_symbols(output) if what == "linking" else ()
    message = failure_message(what, path, proc.returncode, cmd, output, names, objects, note)
    return CompileError(message, path, output, cmd, names)


def _link(job: Job, objects: list[str], tmp_out: str, out: str, note: str) -> None:
    with_cuda = "cuda" in job.langs()
    cmd = [job.linker(), *objects, *toolchain.link_flags(with_cuda), *job.ldflags, "-o", tmp_out]
    proc = _run(cmd, job)
    if proc.returncode != 0:
        raise _failure("linking", out, cmd, proc, note, objects)


def _merge_objects(objects: list[str], tmp_out: str, out: str, note: str) -> None:
    if len(objects) == 1:
        # One object needs no partial link (which can rewrite section addresses).
        shutil.copyfile(objects[0], tmp_out)
        return
    cmd = [toolchain.binutil("ld"), "-r", "-o", tmp_out, *objects]
    stats["compiler_runs"] += 1
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        raise _failure("merging objects into", out, cmd, proc, note)


def _embed_cubins(job: Job, objects: list[str], work: str, note: str) -> str:
    from ..utils.embed_cubin import embed_cubin

    current = os.path.join(work, "unified.o")
    _merge_objects(objects, current, current, note)
    for name in sorted(job.embed_cubin):
        cubin = os.path.join(work, f"{name}.cubin")
        with open(cubin, "wb") as f:
            f.write(job.embed_cubin[name])
        nxt = os.path.join(work, f"unified_with_{name}.o")
        embed_cubin(Path(cubin), Path(current), Path(nxt), name)
        current = nxt
    return current


def _dependencies(depfiles: list[str]) -> list[str]:
    """Files named by the compilers' make-style dependency files (sources and headers)."""
    files: dict[str, None] = {}
    for depfile in depfiles:
        try:
            with open(depfile, encoding="utf-8", errors="surrogateescape") as f:
                text = f.read()
        except OSError:
            continue
        for path in _parse_depfile(text):
            files.setdefault(os.path.abspath(path))
    return list(files)


def _parse_depfile(text: str) -> Iterator[str]:
    text = text.replace("\\\r\n", " ").replace("\\\n", " ")
    for rule in text.splitlines():
        _, colon, deps = rule.partition(": ")
        if not colon:
            continue
        word = ""
        i = 0
        while i < len(deps):
            ch = deps[i]
            if ch == "\\" and i + 1 < len(deps) and deps[i + 1] in " #":
                word += deps[i + 1]
                i += 2
                continue
            if ch in " \t":
                if word:
                    yield word
                word = ""
            else:
                word += ch
            i += 1
        if word:
            yield word


def _write_stamp(stamp: str, key: str, files: list[str]) -> None:
    entries = []
    for path in files:
        st = os.stat(path)
        entries.append([path, st.st_size, st.st_mtime_ns])
    tmp = f"{stamp}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump({"key": key, "files": entries}, f)
    strip_shared_write(tmp)
    os.replace(tmp, stamp)


def _write_if_changed(path: str, text: str) -> None:
    data = text.encode("utf-8")
    try:
        with open(path, "rb") as f:
            if f.read() == data:
                return
    except OSError:
        pass
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def _remove(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)


def _verbosity(job: Job) -> int:
    """0: silent; 1: one line when a build passes a second; 2: the line at once, and commands."""
    if job.verbose is not None:
        return 2 if job.verbose else 0
    env = os.environ.get("TVMFFI_BUILD_VERBOSE", "")
    if env in ("0", "false", "no", "off"):
        return 0
    if env in ("1", "true", "yes", "on"):
        return 2
    return 1


@contextmanager
def _progress(job: Job, build_dir: str) -> Iterator[None]:
    level = _verbosity(job)
    if level == 0:
        yield
        return
    what = ", ".join(os.path.basename(u.path) for u in job.units) or "nothing"
    line = f"tvmffi: building {job.name} ({what}) in {build_dir} ..."
    if level > 1:
        print(line, file=sys.stderr, flush=True)
        yield
        return
    timer = threading.Timer(1.0, lambda: print(line, file=sys.stderr, flush=True))
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
