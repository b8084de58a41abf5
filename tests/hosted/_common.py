"""Shared by the hosted client scripts: hosting must be on and the official code absent."""

from __future__ import annotations

import os
import sys


def check_hosted() -> None:
    """Fail unless ``tvm_ffi`` is tvmffi here and no official Python code was imported."""
    import tvm_ffi

    assert tvm_ffi.__name__ == "tvmffi", tvm_ffi
    official = [
        m.__file__
        for m in list(sys.modules.values())
        if (getattr(m, "__file__", None) or "").endswith(".py")
        and os.sep + "tvm_ffi" + os.sep in (m.__file__ or "")
    ]
    assert not official, f"official package code imported: {official[:3]}"
