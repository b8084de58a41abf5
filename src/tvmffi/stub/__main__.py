"""``python -m tvmffi.stub``: the same as the ``tvmffi-stubgen`` command."""

import importlib
import sys

# Imported by name: `cli` is the official file that `tvmffi.stub` loads (no file of ours).
sys.exit(importlib.import_module(f"{__package__}.cli").__main__())
