"""Shared by the hosted client scripts: hosting must be on and the official code absent."""

from __future__ import annotations

import os
import sys


def check_hosted() -> None:
    """Fail unless ``tvm_ffi`` is tvmffi here and no official Python code was imported."""
    import tvm_ffi

    assert tvm_ffi.__name__ == "tvmffi", tvm_ffi
    from tvmffi._lib import _package_dir

    # Files under the official package's own directory: a path segment named tvm_ffi
    # elsewhere (a clone folder) is not official code.
    official_dir = os.path.realpath(_package_dir()) + os.sep
    official = [
        m.__file__
        for m in list(sys.modules.values())
        if (getattr(m, "__file__", None) or "").endswith(".py")
        and os.path.realpath(m.__file__ or "").startswith(official_dir)
    ]
    assert not official, f"official package code imported: {official[:3]}"
