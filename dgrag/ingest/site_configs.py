"""What a docs generator's own config file says: one reader per generator.

Each reader takes the config file's folder (relative to the docs root, "" for the root
itself) and returns `SitePart`s: a content folder, the published URL of its pages, its
language, how page paths become URLs and which slug rule anchors its headings. JavaScript
and TypeScript configs are not run (that needs Node and the site's packages): their string
literals are read, with `const NAME = '...'` resolved, which is how every site we read
writes its `url`, `base` and `locales`; what could not be read is said in the notes.
"""
from __future__ import annotations

import posixpath
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

import yaml

# what reading a config may raise (toml's errors are ValueErrors; yaml's are its own)
CONFIG_ERRORS = (OSError, ValueError, KeyError, TypeError, AttributeError, yaml.YAMLError)
LOCALE_DIR = re.compile(r"^[a-z]{2}(?:[-_][A-Za-z]{2,4})?$")


@dataclass
class SitePart:
    """Pages under `content` (relative to the docs root), published under `url_base`."""

    content: str
    url_base: str = ""           # "https://host/base/" or "/base/" (no host known) or ""
    language: str = ""           # the locale's language ("zh", "en", "ja", ...), "" = from the text
    url_style: str = "html"      # directory (page/), html (page.html), clean (page)
    slug_rule: str = "github"
    strip_number_prefix: bool = False   # Docusaurus: "01-intro.md" -> "intro"
    rewrites: list[tuple[str, str]] = field(default_factory=list)  # VitePress: "en/" -> ""
    pages: list[str] | None = None      # an explicit page list (mdBook's SUMMARY), else every page
    nav: dict[str, tuple[int, str]] = field(default_factory=dict)   # page -> (order, title)
    exclude: list[str] = field(default_factory=list)  # folders under content that are not pages
    exclude_globs: list[str] = field(default_factory=list)  # VitePress's srcExclude, relative to its srcDir
    # MyST's that conf.py enables (attrs_block, ...); Hugo's block_attrs; mkdocs-material's code_annotations
    extensions: tuple[str, ...] = ()
    lower_paths: bool = False           # Hugo: URL paths lower-cased (unless disablePathToLower)
    suffix_langs: dict[str, str] = field(default_factory=dict)  # Hugo: "page.fr.md" -> fr's URL base
    root_url: str = ""                  # Hugo: the site's own base, where `url: /x/` starts in every language
    home: str = ""                      # GitBook: the first page (structure.readme), published at the base


def language_of_locale(code: str) -> str:
    code = code.strip().lower().replace("_", "-")
    return "zh" if code.startswith("zh") else code.split("-")[0]


def _join(*parts: str) -> str:
    """Folders joined and normalised, relative to the docs root ("" for the root itself); a
    config naming a folder above the root is refused (nothing outside it is read)."""
    out = posixpath.normpath(posixpath.join(*[p for p in parts if p])) if any(parts) else ""
    out = "" if out == "." else out.lstrip("/")
    if out == ".." or out.startswith("../"):
        raise ValueError(f"{posixpath.join(*[p for p in parts if p])} is outside the docs root: index the folder above")
    return out


def _norm(folder: str) -> str:
    out = posixpath.normpath(folder) if folder else ""
    return "" if out in (".", "") else out


def _url(host: str, base: str) -> str:
    host = host.rstrip("/")
    base = "/" + base.strip("/") + "/" if base.strip("/") else "/"
    return host + base


# ---- JavaScript / TypeScript configs: string literals only -------------------------------------
_JS_CONST = re.compile(r"""\b(?:const|let|var)\s+(\w+)\s*=\s*(?:[^'"`\n;]*\|\|\s*)?(['"`])([^'"`\n]*)\2""")


def js_value(text: str, key: str, start: int = 0, end: int | None = None) -> str | None:
    """The string (or true / false) a JS object gives `key`, resolving `key: NAME` through
    `const NAME = '...'`; None when the key is absent or not a literal."""
    consts = {m.group(1): m.group(3) for m in _JS_CONST.finditer(text)}
    pat = re.compile(rf"""(?<![\w$.-])['"]?{re.escape(key)}['"]?\s*:\s*(?:(['"`])([^'"`\n]*)\1|(\w+))""")
    m = pat.search(text, start, len(text) if end is None else end)
    if not m:  # the shorthand `{ site, ... }` for `site: site`
        short = re.compile(rf"""[{{,]\s*{re.escape(key)}\s*[,}}]""").search(text, start, len(text) if end is None else end)
        return consts.get(key) if short else None
    if m.group(1):
        return m.group(2)
    word = m.group(3)
    return word if word in ("true", "false") else consts.get(word)


def js_block(text: str, key: str, start: int = 0) -> tuple[int, int] | None:
    """Span of the `{...}` object (or `[...]` array) a JS config gives `key` (from `start`), by bracket depth."""
    m = re.compile(rf"""(?<![\w$.-])['"]?{re.escape(key)}['"]?\s*:\s*([{{\[])""").search(text, start) or \
        re.compile(rf"""\b(?:const|let|var)\s+{re.escape(key)}\s*(?::[^=]*)?=\s*([{{\[])""").search(text, start)
    if not m:
        return None
    open_, close = m.group(1), "}" if m.group(1) == "{" else "]"
    depth, i = 0, m.start(1)
    while i < len(text):
        c = text[i]
        if c in "'\"`":  # skip a string literal
            j = text.find(c, i + 1)
            i = j if j > 0 else len(text)
        elif c == open_:
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return m.start(1), i + 1
        i += 1
    return None


def locale_lang(text: str, locales: tuple[int, int], key: str) -> str:
    """A locale's `lang`, read inside that locale's own object only (else its key)."""
    own = js_block(text, key, locales[0] + 1)
    return (js_value(text, "lang", *own) if own and own[1] <= locales[1] else None) or key


def js_keys(text: str, span: tuple[int, int]) -> list[str]:
    """The top-level keys of the object at `span` (e.g. a `locales` map)."""
    body, keys, depth = text[span[0] + 1:span[1] - 1], [], 0
    for m in re.finditer(r"""[{}\[\]]|(?:^|[,{\s])['"]?([\w-]+)['"]?\s*:""", body):
        tok = m.group(0)
        if tok in "{[":
            depth += 1
        elif tok in "}]":
            depth -= 1
        elif depth == 0 and m.group(1):
            keys.append(m.group(1))
    return keys


# ---- the readers ---------------------------------------------------------------------------
class _Loader(yaml.SafeLoader):
    """mkdocs.yml may carry !!python/name and !ENV tags: read them as plain values."""


_Loader.add_multi_constructor("", lambda loader, suffix, node: (
    loader.construct_scalar(node) if isinstance(node, yaml.ScalarNode) else None))


def mkdocs_own(path: Path) -> dict:
    """One mkdocs.yml's own keys, its `INHERIT` (the config it extends) not followed."""
    data = yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader) or {}
    return data if isinstance(data, dict) else {}


def _mkdocs_yaml(path: Path, depth: int = 0) -> dict:
    data = mkdocs_own(path)
    parent = data.pop("INHERIT", None)
    if parent and depth < 4:
        base = _mkdocs_yaml((path.parent / str(parent)).resolve(), depth + 1)
        base.update(data)
        data = base
    return data


def _mkdocs_nav(nav, docs_dir: str, out: dict, order: list[int]) -> None:
    for item in nav or []:
        if isinstance(item, dict):
            for title, target in item.items():
                if isinstance(target, str):
                    order[0] += 1
                    out[_join(docs_dir, target)] = (order[0], str(title))
                else:
                    _mkdocs_nav(target, docs_dir, out, order)
        elif isinstance(item, str) and not item.startswith(("http:", "https:")):
            order[0] += 1
            out[_join(docs_dir, item)] = (order[0], "")


def read_mkdocs(root: Path, folder: str, config: Path, notes: list[str]) -> list[SitePart]:
    data = _mkdocs_yaml(config)
    docs_dir = _join(folder, str(data.get("docs_dir") or "docs"))
    exts = [e if isinstance(e, str) else next(iter(e), "") for e in data.get("markdown_extensions") or []]
    toc = next((e["toc"] for e in data.get("markdown_extensions") or [] if isinstance(e, dict) and "toc" in e), None)
    slugify = str((toc or {}).get("slugify") or "") if isinstance(toc, dict) else ""
    rule = "pymdownx" if "pymdownx.slugs" in slugify or "pymdownx" in slugify and "slug" in slugify else "python-markdown"
    nav: dict[str, tuple[int, str]] = {}
    _mkdocs_nav(data.get("nav"), docs_dir, nav, [0])
    theme = data.get("theme") if isinstance(data.get("theme"), dict) else {}
    lang = theme.get("language", "")
    style = "directory" if data.get("use_directory_urls", True) else "html"
    # mkdocs-material's code annotations on every block: `# (1)!` in code is a marker, not code
    annotate = isinstance(theme.get("features"), list) and "content.code.annotate" in theme["features"]
    notes.append(f"mkdocs: {posixpath.join(folder, config.name)} (docs_dir {docs_dir}, "
                 f"{len(exts)} markdown extensions, slug rule {rule})")
    extensions = (("code_annotations",) if annotate else ()) + (("attrs_inline",) if "attr_list" in exts else ())
    return [SitePart(docs_dir, str(data.get("site_url") or ""), language_of_locale(lang) if lang else "",
                     style, rule, nav=nav, extensions=extensions)]


def read_docusaurus(root: Path, folder: str, config: Path, notes: list[str]) -> list[SitePart]:
    text = config.read_text(encoding="utf-8")
    host, base = js_value(text, "url") or "", js_value(text, "baseUrl") or "/"
    span = js_block(text, "docs")
    start, end = span if span else (0, 0)
    path = (js_value(text, "path", start, end) if span else None) or "docs"
    route = js_value(text, "routeBasePath", start, end) if span else None
    route = "docs" if route is None else route
    content = _join(folder, path)
    parts = [SitePart(content, _url(host, posixpath.join(base, route.lstrip("/"))) if host else "",
                      "", "clean", "github", strip_number_prefix=True)]
    loc = js_block(text, "i18n")
    if loc:
        default = js_value(text, "defaultLocale", *loc) or "en"
        parts[0].language = language_of_locale(default)
        arr = js_block(text[loc[0]:loc[1]], "locales")
        codes = re.findall(r"['\"]([\w-]+)['\"]", text[loc[0]:loc[1]][arr[0]:arr[1]]) if arr else []
        for code in codes:
            if code == default:
                continue
            tree = _join(folder, "i18n", code, "docusaurus-plugin-content-docs", "current")
            if (root / tree).is_dir():
                parts.append(SitePart(tree, _url(host, posixpath.join(base, code, route.lstrip("/"))) if host else "",
                                      language_of_locale(code), "clean", "github", strip_number_prefix=True))
    notes.append(f"docusaurus: {posixpath.join(folder, config.name)} (docs {content} at /{route.strip('/')}, "
                 f"{len(parts) - 1} translations)")
    return parts


def read_vitepress(root: Path, folder: str, config: Path, notes: list[str]) -> list[SitePart]:
    text = config.read_text(encoding="utf-8")
    site_root = posixpath.dirname(folder)  # .vitepress's parent
    src = _join(site_root, js_value(text, "srcDir") or "")
    base = js_value(text, "base") or "/"
    host = js_value(text, "hostname") or ""
    style = "clean" if js_value(text, "cleanUrls") == "true" else "html"
    rewrites = []
    rw = js_block(text, "rewrites")
    if rw:
        for a, b in re.findall(r"""['"]([^'"]+)['"]\s*:\s*['"]([^'"]*)['"]""", text[rw[0]:rw[1]]):
            if a.endswith(":rest*") and b.endswith(":rest*"):  # 'en/:rest*': ':rest*'
                rewrites.append((a[:-len(":rest*")], b[:-len(":rest*")]))
    url = _url(host, base) if host else ""
    ex = js_block(text, "srcExclude")
    globs = re.findall(r"""['"]([^'"]+)['"]""", text[ex[0]:ex[1]]) if ex else []
    parts = [SitePart(src, url, "", style, "vitepress", rewrites=rewrites, exclude=["node_modules", "public"],
                      exclude_globs=globs)]
    loc = js_block(text, "locales")
    for key in js_keys(text, loc) if loc else []:
        lang = locale_lang(text, loc, key)
        if key == "root":
            parts[0].language = language_of_locale(lang)
            for a, b in rewrites:
                if b == "" and (root / src / a).is_dir():  # the root locale's pages live in a folder
                    parts.append(SitePart(_join(src, a), url, parts[0].language, style, "vitepress",
                                          exclude_globs=globs))
            continue
        parts.append(SitePart(_join(src, key), url + key + "/" if url else "", language_of_locale(lang),
                              style, "vitepress", exclude_globs=globs))
    notes.append(f"vitepress: {posixpath.join(folder, config.name)} (srcDir {src or '.'}, "
                 f"{max(0, len(parts) - 1)} locale folders)")
    return parts


# a SUMMARY.md entry: `[title](page.md)`, GitBook's `[title](page.md "sidebar title")` too
_SUMMARY_LINK = re.compile(r"""\[([^\]]+)\]\(<?([^)\s>]+\.md)>?(?:\s+["']([^"']*)["'])?\)""")


def _summary(src_dir: Path, src: str, name: str = "SUMMARY.md") -> tuple[list[str], dict[str, tuple[int, str]]]:
    """mdBook's and GitBook's table of contents: the pages in order, each with its sidebar title."""
    pages, nav = [], {}
    summary = src_dir / name
    if not summary.is_file():
        return pages, nav
    folder = posixpath.dirname(_join(src, name))
    for title, target, link_title in _SUMMARY_LINK.findall(summary.read_text(encoding="utf-8")):
        try:
            path = _join(folder, unquote(target))
        except ValueError:  # a page above the docs root: not this site's
            continue
        if path not in nav:
            pages.append(path)
            nav[path] = (len(nav) + 1, link_title or title)
    return pages, nav


def read_mdbook(root: Path, folder: str, config: Path, notes: list[str]) -> list[SitePart]:
    data = tomllib.loads(config.read_text(encoding="utf-8"))
    src = _join(folder, str((data.get("book") or {}).get("src") or "src"))
    html = (data.get("output") or {}).get("html") or {}
    lang = str((data.get("book") or {}).get("language") or "")
    pages, nav = _summary(root / src, src)
    notes.append(f"mdbook: {posixpath.join(folder, config.name)} (src {src}, {len(pages)} chapters in SUMMARY.md)")
    return [SitePart(src, str(html.get("site-url") or ""), language_of_locale(lang) if lang else "",
                     "html", "mdbook", pages=pages or None, nav=nav)]


def read_gitbook(root: Path, folder: str, config: Path, notes: list[str]) -> list[SitePart]:
    """GitBook's Git Sync: `.gitbook.yaml` names the content root, the first page (published at
    the site's root) and the table of contents (the pages GitBook publishes, in order). The
    site's URL is not in the repository (`--site-url`)."""
    # zero-width spaces pasted from GitBook's own docs ("\u200bstructure:") are no part of a key
    data = yaml.safe_load(config.read_text(encoding="utf-8-sig").replace("\u200b", "")) or {}
    data = data if isinstance(data, dict) else {}
    structure = data.get("structure") if isinstance(data.get("structure"), dict) else {}
    content = _join(folder, str(data.get("root") or "."))
    readme = _join(str(structure.get("readme") or "README.md"))
    summary = _join(str(structure.get("summary") or "SUMMARY.md"))
    pages, nav = _summary(root / content, content, summary)
    redirects = data.get("redirects") if isinstance(data.get("redirects"), dict) else {}
    notes.append(f"gitbook: {posixpath.join(folder, config.name)} (root {content or '.'}, "
                 + (f"{len(pages)} pages in {summary}" if pages else f"no {summary}: every page")
                 + (f", {len(redirects)} redirects not applied" if redirects else "") + ")")
    return [SitePart(content, "", "", "clean", "gitbook", pages=pages or None, nav=nav, home=_join(content, readme))]


def read_sphinx(root: Path, folder: str, config: Path, notes: list[str]) -> list[SitePart]:
    text = config.read_text(encoding="utf-8")
    # the pages' base: html_baseurl, else the one sphinxext-opengraph writes into each page's og:url
    base = re.search(r"""^html_baseurl\s*=\s*['"]([^'"]+)['"]""", text, re.M) \
        or re.search(r"""^ogp_site_url\s*=\s*['"]([^'"]+)['"]""", text, re.M)
    lang = re.search(r"""^language\s*=\s*['"]([^'"]*)['"]""", text, re.M)
    myst = "myst_parser" in text or "myst_nb" in text
    ext = re.search(r"^myst_enable_extensions\s*=\s*[\[({]([^\])}]*)", text, re.M)
    extensions = tuple(sorted(set(re.findall(r"""['"]([\w-]+)['"]""", ext.group(1))))) if ext else ()
    notes.append(f"sphinx: {posixpath.join(folder, config.name)} ({'MyST' if myst else 'no MyST: Markdown pages as CommonMark'}"
                 f"{', extensions ' + ' '.join(extensions) if extensions else ''})")
    return [SitePart(_norm(folder), base.group(1) if base else "", language_of_locale(lang.group(1)) if lang else "",
                     "html", "docutils", exclude=["_build", "_static", "_templates"], extensions=extensions)]


def read_starlight(root: Path, folder: str, config: Path, notes: list[str]) -> list[SitePart]:
    text = config.read_text(encoding="utf-8")
    host, base = js_value(text, "site") or "", js_value(text, "base") or "/"
    content = _join(folder, "src/content/docs")
    url = _url(host, base) if host else ""
    parts = [SitePart(content, url, "", "directory", "github")]
    loc = js_block(text, "locales")
    for key in js_keys(text, loc) if loc else []:
        lang = locale_lang(text, loc, key)
        if key == "root":
            parts[0].language = language_of_locale(lang)
        elif (root / content / key).is_dir():
            parts.append(SitePart(_join(content, key), url + key + "/" if url else "", language_of_locale(lang),
                                  "directory", "github"))
    notes.append(f"starlight: {posixpath.join(folder, config.name)} ({max(0, len(parts) - 1)} locale folders)")
    return parts


# ---- Hugo ----------------------------------------------------------------------------------------
HUGO_NAMES = ("hugo.toml", "hugo.yaml", "hugo.yml", "hugo.json", "config.toml", "config.yaml", "config.yml",
              "config.json")  # in the order Hugo looks for them


def hugo_data(config: Path) -> dict:
    """A Hugo config file (TOML, YAML or JSON), with `languages.*` beside it in config/_default."""
    text = config.read_text(encoding="utf-8")
    data = _hugo_load(config.suffix, text)
    for name in ("languages.toml", "languages.yaml", "languages.yml"):
        side = config.parent / name
        if config.parent.name == "_default" and side.is_file() and "languages" not in data:
            data["languages"] = _hugo_load(side.suffix, side.read_text(encoding="utf-8"))
    return {str(k).lower(): v for k, v in data.items()}


class _Yaml12(yaml.SafeLoader):
    """YAML as Hugo reads it (1.2): `no:`, `on:` are strings (Norwegian's `no` is no false)."""


_Yaml12.yaml_implicit_resolvers = {k: [(t, rx) for t, rx in v if t != "tag:yaml.org,2002:bool"]
                                   for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()}
for _c in "tTfF":
    _Yaml12.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
                                  [_c])


def _hugo_load(suffix: str, text: str) -> dict:
    import json

    data = tomllib.loads(text) if suffix == ".toml" else json.loads(text) if suffix == ".json" \
        else yaml.load(text, Loader=_Yaml12)
    return data if isinstance(data, dict) else {}


def _lower_keys(d) -> dict:
    return {str(k).lower(): v for k, v in d.items()} if isinstance(d, dict) else {}


def _text(data: dict, key: str, default: str, notes: list[str]) -> str:
    """A setting that must be a string: another type is said and its default taken."""
    value = data.get(key)
    if value is None or value == "":
        return default
    if not isinstance(value, str):
        notes.append(f"hugo: {key} is not a string ({value!r:.40}): {default!r} taken")
        return default
    return value


def _content_mounts(data: dict, folder: str, default: str) -> list[tuple[str, str]]:
    """(source folder, language) of each module mount whose target is the content."""
    out = []
    for m in _lower_keys(data.get("module")).get("mounts") or []:
        m = _lower_keys(m)
        if str(m.get("target", "")).strip("/") != "content" or not m.get("source"):
            continue
        langs = _lower_keys(_lower_keys(m.get("sites")).get("matrix")).get("languages") or []
        code = str(m.get("lang") or (langs[0] if isinstance(langs, list) and langs else default)).lower()
        out.append((_join(folder, str(m["source"])), code))
    return out


def read_hugo(root: Path, folder: str, config: Path, notes: list[str]) -> list[SitePart]:
    """Hugo: `contentDir` (each language's own, or `page.fr.md` beside `page.md`), `baseURL`,
    directory URLs (`uglyURLs`: page.html), paths lower-cased, goldmark's heading ids."""
    data = hugo_data(config)
    if config.parent.name == "_default" and config.parent.parent.name == "config":
        folder = _norm(posixpath.dirname(posixpath.dirname(folder)))  # config/_default/hugo.toml
    base = str(data.get("baseurl") or "")
    base = base.rstrip("/") + "/" if base.startswith(("http://", "https://", "/")) else ""
    style = "html" if data.get("uglyurls") is True else "directory"
    lower = not data.get("disablepathtolower", False)
    goldmark = _lower_keys(_lower_keys(_lower_keys(data.get("markup")).get("goldmark")).get("parser"))
    id_type = str(goldmark.get("autoheadingidtype") or "github")
    exts = ("block_attrs",) if _lower_keys(goldmark.get("attribute")).get("block") is True else ()
    default = _text(data, "defaultcontentlanguage", "en", notes).lower()
    in_subdir = data.get("defaultcontentlanguageinsubdir") is True
    content = _join(folder, _text(data, "contentdir", "content", notes))

    def url_of(lang: str) -> str:
        return base + lang + "/" if base and (lang != default or in_subdir) else base

    mounts = _content_mounts(data, folder, default)  # [[module.mounts]] replace contentDir
    parts = [SitePart(src, url_of(code), language_of_locale(code), style, "goldmark", lower_paths=lower, root_url=base,
                      extensions=exts) for src, code in mounts or [(content, default)]]
    mounted = {code for _, code in mounts}
    for code, conf in _lower_keys(data.get("languages")).items():
        conf, code = _lower_keys(conf), code.lower()
        own = _join(folder, _text(conf, "contentdir", "", notes)) if conf.get("contentdir") else ""
        if conf.get("disabled") is True or code in mounted:
            continue
        if code == default:
            parts[0].content = own or parts[0].content
        elif own and own != parts[0].content:
            parts.append(SitePart(own, url_of(code), language_of_locale(code), style, "goldmark", lower_paths=lower,
                                  root_url=base, extensions=exts))
        else:  # a translation named page.fr.md beside page.md
            for p in parts:
                p.suffix_langs[code] = url_of(code)
    if id_type != "github":
        notes.append(f"hugo: autoHeadingIDType {id_type} read as github")
    if data.get("permalinks"):  # `/:section/:year/:slug/` patterns: those pages' URLs are their paths'
        notes.append(f"hugo: [permalinks] not applied ({', '.join(map(str, _lower_keys(data['permalinks'])))[:80]})")
    notes.append(f"hugo: {posixpath.join(folder, config.name)} (content {', '.join(p.content for p in parts)}"
                 f"{', mounted' if mounts else ''}; {len(parts) - 1 + len(parts[0].suffix_langs)} more languages)")
    return parts


# (generator, config file names, reader); a VitePress config lives in a `.vitepress` folder
READERS = (
    ("mkdocs", ("mkdocs.yml", "mkdocs.yaml"), read_mkdocs),
    ("docusaurus", ("docusaurus.config.js", "docusaurus.config.ts", "docusaurus.config.mjs"), read_docusaurus),
    ("vitepress", ("config.js", "config.ts", "config.mjs", "config.mts"), read_vitepress),
    ("mdbook", ("book.toml",), read_mdbook),
    ("gitbook", (".gitbook.yaml", ".gitbook.yml"), read_gitbook),
    ("sphinx", ("conf.py",), read_sphinx),
    ("starlight", ("astro.config.mjs", "astro.config.ts", "astro.config.js"), read_starlight),
    ("hugo", HUGO_NAMES, read_hugo),
)
