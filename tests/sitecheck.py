"""Helpers that inspect a built site: parse every page, resolve every link."""

from __future__ import annotations

import hashlib
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit


def tree_digest(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*")) if p.is_file()}


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[tuple[str, str]] = []
        self.ids: list[str] = []
        self.scripts: list[dict[str, str | None]] = []
        self.handlers: list[tuple[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        for name in ("href", "src"):
            if a.get(name) is not None:
                self.links.append((tag, a[name] or ""))
        if a.get("id"):
            self.ids.append(a["id"] or "")
        if tag == "script":
            self.scripts.append(a)
        for name, value in attrs:
            if name.startswith("on"):
                self.handlers.append((tag, name))


def parse_page(path: Path) -> _Links:
    p = _Links()
    p.feed(path.read_text(encoding="utf-8"))
    return p


def resolve(site: Path, page: Path, href: str) -> Path | None:
    """The file an internal link points to, or None for external links."""
    parts = urlsplit(href)
    if parts.scheme or parts.netloc:
        return None
    if not parts.path:
        return page
    base = site if parts.path.startswith("/") else page.parent
    target = (base / unquote(parts.path.lstrip("/"))).resolve()
    if parts.path.endswith("/") or target.is_dir():
        target = target / "index.html"
    return target


def broken_links(site: Path, skip: tuple[str, ...] = ("404.html",)) -> list[str]:
    site = site.resolve()
    problems = []
    for page in sorted(site.rglob("*.html")):
        rel = page.relative_to(site).as_posix()
        if rel in skip:
            continue
        parsed = parse_page(page)
        for tag, href in parsed.links:
            target = resolve(site, page, href)
            if target is None:
                continue
            if site not in target.parents or not target.is_file():
                problems.append(f"{rel}: <{tag}> {href} → missing")
                continue
            frag = urlsplit(href).fragment
            if frag and target.suffix == ".html" and frag not in parse_page(target).ids:
                problems.append(f"{rel}: <{tag}> {href} → no id '{frag}'")
    return problems
