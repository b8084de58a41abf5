"""The runtime's own ``ffi.*`` global functions as attributes (``_ffi_api.Array`` ...).

The official binding's ``init_ffi_api("ffi", __name__)`` idiom: every global
function ``ffi.<name>`` registered when this module is first imported is set
here as ``<name>``.
"""

from __future__ import annotations

from .registry import init_ffi_api

init_ffi_api("ffi", __name__)
