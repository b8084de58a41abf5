"""Python names the generated stubs use for the runtime's types and modules.

The generated code imports the official binding's names (``tvm_ffi``), as the
official generator does: the files it writes serve a package built on
``tvm_ffi`` and read the same under tvmffi (``import tvmffi as tvm_ffi``).
"""

from __future__ import annotations

#: Schema origin -> the Python name it is annotated with (outputs and fields).
TY_MAP_DEFAULTS = {
    "Any": "typing.Any",
    "Callable": "typing.Callable",
    "Array": "collections.abc.Sequence",
    "List": "collections.abc.MutableSequence",
    "Map": "collections.abc.Mapping",
    "Dict": "collections.abc.MutableMapping",
    "Object": "ffi.Object",
    "Tensor": "ffi.Tensor",
    "dtype": "ffi.dtype",
    "Device": "ffi.Device",
    "ffi.Enum": "tvm_ffi.dataclasses.Enum",
}

#: The same for parameters, which accept any sequence or mapping.
TY_MAP_INPUT_DEFAULTS = {
    "Array": "collections.abc.Sequence",
    "List": "collections.abc.Sequence",
    "Map": "collections.abc.Mapping",
    "Dict": "collections.abc.Mapping",
}

#: Registry namespaces -> the Python module that binds them.
MOD_MAP = {
    "testing": "tvm_ffi.testing",
    "ffi": "tvm_ffi",
}
