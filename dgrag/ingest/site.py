"""The docs site a folder is: its generator, which pages it publishes, and their URLs.

`detect_site(root, settings)` finds the generator's config under the docs root (mkdocs.yml,
docusaurus.config.*, .vitepress/config.*, book.toml, conf.py, astro.config.* with Starlight,
.gitbook.yaml)
or takes `settings.site`; `Site.pages` lists the pages the site publishes (its content
folders, mdBook's SUMMARY, not the repository's README or changelog beside them); `Site.page_url`
is a page's published URL, with the front matter's `slug` / `id` applied. Without a config
the folder is plain GitHub-flavoured Markdown, every page is read and nothing changes from
before this layer existed (the demo's index is identical).
"""
from __future__ import annotations

import os
import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit


from ..errors import ConfigError
from .hugo import hugo_route, is_hugo_config, suffix_lang, unrendered
from .site_configs import CONFIG_ERRORS, HUGO_NAMES, READERS, SitePart, language_of_locale, mkdocs_own

GENERATORS = ("plain",) + tuple(g for g, _, _ in READERS)
PAGE_EXTS = (".md", ".mdx", ".markdown")
_SKIP_DIRS = {"node_modules", "site", "build", "_build", "book", "dist", "target", "venv", "__pycache__"}
_LANG_FOLDER = re.compile(r"[a-z]{2,3}(?:[-_][a-z]{2,4})?")  # "es", "pt", "zh-hant": a language's folder
_NUMBER_PREFIX = re.compile(r"^\d+[-_.]\s*(?!\d)")  # "01-intro" -> "intro"; a date or a version stays


@dataclass
class Site:
    generator: str = "plain"
    config: str = ""                      # the config file, relative to the docs root
    parts: list[SitePart] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def slug_rule(self) -> str:
        return self.parts[0].slug_rule if self.parts else "github"

    @property
    def extensions(self) -> tuple[str, ...]:
        return self.parts[0].extensions if self.parts else ()

    def part_of(self, path: str) -> SitePart | None:
        best = None
        for p in self.parts:
            if (not p.content or path.startswith(p.content + "/")) and (best is None or len(p.content) > len(best.content)):
                best = p
        return best

    def publishes(self, path: str) -> bool:
        part = self.part_of(path)
        if part is None:
            return False
        rel = path[len(part.content) + 1:] if part.content else path
        segs = rel.split("/")
        if any(s in part.exclude for s in segs[:-1]) or any(s.startswith("_") for s in segs) and self.generator == "docusaurus":
            return False  # Docusaurus: "_" files are partials, imported, not pages
        if part.exclude_globs:
            src = self.parts[0].content  # VitePress's globs are relative to its srcDir
            rel_src = path[len(src) + 1:] if src else path
            if any(_glob(g).match(rel_src) for g in part.exclude_globs):
                return False
        return part.pages is None or path in part.pages

    def language_of(self, path: str) -> str:
        part = self.part_of(path)
        if part and suffix_lang(part, path):
            return language_of_locale(suffix_lang(part, path))
        return part.language if part else ""

    def asset_root(self, path: str) -> str:
        """The folder a site-absolute path on the page (`/img/logo.png`) starts from, relative to
        the docs root: mkdocs serves its docs_dir at the site's root, Hugo's `ref "/x.md"` starts
        from the content folder; elsewhere the docs root."""
        part = self.part_of(path)
        return part.content if part and self.generator in ("mkdocs", "hugo") else ""

    def asset_url(self, path: str) -> str:
        """The URL `asset_root` is published at ("" where unknown or not mkdocs): an image the
        page links there by its full URL is that file."""
        part = self.part_of(path)
        base = part.url_base if part and self.generator == "mkdocs" else ""
        return base if base.startswith(("http://", "https://")) else ""

    def unrendered(self, root: Path, path: str, front: dict) -> bool:
        """Hugo: a page its site builds but never renders (`hugo.unrendered`)."""
        return self.generator == "hugo" and unrendered(root, self.part_of(path), path, front)

    def nav_of(self, path: str) -> tuple[int, str] | None:
        for p in self.parts:
            if path in p.nav:
                return p.nav[path]
        return None

    def route(self, path: str, front: dict | None = None) -> str | None:
        """The page's path on the site, relative to its part's URL base ("guide/setup/",
        "ch01-01-installation.html"); None for a page the site does not publish."""
        part = self.part_of(path)
        if part is None or self.generator == "plain":
            return None
        return _route(self.generator, part, path, front or {})

    def page_url(self, path: str, front: dict | None = None) -> str | None:
        """The page's published URL: absolute where the site URL is known, else its path on the site."""
        route = self.route(path, front)
        if route is None:
            return None
        part = self.part_of(path)
        base = part.suffix_langs.get(suffix_lang(part, path)) or part.url_base or ""
        if self.generator == "hugo" and str((front or {}).get("url") or "").strip().startswith("/"):
            base = part.root_url or base  # Hugo: `url: /x/` is from the site's base, in every language
        route = quote(route, safe="/%+@" if self.generator == "hugo" else "/%")  # 指南.md: %E6%8C%87%E5%8D%97
        if base.startswith("/") or base.startswith("http"):
            return base.rstrip("/") + "/" + route if base.rstrip("/") else "/" + route
        return "/" + route

    def _key(self, path: str) -> str | None:
        """A page's URL path below the site's own base, normalised: "zh/guide/cms"."""
        url = self.page_url(path)
        if url is None:
            return None
        main = self.parts[0].url_base or ""
        url = url[len(main):] if main and url.startswith(main) else urlsplit(url).path
        return _normal(unquote(url))

    def routes(self, pages: list[str]) -> dict[str, str]:
        """URL path -> page, for links written as site routes (`/guide/deploy`, `./cms`)."""
        out = {}
        for p in pages:
            key = self._key(p)
            if key is not None:
                out.setdefault(key, p)
        return out

    def link_target(self, href: str, page_path: str, routes: dict[str, str]) -> str | None:
        """The page a route link names (not a .md path: those resolve as files), or None."""
        if not routes:
            return None
        target = unquote(href)
        if not target.startswith("/"):
            here = self._key(page_path) or ""
            url = self.page_url(page_path) or ""
            folder = here if url.endswith("/") else posixpath.dirname(here)
            target = posixpath.normpath(posixpath.join(folder, target))
        base = urlsplit(self.parts[0].url_base or "").path.strip("/")
        key = _normal(target)
        if base and key.startswith(base + "/"):  # a link written with the site's base path: /docs/intro
            key = key[len(base) + 1:]
        return routes.get(key)

    def describe(self) -> dict:
        return {"generator": self.generator, "config": self.config, "notes": self.notes,
                "parts": [{"content": p.content, "url": p.url_base, "language": p.language,
                           "slug_rule": p.slug_rule, "url_style": p.url_style} for p in self.parts]}


def _normal(route: str) -> str:
    route = route.strip("/")
    route = route[:-len(".html")] if route.endswith(".html") else route
    return "" if route == "index" else route[:-len("/index")] if route.endswith("/index") else route


def _glob(pattern: str) -> re.Pattern:
    """A VitePress (fast-glob) pattern: `**/` is any folders or none, `*` stays in one folder."""
    out = re.escape(pattern).replace(r"\*\*/", "(?:.*/)?").replace(r"\*\*", ".*").replace(r"\*", "[^/]*")
    return re.compile(out.replace(r"\?", "[^/]") + "$")


def _route(generator: str, part: SitePart, path: str, front: dict) -> str:
    rel = path[len(part.content) + 1:] if part.content else path
    if generator == "hugo":
        return hugo_route(part, rel, front)
    if generator == "gitbook":  # the first page at the root; a folder's README.md is the folder
        stem = posixpath.splitext(rel)[0]
        folder, name = posixpath.split(stem)
        return "" if path == part.home else folder if name.lower() == "readme" else stem
    for a, b in part.rewrites:
        if rel.startswith(a):
            rel = b + rel[len(a):]
    stem = posixpath.splitext(rel)[0]
    folder, name = posixpath.split(stem)
    if part.strip_number_prefix:
        folder = "/".join(_NUMBER_PREFIX.sub("", s) for s in folder.split("/")) if folder else ""
        name = _NUMBER_PREFIX.sub("", name)
    slug = str(front.get("slug") or "").strip()
    if slug and generator in ("docusaurus", "starlight"):
        route = slug.strip("/") if slug.startswith("/") or generator == "starlight" else posixpath.join(folder, slug)
        return route + "/" if part.url_style == "directory" and route else route
    if front.get("id") and generator == "docusaurus":
        name = str(front["id"])
    index = name.lower() == "index" or (name.lower() == "readme" and generator in ("mdbook", "mkdocs", "docusaurus")) \
        or (generator == "docusaurus" and folder and name == posixpath.basename(folder))
    if index:
        if part.url_style == "html" and generator in ("mdbook", "sphinx"):
            return posixpath.join(folder, "index.html")
        return folder + "/" if folder and generator != "docusaurus" else folder
    route = posixpath.join(folder, name)
    return {"directory": route + "/", "html": route + ".html"}.get(part.url_style, route)


def _find_configs(root: Path, max_depth: int = 3) -> list[tuple[str, str, Path]]:
    """(generator, folder relative to root, config path), shallowest first."""
    found = []
    names = {n: g for g, ns, _ in READERS for n in ns}
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root).replace(os.sep, "/")
        rel = "" if rel == "." else rel
        depth = rel.count("/") + 1 if rel else 0
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and (not d.startswith(".") or d == ".vitepress")
                             and depth < max_depth)
        for f in sorted(filenames):
            gen = names.get(f)
            if gen == "vitepress" and posixpath.basename(rel) != ".vitepress":
                continue
            if gen is None and f.startswith("config.") and posixpath.basename(rel) == ".vitepress":
                gen = "vitepress"
            if gen and _is_config(gen, Path(dirpath) / f):
                found.append((depth, gen, rel, Path(dirpath) / f))
    # Hugo reads one config per folder: the first of HUGO_NAMES there
    hugo: dict[str, list[Path]] = {}
    for _, g, r, p in found:
        if g == "hugo":
            hugo.setdefault(r, []).append(p)
    first = {r: min(ps, key=lambda p: HUGO_NAMES.index(p.name)) for r, ps in hugo.items()}
    found = [f for f in found if f[1] != "hugo" or first[f[2]] == f[3]]
    return [(g, r, p) for _, g, r, p in sorted(found, key=lambda t: (t[0], t[2]))]


def _is_config(generator: str, path: Path) -> bool:
    if not path.is_file():  # a folder, a fifo or a broken link named like a config
        return False
    if generator == "hugo":
        return is_hugo_config(path)
    if generator not in ("sphinx", "starlight"):
        return True
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read(1 << 20)
    except OSError:
        return False
    return ("extensions" in text or "html_theme" in text) if generator == "sphinx" else "starlight" in text


def _page_count(root: Path, parts: list[SitePart]) -> int:
    n = 0
    for p in parts:
        if p.pages is not None:
            n += len(p.pages)
            continue
        for _, _, files in os.walk(root / p.content):
            n += sum(f.lower().endswith(PAGE_EXTS) for f in files)
    return n


def detect_site(root: Path, generator: str = "", site_url: str = "") -> Site:
    """The site under `root`: `generator` forces one ("plain" reads every page as before)."""
    if generator and generator not in GENERATORS:
        raise ConfigError(f"unknown site generator {generator!r} ({', '.join(GENERATORS)})")
    if generator == "plain":
        return Site(notes=["plain Markdown folder (site generator set to plain)"])
    configs = [c for c in _find_configs(root) if not generator or c[0] == generator]
    if not configs:
        if generator:
            raise ConfigError(f"no {generator} config found under {root}")
        return Site(notes=["no site generator config found: plain Markdown, every page"])
    readers = {g: r for g, _, r in READERS}
    best: Site | None = None
    read_notes: list[str] = []
    for gen, folder, path in configs:
        notes: list[str] = []
        try:
            parts = readers[gen](root, folder, path, notes)
        except CONFIG_ERRORS as exc:
            read_notes.append(f"{gen}: {posixpath.join(folder, path.name)} not read: {exc}")
            continue
        site = Site(gen, posixpath.join(folder, path.name), parts, notes)
        if best is None or _ranks_above(root, site, best):
            best = site
    if best is None:
        return Site(notes=read_notes + ["no config could be read: plain Markdown, every page"])
    best.notes += read_notes
    best = _inherited(root, best, configs, readers)
    used = _variants(root, best, configs, readers)
    if site_url:
        _override_url(best, site_url)
    others = sorted({f"{g}: {posixpath.join(f, p.name)}" for g, f, p in configs} - {f"{best.generator}: {best.config}"}
                    - used)
    if others:
        best.notes.append(f"other configs not used: {', '.join(others[:5])}")
    return best


def _ranks_above(root: Path, site: Site, best: Site) -> bool:
    """More pages wins; but a Hugo site known by a `config.*` (a name other tools use too) never
    wins over another generator's own config."""
    guessed = [s.generator == "hugo" and posixpath.basename(s.config).startswith("config.") for s in (site, best)]
    if guessed[0] != guessed[1] and site.generator != best.generator:
        return guessed[1]
    return _page_count(root, site.parts) > _page_count(root, best.parts)


def _inherit_target(path: Path) -> Path | None:
    parent = mkdocs_own(path).get("INHERIT")
    return (path.parent / str(parent)).resolve() if parent else None


def _inherited(root: Path, best: Site, configs, readers) -> Site:
    """The config a translation inherits from is the site's main one, even where the
    translation counts more pages (its nav is the main config's)."""
    if best.generator != "mkdocs":
        return best
    try:
        target = _inherit_target(root / best.config)
    except CONFIG_ERRORS:
        return best
    for gen, folder, path in configs:
        if gen == "mkdocs" and target is not None and path.resolve() == target:
            notes: list[str] = []
            try:
                return Site(gen, posixpath.join(folder, path.name), readers[gen](root, folder, path, notes), notes)
            except CONFIG_ERRORS as exc:
                best.notes.append(f"mkdocs: {posixpath.join(folder, path.name)} not read: {exc}")
    return best


def _variants(root: Path, site: Site, configs, readers) -> set[str]:
    """mkdocs sites translated as one config per language (`INHERIT: ../en/mkdocs.yml`); the
    configs read. A translation that keeps the main config's `site_url` is published under its
    language folder's name (`docs/zh/mkdocs.yml`: `site_url` + `zh/`), as a multilingual
    mkdocs-material site builds each language into its own folder of the one site; one that keeps
    the main config's language too (FastAPI's `docs/es/mkdocs.yml` is `INHERIT` alone) is its
    folder's language."""
    used: set[str] = set()
    if site.generator != "mkdocs":
        return used
    main = (root / site.config).resolve()
    main_url = site.parts[0].url_base if site.parts else ""
    for gen, folder, path in configs:
        if gen != "mkdocs" or path.resolve() == main:
            continue
        label = f"mkdocs: {posixpath.join(folder, path.name)}"
        try:
            if _inherit_target(path) != main:
                continue
            parts = readers[gen](root, folder, path, site.notes)
            own_url = bool(mkdocs_own(path).get("site_url"))
        except CONFIG_ERRORS as exc:
            site.notes.append(f"{label} not read: {exc}")
            continue
        main_lang = site.parts[0].language if site.parts else ""
        for p in parts:
            if not own_url and main_url and p.url_base == main_url and posixpath.basename(folder):
                p.url_base = main_url.rstrip("/") + "/" + posixpath.basename(folder) + "/"
            code = posixpath.basename(folder).lower()
            if p.language == main_lang and _LANG_FOLDER.fullmatch(code):  # `INHERIT` alone (FastAPI's docs/es/)
                p.language = language_of_locale(code)                    # its folder names its language
        site.parts += parts
        used.add(label)
    return used


def _override_url(site: Site, site_url: str) -> None:
    base = site_url.rstrip("/") + "/"
    first = site.parts[0] if site.parts else None
    old = first.url_base if first else ""
    for p in site.parts:
        if p is first or not first:
            p.url_base = base
        elif first.content and p.content.startswith(first.content + "/"):
            p.url_base = base + p.content[len(first.content) + 1:].split("/")[0] + "/"
        elif old and p.url_base.startswith(old) and p.url_base != old:  # a translation under the main URL: /es/
            p.url_base = base + p.url_base[len(old):]
        else:
            p.url_base = base
