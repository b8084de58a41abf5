"""Every ```python block of the documentation (and of README.md) runs.

The blocks of one page run in order, in one namespace, in a fresh interpreter
whose working directory is a temporary directory, so they cannot rot. A page
that imports a package this environment lacks (torch, jax, tvm) is skipped with
that reason. Code meant to be read, not run, goes in a ```text block.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(p for p in DOCS.rglob("*.md") if "_build" not in p.parts)]
FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)
IMPORT = re.compile(r"^\s*(?:import|from)\s+([A-Za-z_][A-Za-z0-9_]*)", re.M)


def python_blocks(text: str) -> list[str]:
    return [m.group(1) for m in FENCE.finditer(text)]


def test_docs_have_pages_with_code() -> None:
    assert (DOCS / "index.md").exists()
    assert sum(len(python_blocks(p.read_text())) for p in PAGES) >= 10


# Pages whose code starts Ray and DDP ranks (scaling) or compiles operators with
# torch.compile, torch.export and jax.jit (ops; 1-3 min on two cores): make test-fast
# leaves them out.
SLOW_PAGES = {"scaling.md", "ops.md"}


@pytest.mark.parametrize(
    "page",
    [pytest.param(p, marks=pytest.mark.slow) if p.name in SLOW_PAGES else p for p in PAGES],
    ids=[str(p.relative_to(ROOT)) for p in PAGES],
)
def test_page_code_runs(page: Path, tmp_path: Path) -> None:
    blocks = python_blocks(page.read_text())
    if not blocks:
        pytest.skip("no python blocks")
    code = "\n\n".join(blocks)
    for name in sorted(set(IMPORT.findall(code))):
        if importlib.util.find_spec(name) is None:
            pytest.skip(f"needs {name}")
    script = tmp_path / "page.py"
    script.write_text(code)
    proc = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, f"{page.name}:\n{proc.stdout}\n{proc.stderr}"


def test_link_checker_finds_broken_links(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "index.html").write_text(
        '<a href="a/b.html#here">ok</a> <a href="a/b.html#gone">anchor</a>'
        '<a href="missing.html">file</a> <a href="https://example.org/x">outside</a>'
        '<a href="#top">self</a> <p id="top"></p>'
    )
    (tmp_path / "a" / "b.html").write_text('<h1 id="here">b</h1><a href="../index.html">up</a>')
    broken = _tool("check_links").broken_links(tmp_path)  # type: ignore[attr-defined]
    assert broken == [
        "index.html: a/b.html#gone (no such anchor)",
        "index.html: missing.html (no such file)",
    ]


def _tool(name: str) -> object:
    """tools/<name>.py, loaded from its file (tools/ is no package)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The documentation built once into a temporary directory (warnings are errors)."""
    if any(importlib.util.find_spec(m) is None for m in ("sphinx", "myst_parser", "furo")):
        pytest.skip("needs sphinx, myst-parser and furo (the docs extra)")
    out = tmp_path_factory.mktemp("docs") / "html"
    proc = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
         str(DOCS), str(out)],
        capture_output=True,
        text=True,
        timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return out


def test_site_builds_without_warnings_or_broken_links(site: Path) -> None:
    assert (site / "api" / "functions.html").exists()
    # Every module has its page; no internal link leads nowhere (a file or an anchor).
    for page in ("torch", "jax", "pickling", "hosting", "runtime", "modules"):
        assert (site / "api" / f"{page}.html").exists(), page
    assert _tool("check_links").broken_links(site) == []  # type: ignore[attr-defined]
    assert 'src="_images/speed.svg"' in (site / "performance.html").read_text()


@pytest.mark.slow  # a headless browser loads each main page twice
def test_no_code_block_is_cut_in_a_browser(site: Path) -> None:
    check = _tool("check_overflow")
    if check.chromium() is None:  # type: ignore[attr-defined]
        pytest.skip("needs Chromium (Debian: apt-get install chromium)")
    assert check.cut_blocks(site) == []  # type: ignore[attr-defined]


def test_install_text_agrees() -> None:
    """README and the getting-started page give the same install commands (issue 43):
    tvmffi is not on PyPI, and the wheel command lets pip pick the wheel that fits."""
    readme = (ROOT / "README.md").read_text()
    start = (DOCS / "guide" / "getting-started.md").read_text()
    for text in (readme, start):
        assert "not on PyPI" in text
        assert "pip install .  " in text
        assert "pip install --find-links dist --only-binary tvmffi tvmffi" in text
        assert "PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu" in text
        assert "PIP_FIND_LINKS=" in text
        assert not re.search(r"^\s*pip install tvmffi\s*$", text, re.M)  # not on any index
        # A glob fails when dist/ holds several wheels.
        assert not re.search(r"^\s*pip install dist/tvmffi-\*\.whl", text, re.M)
    makefile = (ROOT / "Makefile").read_text()
    torch = re.search(r"^TORCH \?= (\S+)$", makefile, re.M)
    assert torch is not None and torch.group(1) in readme


def test_overflow_check_sees_a_cut_block(tmp_path: Path) -> None:
    check = _tool("check_overflow")
    if check.chromium() is None:  # type: ignore[attr-defined]
        pytest.skip("needs Chromium (Debian: apt-get install chromium)")
    long = "x" * 400
    (tmp_path / "index.html").write_text(
        "<html><head><style>pre { width: 300px }</style></head><body>"
        f'<pre style="overflow: hidden">cut {long}</pre>'
        f'<pre style="overflow: auto">scrolls {long}</pre><pre>short</pre></body></html>'
    )
    cut = check.cut_blocks(tmp_path, ("index.html",))  # type: ignore[attr-defined]
    assert len(cut) == 2 and all("block 0 (wider than its box" in c for c in cut), cut
