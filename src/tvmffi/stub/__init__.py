"""``tvmffi.stub``: the stub generator behind ``tvmffi-stubgen`` (official: ``tvm-ffi-stubgen``).

It reads the runtime's reflection registry (global functions with their type
schemas, object types with their fields, methods and native layout) and writes
type stubs into marked blocks of Python (``.py``/``.pyi``) or Rust (``.rs``)
source files, leaving every line outside the blocks untouched. Names, block
directives and output follow the official ``tvm_ffi.stub`` package.
"""
