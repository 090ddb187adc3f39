"""An API card read from a reference section: name, signature, parameters, return value, error
codes and the version it is available since.

The reading follows what reference pages hold (ArkUI-X in English and Chinese, Redux, native
and platform pages): a heading naming the API (`data_preferences.getPreferences<sup>10+</sup>`,
`createStore(reducer, preloadedState?, enhancer?)`), the signature on the line under it or in
a short code block, then labelled blocks - a bold line ("**Parameters**", "**参数：**", "**Return
value**", "**返回值：**", "**Error codes**", "**错误码：**", "**Since**", "**起始版本：**") or a
sub-heading ("#### Arguments", "#### Returns") - each holding a table, a list or a paragraph.
A section becomes a card only with a parameters, return value or error-code block and a name
or signature: a guide's section with a table is not an API.

`parse` is pure (the section's Markdown in, the card's fields out); `card_for` reads the section,
its labelled subsections and its page's module-wide version through the store; `named_apis`
finds the reference sections an answer names.
"""
from __future__ import annotations

import html
import re

from ..core import Reference, page_title
from .extractive import section_label

LABELS = {  # a label's words (lower case, no colon) -> the block it opens
    "parameters": "params", "parameter": "params", "arguments": "params", "params": "params", "参数": "params",
    "return value": "returns", "returns": "returns", "return": "returns", "返回值": "returns", "返回": "returns",
    "error codes": "errors", "错误码": "errors",
    "since": "since", "起始版本": "since",
}
NAME_COLS = ("name", "parameter", "参数名", "参数名称", "名称", "参数")
TYPE_COLS = ("type", "类型", "参数类型", "属性类型", "类型定义")
REQUIRED_COLS = ("mandatory", "required", "必填", "是否必填")
DESC_COLS = ("description", "说明", "描述", "参数描述", "功能描述")
CODE_COLS = ("id", "error code", "错误码id", "错误码", "code")
MESSAGE_COLS = ("error message", "错误信息", "message")
YES, NO = ("yes", "是", "true", "required"), ("no", "否", "false", "optional")
MAX_PARAMS, MAX_ERRORS, TEXT_CHARS = 20, 20, 300

_LABEL = re.compile(r"^\s*(?:#{2,6}\s+|\*\*)(?P<label>[^*#\n]{1,40}?)\s*[:：]?\s*(?:\*\*)?\s*[:：]?\s*$")
_HEADING = re.compile(r"^\s*#{1,6}\s+(.*)$")
_SUP = re.compile(r"<sup>\s*(\d+)\+?\s*</sup>")
_TAG = re.compile(r"<[^>]+>")
_MD_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_CALL = re.compile(r"^(?:[\w$<>\[\],.]+\s+)*[A-Za-z_$][\w$.]*(?:<[^()]*>)?\s*\(.*\)\s*(?:[:=]>?\s*\S.*)?;?$", re.A)
_IDENT = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*", re.A)
_CJK = re.compile(r"[\u3400-\u9fff]")
_SINCE_TEXT = re.compile(r"(?:since API version|从API version)\s*(\d+)", re.I)
_LIST_PARAM = re.compile(r"^\s*(?:\d+\.|[-*+])\s+(\[)?\s*`?([A-Za-z_$][\w$.]*)`?\s*\]?\s*"
                         r"(?:[_*]*\(\s*[_*]*([^)]*?)[_*]*\s*\)[_*]*)?\s*:?\s*(.*)$", re.A)
_FENCE = re.compile(r"^\s*(```+|~~~+)\s*([\w+-]*)")


def clean(cell: str) -> str:
    """A table cell or line as plain text: links to their text, tags and bold marks gone,
    `<br>` as a space, entities decoded."""
    text = re.sub(r"<br\s*/?>", " ", cell, flags=re.I)
    text = _MD_LINK.sub(lambda m: m.group(1), _SUP.sub("", text))
    text = html.unescape(_TAG.sub("", text)).replace("**", "").replace("\\|", "|")
    return " ".join(text.split())


def parse_table(text: str) -> tuple[list[str], list[list[str]]]:
    """A Markdown table's header cells and rows (cells stripped), ([], []) for none."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("|")]
    cells = [[c.strip() for c in re.split(r"(?<!\\)\|", ln.strip().strip("|"))] for ln in lines]
    body = [c for c in cells[1:] if not all(set(x) <= set(":- ") for x in c)]
    return (cells[0], body) if cells else ([], [])


def blocks(text: str) -> tuple[str, list[str], dict[str, list[str]]]:
    """(the heading, the lines before the first label, label -> its lines) of a section; a label
    not in LABELS ("**Example**") closes the block before it. Code blocks are kept whole."""
    lines = text.splitlines()
    heading = ""
    if lines and _HEADING.match(lines[0]):
        heading = _HEADING.match(lines[0]).group(1).strip()
        lines = lines[1:]
    head: list[str] = []
    out: dict[str, list[str]] = {}
    current: list[str] | None = head
    fence = ""
    for line in lines:
        mark = _FENCE.match(line)
        if fence:
            fence = "" if mark and line.strip().startswith(fence) else fence
        elif mark:
            fence = mark.group(1)
        elif (m := _LABEL.match(line)) and not line.lstrip().startswith(">"):
            kind = LABELS.get(m.group("label").strip().lower().rstrip(":："))
            current = out.setdefault(kind, []) if kind and kind not in out else None
            continue
        if current is not None:
            current.append(line)
    return heading, head, out


def heading_name(heading: str) -> tuple[str, str, str]:
    """(name, since-version, the heading as a call when it is one) of an API heading."""
    since = (_SUP.search(heading) or [None, ""])[1]
    plain = clean(re.sub(r"<Badge[^>]*/>", "", heading)).replace("`", "").strip()
    call = plain if _CALL.match(plain) and "(" in plain else ""
    m = _IDENT.match(plain)
    # "TouchEvent对象说明": the identifier before the Chinese words names it
    name = m.group(0) if m and (m.end() == len(plain) or plain[m.end()] == "(" or _CJK.match(plain[m.end()])) else plain
    return name, since, call


def signature(head: list[str]) -> str:
    """The call line under the heading, else a short code block holding a call."""
    lines, i = head, 0
    while i < len(lines):
        line = lines[i].strip()
        if (m := _FENCE.match(line)):
            body = []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith(m.group(1)):
                body.append(lines[i])
                i += 1
            code = "\n".join(body).strip()
            if code and len(body) <= 4 and "(" in code:
                return code
        elif line and _CALL.match(html.unescape(line)) and len(line) < 400:
            # Markdown's escapes go: "Promise\<void>" is "Promise<void>"
            return re.sub(r"\\([<>*_\[\]`])", r"\1", clean(line) if "<br" in line else html.unescape(line))
        i += 1
    return ""


def _column(header: list[str], names: tuple[str, ...]) -> int | None:
    keys = [clean(h).lower() for h in header]
    return next((i for name in names for i, k in enumerate(keys) if k == name), None)


def _cell(row: list[str], i: int | None) -> str:
    return clean(row[i]) if i is not None and i < len(row) else ""


def params(lines: list[str]) -> list[dict]:
    """The parameters of a block: its table's rows (name, type, required, description), else its
    list items ("1. `reducer` _(Function)_: ...", "[`enhancer`]" being optional)."""
    header, rows = parse_table("\n".join(lines))
    if header:
        name = _column(header, NAME_COLS)
        name = 0 if name is None else name
        kind, need, desc = (_column(header, c) for c in (TYPE_COLS, REQUIRED_COLS, DESC_COLS))
        out = []
        for row in rows[:MAX_PARAMS]:
            flag = _cell(row, need).lower()
            out.append({"name": _cell(row, name).replace("`", ""), "type": _cell(row, kind),
                        "required": True if flag in YES else False if flag in NO else None,
                        "description": _cell(row, desc)[:TEXT_CHARS]})
        return out
    out = []
    for line in lines:
        if (m := _LIST_PARAM.match(line)) and len(out) < MAX_PARAMS:
            out.append({"name": m.group(2), "type": clean(m.group(3) or "").replace("_", "").strip(),
                        "required": False if m.group(1) else None,
                        "description": clean(m.group(4)).replace("`", "")[:TEXT_CHARS]})
    return out


def returns(lines: list[str]) -> str:
    """The return value: its table's rows as "type: description", else the block's first paragraph."""
    header, rows = parse_table("\n".join(lines))
    if header:
        kind = _column(header, TYPE_COLS)
        kind = 0 if kind is None else kind
        desc = _column(header, DESC_COLS)
        parts = [": ".join(x for x in (_cell(r, kind), _cell(r, desc)) if x) for r in rows[:4]]
        return "; ".join(p for p in parts if p)[:TEXT_CHARS]
    para = " ".join(ln.strip() for ln in _first_paragraph(lines))
    return clean(para).replace("_", "").replace("`", "")[:TEXT_CHARS]


def _first_paragraph(lines: list[str]) -> list[str]:
    out: list[str] = []
    for line in lines:
        if _FENCE.match(line) or line.strip().startswith(("|", ">", "---")):
            if out:
                break
            continue
        if not line.strip():
            if out:
                break
            continue
        out.append(line)
    return out


def errors(lines: list[str]) -> list[dict]:
    """The error codes of a block's table: (code, message)."""
    header, rows = parse_table("\n".join(lines))
    if not header:
        return []
    code, message = _column(header, CODE_COLS), _column(header, MESSAGE_COLS)
    code = 0 if code is None else code
    message = 1 if message is None else message
    return [{"code": _cell(r, code), "message": _cell(r, message)} for r in rows[:MAX_ERRORS] if _cell(r, code)]


def since_of(heading_since: str, found: dict[str, list[str]], head: list[str], module_since: str = "") -> str:
    """The version the API is available since: the heading's superscript, a "Since" block, the
    section's own prose ("since API version 10", "从API version 10开始支持"), else the module's."""
    if heading_since:
        return heading_since
    block = " ".join(found.get("since", [])).strip()
    if (m := re.search(r"\d+(?:\.\d+)*", block)):
        return m.group(0)
    prose = " ".join(ln for ln in head if not ln.lstrip().startswith("|"))
    m = _SINCE_TEXT.search(prose)
    return m.group(1) if m else module_since


def parse(text: str, module_since: str = "") -> dict | None:
    """The card's fields (name, signature, params, returns, errors, since) of one section's
    Markdown (with its labelled subsections appended), None when it is not an API's section."""
    heading, head, found = blocks(text)
    name, heading_since, call = heading_name(heading)
    card = {"name": name, "signature": signature(head) or call, "params": params(found.get("params", [])),
            "returns": returns(found.get("returns", [])), "errors": errors(found.get("errors", []))}
    if not found and _type_name(name, heading_since):  # an interface: its fields' table, unlabelled
        header, _ = parse_table("\n".join(head))
        if header and _column(header, TYPE_COLS) is not None and _column(header, NAME_COLS) is not None:
            card["params"] = params(head)
    if not (card["params"] or card["returns"] or card["errors"]):
        return None
    if not card["signature"] and not (name and _IDENT.fullmatch(name)):
        return None  # "Handling in the case of exceptions": a table under a title, no API
    called = _called(card["signature"])
    if called and not (name.endswith(called) or called.endswith(name)):
        card["name"] = called  # "## APIs" over "DatePicker(options?: ...)": the call names it
    card["since"] = since_of(heading_since, found, head, module_since)
    return card


def _type_name(name: str, since: str) -> bool:
    """A heading that names a type ("TouchEvent", "Options<sup>10+</sup>"), not a topic ("Constants")."""
    return bool(_IDENT.fullmatch(name)) and (bool(since) or bool(re.search(r"[a-z][A-Z]|[._]", name)))


def _called(sig: str) -> str:
    """The name a signature calls: `getPreferences` of "getPreferences(context: ...): void"."""
    m = re.search(r"([A-Za-z_$][\w$.]*)\s*(?:<[^()]*>)?\s*\(", sig, re.A)
    return m.group(1) if m else ""


def module_since(intro: str) -> str:
    """The version a module's (or component's) first APIs came in, from its page's opening note
    ("> The initial APIs of this module are supported since API version 9", "> 该组件从API Version
    8开始支持")."""
    m = _SINCE_TEXT.search(" ".join(ln for ln in intro.splitlines() if ln.lstrip().startswith(">")))
    return m.group(1) if m else ""


def section_text(store, node: dict) -> str:
    """A section's Markdown with its labelled subsections ("#### Arguments", "#### Returns")
    appended: a site that gives each its own heading keeps them out of the section's text."""
    parts = [node.get("text") or ""]
    for child in store.nodes.contained(node["id"]):
        first = (child.get("text") or "").split("\n", 1)[0]
        if child["type"] == "chunk" and (m := _LABEL.match(first)) and \
                LABELS.get(m.group("label").strip().lower().rstrip(":：")):
            parts.append(child["text"])
    return "\n\n".join(parts)


def card_for(store, ref: Reference) -> tuple[dict, str] | None:
    """(the card, its section's id) of the section behind a reference (a table's or code
    block's own section); the card names its section by title and link, never by id."""
    node = store.nodes.by_id(ref.id)
    if node is not None and node["type"] in ("table", "code"):
        node = store.nodes.container(ref.id)
    if node is None or node["type"] != "chunk":
        return None
    page = store.nodes.page_sections(node["source_path"]) if node.get("source_path") else []
    intro = store.nodes.by_id(page[0][0]) if page and page[0][0] != node["id"] else node
    card = parse(section_text(store, node), module_since((intro or {}).get("text") or ""))
    if card is None:
        return None
    return {"type": "api", **card, "title": page_title(node["breadcrumb"]),
            "section": section_label(node["breadcrumb"]), "url": node.get("source_url") or ""}, node["id"]


def pick(store, refs: list[tuple[int, Reference]], cited: list[int], tries: int = 6) -> tuple[dict, str] | None:
    """(the card with its reference number, its section's id) of the first API section among the
    cited references, then the top ones; at most `tries` sections are read."""
    order = [(n, r) for n, r in refs if n in cited] + [(n, r) for n, r in refs[:5] if n not in cited]
    seen: set[str] = set()
    for n, ref in order:
        if ref.type not in ("chunk", "table", "code") or ref.id in seen or len(seen) >= tries:
            continue
        seen.add(ref.id)
        found = card_for(store, ref)
        if found is not None:
            return {**found[0], "n": n}, found[1]
    return None


_NAMED = re.compile(r"`([^`\n]{2,80})`|\*\*([^*\n]{2,80})\*\*|(?<![\w$./-])([A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+"
                    r"|[a-z_$][a-z0-9_$]*[A-Z][\w$]*|[A-Za-z_$][\w$]*(?=\())", re.A)


def identifiers(text: str, limit: int = 8) -> list[str]:
    """The API names an answer mentions, first mentioned first: `code` or **bold** identifiers,
    and dotted (`data_preferences.getPreferences`), camelCase or called (`foo(`) words."""
    out: list[str] = []
    for m in _NAMED.finditer(re.sub(r"```.*?```", " ", text, flags=re.S)):
        raw = (m.group(1) or m.group(2) or m.group(3)).strip()
        ident = _IDENT.match(raw)
        if not ident or raw[ident.end():] not in ("", "()") or len(ident.group(0)) < 3:
            continue
        name = ident.group(0)
        if "." in name and any(len(part) < 2 for part in name.split(".")) or name.startswith(("http", "www.")):
            continue  # "e.g", an address
        if name not in out:
            out.append(name)
        if len(out) >= limit:
            break
    return out


def _own_heading(breadcrumb: str) -> str:
    """A section's heading as an API name: "data_preferences.getPreferences10+" -> without "10+"."""
    last = breadcrumb.split(" / ")[-1].replace("`", "").strip()
    last = re.sub(r"(?<=[A-Za-z_)])\d+\+$", "", last)
    return re.sub(r"\(.*\)$", "", last).strip()


def _heads(breadcrumb: str, name: str) -> bool:
    """Whether a section's own heading names the API: "getPreferences" under
    "data_preferences.getPreferences", "Class.method" under "Class / method"."""
    own = _own_heading(breadcrumb)
    if own == name or own.endswith("." + name):
        return True
    owner, _, last = name.rpartition(".")
    return bool(owner) and own == last and owner.rsplit(".", 1)[-1] in breadcrumb.split(" / ")[-2:-1]


def named_apis(store, text: str, lang: str, skip: set[str], limit: int = 2, tries: int = 6) -> list[dict]:
    """The reference sections of the APIs `text` names (a section whose own heading is the name,
    or ends with ".name"), in the asker's language first; each must read as an API card. Those
    in `skip` (section ids already shown) are left out; at most `tries` sections are read."""
    names = identifiers(text)
    lasts = [n.rsplit(".", 1)[1] for n in names if "." in n]  # "IMessageListener.onMessageResponse"
    rows = store.nodes.sections_headed(list(dict.fromkeys(names + lasts))) if names else []
    out: list[dict] = []
    read = 0
    for name in names:
        heads = [r for r in rows if r[0] not in skip and _heads(r[1], name)]
        heads.sort(key=lambda r: (r[4] or lang) != lang)  # the asker's language first, stable
        for sid, *_ in heads[:2]:
            if read >= tries:
                return out
            read += 1
            found = card_for(store, Reference(id=sid, type="chunk", score=0.0))
            if found is not None:  # its URL as the store gives it (a compact file derives it)
                out.append({"why": "api_reference", "title": found[0]["title"], "section": found[0]["section"],
                            "url": found[0]["url"], "query": name})
                skip.add(sid)
                break
        if len(out) >= limit:
            break
    return out
