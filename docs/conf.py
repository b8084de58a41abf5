"""Sphinx configuration of the tvmffi documentation (``make docs``).

Pages are MyST Markdown. Every page at the top of ``docs/`` is listed in the
index's "Topics" table of contents by a glob, so adding a topic page is adding
a file. The build is offline (no intersphinx) and warnings are errors.
"""

from __future__ import annotations

import importlib.util

import tvmffi

project = "tvmffi"
author = "The tvmffi authors"
copyright = "2026, The tvmffi authors"
release = tvmffi.__version__
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build"]
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "undoc-members": False}
napoleon_google_docstring = True
napoleon_numpy_docstring = True
# "Attributes" sections as fields: autodoc documents the attributes themselves too.
napoleon_use_ivar = True
# Names the docstrings mention that autodoc cannot resolve to a page of this site
# (the official binding, NumPy, torch) are not errors.
nitpicky = False
suppress_warnings = ["myst.xref_missing", "ref.python"]

highlight_language = "text"
# Furo (the docs extra; `make docs` installs it): code blocks scroll sideways instead of
# being cut at the page's edge (alabaster cut them), and the layout follows the window's
# width. A venv made before furo joined the extra still builds, with Sphinx's default.
html_theme = "furo" if importlib.util.find_spec("furo") is not None else "alabaster"
html_title = f"tvmffi {release}"


def _drop_sourceless_modules(app: object) -> list[object]:
    """viewcode lists in ``_modules/index.html`` every module an object came from, also
    one whose source it could not read (``tvmffi._core``, a C extension): a link to a
    page it never writes. Runs before viewcode's own handler and drops those."""
    modules = getattr(getattr(app, "env", None), "_viewcode_modules", None)
    if isinstance(modules, dict):
        for name in [name for name, entry in modules.items() if not entry]:
            del modules[name]
    return []


def setup(app: object) -> None:
    app.connect("html-collect-pages", _drop_sourceless_modules, priority=400)  # type: ignore[attr-defined]
