"""Broken internal links of a built HTML site: ``python tools/check_links.py DIR``.

Every ``href``/``src`` of every page that is not an outside address (``http:``,
``mailto:``, ...) must name a file of the site, and its ``#fragment`` an ``id`` (or
``<a name>``) in that file. Prints one line per broken link; exits 1 if any.
"""

from __future__ import annotations

import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name == "id" or (tag == "a" and name == "name"):
                self.ids.add(value)
            elif (name == "href" and tag in ("a", "link", "area")) or (
                name == "src" and tag in ("img", "script", "iframe")
            ):
                self.links.append(value)


def _parse(path: Path, cache: dict[Path, _Page]) -> _Page:
    if path not in cache:
        page = _Page()
        page.feed(path.read_text(encoding="utf-8", errors="replace"))
        cache[path] = page
    return cache[path]


def broken_links(site: Path) -> list[str]:
    """``"page: link (why)"`` for every internal link of ``site`` that leads nowhere."""
    site = site.resolve()
    cache: dict[Path, _Page] = {}
    broken: list[str] = []
    for page_path in sorted(site.rglob("*.html")):
        page = _parse(page_path, cache)
        for link in page.links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith("//"):
                continue  # an outside address (http:, mailto:, data:, ...)
            target = page_path if not parts.path else (page_path.parent / unquote(parts.path))
            target = target.resolve()
            where = f"{page_path.relative_to(site)}: {link}"
            if target.is_dir():
                target = target / "index.html"
            if site not in target.parents and target != site:
                broken.append(f"{where} (outside the site)")
            elif not target.is_file():
                broken.append(f"{where} (no such file)")
            elif (
                parts.fragment
                and target.suffix == ".html"
                and unquote(parts.fragment) not in _parse(target, cache).ids
            ):
                broken.append(f"{where} (no such anchor)")
    return broken


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    broken = broken_links(Path(argv[1]))
    for line in broken:
        print(line)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
