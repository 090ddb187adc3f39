"""Hugo's own rules for a docs site (`site.py` asks them for a Hugo site): which config file is
Hugo's, which pages it never renders, and the path and URL it gives a page.
The config itself is read by `site_configs.read_hugo`."""
from __future__ import annotations

import posixpath
import re
import unicodedata
from pathlib import Path


from .page import load_front
from .site_configs import CONFIG_ERRORS, SitePart, hugo_data

_NOT_RENDERED = ("never", "false", "link")


def is_hugo_config(path: Path) -> bool:
    """hugo.* is Hugo's; a config.* (a name other tools use) only with one of Hugo's own keys
    (`baseURL`, ...), a theme, a module or a `layouts/` folder, and a content folder."""
    if path.name.startswith("hugo."):
        return True
    site = path.parent.parent.parent if path.parent.name == "_default" else path.parent
    try:
        data = hugo_data(path)
    except CONFIG_ERRORS:
        return False
    content = data.get("contentdir") if isinstance(data.get("contentdir"), str) else "content"
    own_keys = {"baseurl", "languagecode", "contentdir", "defaultcontentlanguage"} & set(data)
    marks = {"theme", "module"} & set(data) or any((site / d).is_dir() for d in ("layouts", "archetypes", "themes"))
    return bool(own_keys) and bool(marks) and (site / content).is_dir()


def unrendered(root: Path, part: SitePart | None, path: str, front: dict) -> bool:
    """A page Hugo builds but never renders (a headless bundle, `build.render: never` or `link`,
    its own or cascaded from the nearest folder's `_index.md` that sets it: snippets other pages
    include)."""
    own = _render_of(front, bundle=posixpath.basename(path).startswith("index."))
    if own is not None:
        return own in _NOT_RENDERED
    folder = posixpath.dirname(path)  # a cascade reaches its own `_index.md` too
    while part and folder and (folder == part.content or folder.startswith(part.content + "/")):
        cascaded = _cascaded_render(_front_of(root / folder / "_index.md"))
        if cascaded is not None:  # the nearest cascade wins
            return cascaded in _NOT_RENDERED
        folder = posixpath.dirname(folder) if folder != part.content else ""
    return False


def _render_of(front, bundle: bool = False) -> str | None:
    """A page's own `build.render` ("always", "never", "link"; a bundle's `headless: true` is
    "never"), or None where it sets none."""
    if not isinstance(front, dict):
        return None
    build = front.get("_build") or front.get("build")
    if isinstance(build, dict) and "render" in build:
        return str(build["render"]).lower()
    return "never" if bundle and front.get("headless") is True else None


def _cascaded_render(front: dict) -> str | None:
    """The `build.render` a folder's `_index.md` cascades to every page below it (an entry
    aimed at some pages only, by `target`, is not read: those pages stay), or None."""
    cascaded = front.get("cascade") if isinstance(front, dict) else None
    for entry in cascaded if isinstance(cascaded, list) else [cascaded]:
        if isinstance(entry, dict) and not (entry.get("target") or entry.get("_target")):
            render = _render_of(entry)
            if render is not None:
                return render
    return None


def _front_of(file: Path) -> dict:
    """A page's front matter (YAML or TOML), read from its head; {} where it has none."""
    try:
        with open(file, encoding="utf-8", errors="replace") as f:
            head = f.read(1 << 16)
    except OSError:
        return {}
    mark = head[:3]
    end = head.find("\n" + mark, 3) if mark in ("---", "+++") else -1
    try:
        return load_front(mark, head[3:end]) if end >= 0 else {}
    except ValueError:
        return {}


def suffix_lang(part: SitePart, path: str) -> str:
    """Hugo: the language a file's name gives it ("install.fr.md" -> "fr"), or ""."""
    if not part.suffix_langs:
        return ""
    stem = posixpath.splitext(posixpath.basename(path))[0]
    code = stem.rsplit(".", 1)[1].lower() if "." in stem else ""
    return code if code in part.suffix_langs else ""


def hugo_route(part: SitePart, rel: str, front: dict) -> str:
    """A Hugo page's path: `_index.md` is its folder's (a section), a bundle's `index.md` its
    folder's too (the folder names the page: `slug` replaces it), `url` in the front matter
    replaces the path; each path made a URL as Hugo makes it (`hugo_path`), lower-cased."""
    folder, name = posixpath.split(posixpath.splitext(rel)[0])
    code = suffix_lang(part, rel)
    name = name[:-len(code) - 1] if code else name
    url, slug = str(front.get("url") or "").strip(), str(front.get("slug") or "").strip()
    if url:
        route = url.strip("/")
        return route + ("/" if route and not posixpath.splitext(route)[1] else "")
    if name == "index" and folder:
        folder, name = posixpath.split(folder)
    if name in ("_index", "index"):  # a section, or the home page
        route = folder + (".html" if part.url_style == "html" else "/") if folder else ""
    else:
        route = posixpath.join(folder, slug or name) + (".html" if part.url_style == "html" else "/")
    route = hugo_path(route)
    return route.lower() if part.lower_paths else route


def hugo_path(s: str) -> str:
    """Hugo's UnicodeSanitize: letters, digits, marks and `./\\_#+~-@` kept (a `%` with two hex
    digits too), a run of spaces one "-" (none beside a "-"), anything else dropped."""
    out: list[str] = []
    hyphen_due, was_hyphen = False, False
    for i, ch in enumerate(s):
        cat = unicodedata.category(ch)
        ok = ch in "./\\_#+~-@" or cat[0] in "LM" or cat == "Nd" or \
            (ch == "%" and re.fullmatch(r"[0-9A-Fa-f]{2}", s[i + 1:i + 3]) is not None)
        if ok:
            was_hyphen = ch == "-"
            if hyphen_due and not was_hyphen:
                out.append("-")
            hyphen_due = False
            out.append(ch)
        elif out and not was_hyphen and ch.isspace():
            hyphen_due = True
    return "".join(out)
