"""Code blocks cut at the page's edge, seen in a headless Chromium.

``python tools/check_overflow.py SITE_DIR [PAGE.html ...]``: each page of a built HTML
site is loaded in Chromium (``chromium --headless --dump-dom``) at a desktop and a phone
width with a small script added that measures every ``<pre>``: a block wider than its box
must scroll (``overflow-x: auto`` or ``scroll``), and no block may reach past the
window's right edge. Prints one line per cut block; exits 1 if any, 2 without Chromium.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

PAGES = (
    "index.html",
    "guide/getting-started.html",
    "guide/kernels.html",
    "ops.html",
    "performance.html",
    "api/functions.html",
    "api/kernels.html",
)
WIDTHS = (1280, 412)

# Runs after the page's stylesheets (a script at the end of <body> waits for them) and
# writes what it found into the DOM, which --dump-dom prints.
_PROBE = """
<script>
(function () {
  var cut = [];
  var right = document.documentElement.clientWidth;
  document.querySelectorAll("pre").forEach(function (pre, i) {
    var style = getComputedStyle(pre);
    var scrolls = style.overflowX === "auto" || style.overflowX === "scroll";
    var box = pre.getBoundingClientRect();
    var text = pre.textContent.trim().split("\\n")[0].slice(0, 60);
    if (box.width === 0) return;  // hidden (a collapsed section)
    if (pre.scrollWidth > pre.clientWidth + 1 && !scrolls)
      cut.push({block: i, why: "wider than its box and does not scroll", text: text});
    else if (box.right > right + 1)
      cut.push({block: i, why: "reaches past the window's right edge", text: text});
  });
  var out = document.createElement("script");
  out.type = "application/json";
  out.id = "tvmffi-overflow";
  out.textContent = JSON.stringify({blocks: document.querySelectorAll("pre").length, cut: cut});
  document.body.appendChild(out);
})();
</script>
"""
_REPORT = re.compile(r'<script type="application/json" id="tvmffi-overflow">(.*?)</script>', re.S)


def chromium() -> str | None:
    """The Chromium executable (Debian's ``chromium``), or ``None``."""
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def measure(browser: str, page: Path, width: int) -> dict[str, object]:
    """``{"blocks": n, "cut": [...]}`` for one page at one window width."""
    with tempfile.TemporaryDirectory() as profile:
        proc = subprocess.run(
            [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             f"--user-data-dir={profile}", f"--window-size={width},900",
             "--virtual-time-budget=3000", "--dump-dom", page.as_uri()],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
    found = _REPORT.search(proc.stdout)
    if found is None:
        raise RuntimeError(f"{page.name}: no report from Chromium (rc {proc.returncode}):\n"
                           f"{proc.stderr[-2000:]}")  # fmt: skip
    result: dict[str, object] = json.loads(found.group(1))
    return result


def cut_blocks(site: Path, pages: tuple[str, ...] = PAGES, browser: str | None = None) -> list[str]:
    """``"page @width: block N (why): first line"`` for every cut code block.

    The pages are probed in a copy of the site (the probe script is added to them)."""
    browser = browser or chromium()
    if browser is None:
        raise FileNotFoundError("no chromium executable on PATH")
    cut: list[str] = []
    blocks = 0
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "site"
        shutil.copytree(site, copy)
        for name in pages:
            page = copy / name
            html = page.read_text(encoding="utf-8")
            page.write_text(html.replace("</body>", _PROBE + "</body>", 1), encoding="utf-8")
            for width in WIDTHS:
                report = measure(browser, page, width)
                blocks += int(report["blocks"])  # type: ignore[call-overload]
                for block in report["cut"]:  # type: ignore[attr-defined]
                    cut.append(f"{name} @{width}px: block {block['block']} ({block['why']}): "
                               f"{block['text']}")  # fmt: skip
    if blocks == 0:
        raise RuntimeError(f"no code block found on {', '.join(pages)}: nothing was measured")
    return cut


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    browser = chromium()
    if browser is None:
        print("no chromium executable on PATH (Debian: apt-get install chromium)", file=sys.stderr)
        return 2
    pages = tuple(argv[2:]) or PAGES
    cut = cut_blocks(Path(argv[1]), pages, browser)
    for line in cut:
        print(line)
    return 1 if cut else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
