#!/usr/bin/env python3
"""Extract (page URL, heading ids) ground truth from a docs site built by its real generator.

Used by scripts/record_site_anchors.sh to (re)write
tests/fixtures/sites/<name>/expected_urls.json. Standard library only.

    record_site_anchors.py GENERATOR FIXTURE_DIR BUILD_DIR VERSION [PKG=VERSION ...]

GENERATOR is one of mkdocs, vitepress, docusaurus, mdbook, sphinx-myst, starlight, hugo.
FIXTURE_DIR holds the sources (the folder with the generator's config), BUILD_DIR
the generator's HTML output for that fixture. VERSION is the generator's version;
PKG=VERSION pairs (the packages that shape the output) go to "versions".

For every source page the output HTML file is located by the generator's own
rules (asserted to exist), headings are read from the page's content container
in document order, and the page URL is taken from what the generator writes
(<link rel="canonical">, sitemap) where it writes one, else from base + path.
"""
from __future__ import annotations

import html
import json
import re
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import quote

HEADING_TAGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
VOID_TAGS = {
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link",
    "meta", "param", "source", "track", "wbr",
}
# permalink widgets that generators put inside a heading (text not shown as heading text)
ANCHOR_CLASSES = {"headerlink", "header-anchor", "hash-link", "sl-anchor-link"}
# elements never part of the visible heading text
HIDDEN_CLASSES = {"sr-only"}


def _classes(attrs: dict) -> set[str]:
    return set((attrs.get("class") or "").split())


class HeadingParser(HTMLParser):
    """Collects headings inside a container (matched by a predicate on (tag, attrs))."""

    def __init__(self, container):
        super().__init__(convert_charrefs=True)
        self.container = container
        self.stack: list[str] = []
        self.container_depth: int | None = None
        self.heading: dict | None = None
        self.heading_depth = 0
        self.skip_depth: int | None = None
        self.headings: list[dict] = []
        # Sphinx/docutils: ids live on <section id> (+ <span id> targets before the heading)
        self.pending_ids: list[str] | None = None
        self.canonical: str | None = None
        self.title: str | None = None
        self._in_title = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "link" and a.get("rel") == "canonical":
            self.canonical = a.get("href")
        if tag == "title":
            self._in_title = True
            self.title = ""
        if tag in VOID_TAGS:
            return
        self.stack.append(tag)
        depth = len(self.stack)
        if self.container_depth is None and self.container(tag, a):
            self.container_depth = depth
        inside = self.container_depth is not None
        if inside and self.heading is None:
            if tag == "section" and a.get("id"):
                self.pending_ids = [a["id"]]
            elif tag == "span" and a.get("id") and self.pending_ids is not None:
                self.pending_ids.append(a["id"])
            elif tag in HEADING_TAGS and a.get("id"):
                self.heading = {"level": int(tag[1]), "text": "", "id": a["id"]}
                self.heading_depth = depth
                self.pending_ids = None
            elif tag in HEADING_TAGS and self.pending_ids:
                # id = the <section>'s id (what the headerlink points to); all ids that
                # resolve to this heading are listed in "ids" (section id first)
                self.heading = {"level": int(tag[1]), "text": "", "id": self.pending_ids[0],
                                "ids": self.pending_ids}
                self.heading_depth = depth
                self.pending_ids = None
            else:
                self.pending_ids = None
        elif self.heading is not None and self.skip_depth is None:
            cls = _classes(a)
            if (tag == "a" and cls & ANCHOR_CLASSES) or cls & HIDDEN_CLASSES:
                self.skip_depth = depth
                if tag == "a" and a.get("href", "").startswith("#"):
                    # the permalink must point at the recorded id
                    assert a["href"] == "#" + self.heading["id"], (a["href"], self.heading)

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in VOID_TAGS:
            self.handle_endtag(tag)

    def handle_endtag(self, tag):
        if tag == "title":
            self._in_title = False
        if tag in VOID_TAGS or tag not in self.stack:
            return
        # pop up to and including the matching tag (tolerates unclosed <p> etc.)
        while self.stack:
            depth = len(self.stack)
            t = self.stack.pop()
            if self.skip_depth is not None and depth == self.skip_depth:
                self.skip_depth = None
            if self.heading is not None and depth == self.heading_depth:
                text = self.heading["text"].replace("\u200b", "")
                self.heading["text"] = re.sub(r"\s+", " ", text).strip()
                self.headings.append(self.heading)
                self.heading = None
            if self.container_depth is not None and depth == self.container_depth:
                self.container_depth = None
            if t == tag:
                break

    def handle_data(self, data):
        if self._in_title:
            self.title += data
        if self.heading is not None and self.skip_depth is None:
            self.heading["text"] += data


def parse(html_file: Path, container) -> HeadingParser:
    p = HeadingParser(container)
    p.feed(html_file.read_text(encoding="utf-8"))
    p.close()
    return p


def url_quote(path: str) -> str:
    return quote(path, safe="/:@!$&'()*+,;=-._~")


# --------------------------------------------------------------------------- generators

def g_mkdocs(fixture: Path, build: Path):
    # use_directory_urls: true (default): docs/a/b.md -> site/a/b/index.html, URL .../a/b/
    site_url = "https://example.org/mk/"
    pages = {}
    for src in sorted((fixture / "docs").rglob("*.md")):
        rel = src.relative_to(fixture / "docs")
        if rel.stem == "index":
            route = rel.parent.as_posix()
        else:
            route = rel.with_suffix("").as_posix()
        route = "" if route == "." else route + "/"
        pages[src.relative_to(fixture).as_posix()] = (build / route / "index.html", site_url + url_quote(route))

    def container(tag, a):
        return tag == "div" and a.get("role") == "main"

    return site_url, pages, container


def g_vitepress(fixture: Path, build: Path):
    # cleanUrls: false (default): docs/a/b.md -> dist/a/b.html, URL <base>a/b.html;
    # docs/a/index.md -> dist/a/index.html, linked (nav, sitemap) as <base>a/
    site_url = "https://example.org/vp/"
    docs = fixture / "docs"
    pages = {}
    for src in sorted(docs.rglob("*.md")):
        rel = src.relative_to(docs)
        if "parts" in rel.parts:  # srcExclude: ['**/parts/**']
            continue
        out = rel.with_suffix(".html").as_posix()
        route = out[: -len("index.html")] if rel.name == "index.md" else out
        pages[src.relative_to(fixture).as_posix()] = (build / out, site_url + url_quote(route))

    def container(tag, a):
        return tag == "div" and "vp-doc" in _classes(a)

    return site_url, pages, container


def g_docusaurus(fixture: Path, build: Path):
    # Page routes come from Docusaurus' own metadata (written during `docusaurus build`
    # into .docusaurus/), copied by record_site_anchors.sh into BUILD/_routes.json as
    # {"<source path rel. to fixture>": "<permalink>"}.
    site_url = "https://example.org/dz/"
    routes = json.loads((build / "_routes.json").read_text(encoding="utf-8"))
    pages = {}
    for src, permalink in sorted(routes.items()):
        assert permalink.startswith("/dz/"), permalink
        rel = permalink[len("/dz/"):]
        out = build / rel / "index.html" if (not rel or rel.endswith("/") or not rel.endswith(".html")) else build / rel
        pages[src] = (out, "https://example.org" + url_quote(permalink))

    def container(tag, a):
        return tag == "div" and "theme-doc-markdown" in _classes(a)

    return site_url, pages, container


def g_mdbook(fixture: Path, build: Path):
    # src/a/b.md -> book/a/b.html; README.md/index.md -> index.html. site-url is a path.
    site_url = "/book/"
    src_dir = fixture / "src"
    pages = {}
    for src in sorted(src_dir.rglob("*.md")):
        rel = src.relative_to(src_dir)
        if rel.as_posix() == "SUMMARY.md":
            continue
        out = rel.with_suffix(".html").as_posix()
        if rel.name in ("README.md",):
            out = (rel.parent / "index.html").as_posix()
        pages[src.relative_to(fixture).as_posix()] = (build / out, site_url + url_quote(out))

    def container(tag, a):
        return tag == "main"

    return site_url, pages, container


def g_sphinx(fixture: Path, build: Path):
    # conf.py is in FIXTURE/docs (source dir); html builder (default):
    # docs/a/b.md -> _build/html/a/b.html; canonical = html_baseurl + that (index.html too)
    site_url = "https://example.org/sx/"
    docs = fixture / "docs"
    pages = {}
    for src in sorted(docs.rglob("*.md")):
        rel = src.relative_to(docs)
        if rel.parts[0].startswith(("_", ".")):
            continue
        out = rel.with_suffix(".html").as_posix()
        pages[src.relative_to(fixture).as_posix()] = (build / out, site_url + url_quote(out))

    def container(tag, a):
        return tag == "div" and a.get("role") == "main"

    return site_url, pages, container


def g_starlight(fixture: Path, build: Path):
    # src/content/docs/a/b.md(x) -> dist/a/b/index.html, URL https://example.org/a/b/
    site_url = "https://example.org/"
    docs = fixture / "src" / "content" / "docs"
    pages = {}
    for src in sorted(list(docs.rglob("*.md")) + list(docs.rglob("*.mdx"))):
        rel = src.relative_to(docs)
        route = rel.with_suffix("").as_posix()
        if rel.stem == "index":
            route = rel.parent.as_posix()
        route = "" if route == "." else route.lower() + "/"
        pages[src.relative_to(fixture).as_posix()] = (build / route / "index.html", site_url + url_quote(route))

    def container(tag, a):
        return tag == "main"

    return site_url, pages, container


def g_hugo(fixture: Path, build: Path):
    # the fixture's layout writes each page's permalink and source file into its <head>, so
    # which output is which page is Hugo's own answer (headless and draft pages have none)
    site_url = "https://docs.example.org/"
    pages = {}
    for out in sorted(build.rglob("*.html")):
        text = out.read_text(encoding="utf-8")
        src = re.search(r'<meta name="source" content="([^"]+)"', text)
        url = re.search(r'<link rel="canonical" href="([^"]+)"', text)
        source, url = html.unescape(src.group(1)) if src else "", html.unescape(url.group(1)) if url else ""
        if source.startswith(str(STAGED)) and url:
            pages[source[len(str(STAGED)) + 1:]] = (out, url)

    def container(tag, a):
        return tag == "main"

    return site_url, pages, container


STAGED = Path("/nonexistent")  # the staged copy Hugo built (set by main for hugo)


GENERATORS = {
    "mkdocs": g_mkdocs,
    "vitepress": g_vitepress,
    "docusaurus": g_docusaurus,
    "mdbook": g_mdbook,
    "sphinx-myst": g_sphinx,
    "starlight": g_starlight,
    "hugo": g_hugo,
}


def main(argv):
    gen, fixture, build, version = argv[1], Path(argv[2]).resolve(), Path(argv[3]).resolve(), argv[4]
    global STAGED
    STAGED = build.parent  # hugo: the staged fixture, which its pages' source paths start with
    site_url, pages, container = GENERATORS[gen](fixture, build)
    versions = dict(arg.split("=", 1) for arg in argv[5:])
    result = {"generator": gen, "version": version, "site_url": site_url}
    if versions:
        result["versions"] = versions
    result["pages"] = {}
    for src, (out, url) in pages.items():
        if not out.is_file():
            raise SystemExit(f"{gen}: no output {out} for {src}")
        p = parse(out, container)
        if p.canonical and p.canonical != url:
            raise SystemExit(f"{gen}: {src}: computed URL {url} != canonical {p.canonical}")
        if not p.headings:
            raise SystemExit(f"{gen}: no headings found in {out}")
        result["pages"][src] = {
            "url": url,
            "output": out.relative_to(build).as_posix(),
            "headings": p.headings,
        }
    dest = fixture / "expected_urls.json"
    dest.write_text(json.dumps(result, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    n = sum(len(v["headings"]) for v in result["pages"].values())
    print(f"{gen}: wrote {dest} ({len(pages)} pages, {n} headings)")


if __name__ == "__main__":
    main(sys.argv)
