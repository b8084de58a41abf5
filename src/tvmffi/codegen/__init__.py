"""tvmffi.codegen: typed kernel signatures -> validated ``__tvm_ffi_<name>`` wrappers -> modules.

Describe a kernel's parameters with :class:`Tensor`, :class:`Scalar`,
:class:`EnvStream` and symbolic :class:`Var` dimensions, collect them in a
:class:`Signature`, and get C source (:func:`emit_c`), a loaded module
(:func:`build`), one function from a C body (:func:`inline`), or an object file
(:func:`export_object`); :func:`signature_of` gives back the signature of a
function it built. The generated wrapper checks every argument (count,
type, ndim, dtype, device, shapes, divisibility, strides, alignment) and raises
``TypeError``/``ValueError`` with a message ending in
``when calling: `<signature>```. :mod:`tvmffi.codegen.library_bin` reads and
writes the ``__tvm_ffi__library_bin`` layout used to embed modules.
"""

from __future__ import annotations

from . import library_bin
from ._emit import emit_c
from ._library import CompileError, build, export_object, inline, signature_of
from ._spec import EnvStream, Scalar, Signature, Tensor, Var

__all__ = [
    "CompileError",
    "EnvStream",
    "Scalar",
    "Signature",
    "Tensor",
    "Var",
    "build",
    "emit_c",
    "export_object",
    "inline",
    "library_bin",
    "signature_of",
]
