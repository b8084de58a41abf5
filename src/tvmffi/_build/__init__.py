"""The one build system of tvmffi: ``tvmffi.cpp`` and ``tvmffi.codegen`` both build here.

- :mod:`.toolchain`: compiler discovery (``$CC``/``$CXX``/``$NVCC``), default flags,
  the runtime's include and library directories, CUDA architecture;
- :mod:`.engine`: a :class:`Job` compiled in parallel and linked, cached by a stamp,
  serialized by a file lock, published atomically, with feedback on slow builds;
- :mod:`.errors`: :class:`CompileError`, with undefined symbols named and explained;
- :mod:`.private`: a shared build cache is used only when private to this user.
"""

from __future__ import annotations

from .engine import Job, Unit, build, stats
from .errors import CompileError
from .private import UnsafeCacheError
from .toolchain import LANG_OF_SUFFIX

__all__ = ["LANG_OF_SUFFIX", "CompileError", "Job", "Unit", "UnsafeCacheError", "build", "stats"]
