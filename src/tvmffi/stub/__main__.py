"""``python -m tvmffi.stub``: the same as the ``tvmffi-stubgen`` command."""

import sys

from .cli import __main__

sys.exit(__main__())
