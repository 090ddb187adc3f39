"""An answer as components, for the chat and for other front-ends (the answer's JSON,
`components`), and the answer written without an LLM.

Components, in order (none carries a node id: each names its section by page title and
breadcrumb, with the section's link):
    {"type": "answer", "markdown", "citations", "answerable", "confidence", "llm"[, "notice"]}
        "notice": the "not covered" sentence the markdown opens with, where the docs do not seem to cover it
    {"type": "api", "name", "signature", "params": [{"name", "type", "required", "description"}],
     "returns", "errors": [{"code", "message"}], "since", "n", "title", "section", "url"}
        the API card of the first cited (else top) reference section (dgrag/answer/api_card.py)
    {"type": "code", "language", "code", "n", "title", "section", "url"}      a cited page's code
    {"type": "table", "header", "rows", "n", "title", "section", "url"}       a cited page's table
    {"type": "image", "url", "alt", "n", "title", "section"}                 a cited page's images
    {"type": "sources", "items": [{"n", "kind", "title", "section", "url"}]}
    {"type": "followups", "items": [{"why", "title", "section", "url", "query"}]}  from the index,
        at most 3: the reference of an API the answer names ("api_reference"), the next step of
        a how-to ("next"), the same section in the other language ("other_language"), a related
        page ("related"); after a reference section its APIs come first, after a guide its next step
"""
from __future__ import annotations

from ..core import Reference, RetrievalResult, judged, language_of, page_title
from . import api_card
from .api_card import parse_table
from .book import ContextBook
from .extractive import corpus_idf, extract, section_label
from .translations import with_counterparts

READ_MORE = 5
WORDS = {"en": {"read_more": "Read more", "not_covered": "The docs don't seem to cover this; the closest sections are",
                "nothing": "Nothing in the docs matches this question.", "sources": "Sources",
                "next": "Next", "other": "中文", "related": "Related", "followups": "You might also ask",
                "params": ("Parameter", "Type", "Required", "Description"), "yes": "Yes", "no": "No",
                "returns": "Returns", "errors": ("Error code", "Message"), "since": "Since"},
         "zh": {"read_more": "延伸阅读", "not_covered": "文档中似乎没有涉及这个问题；最接近的章节是",
                "nothing": "文档中没有与此问题相关的内容。", "sources": "来源",
                "next": "下一节", "other": "English", "related": "相关", "followups": "你也可以问",
                "params": ("参数", "类型", "必填", "说明"), "yes": "是", "no": "否",
                "returns": "返回值", "errors": ("错误码", "错误信息"), "since": "起始版本"}}


def numbered(results: list[RetrievalResult]) -> list[tuple[int, Reference]]:
    """Every reference of the searches once, numbered as the agent numbers them (ContextBook)."""
    book = ContextBook(10 ** 9)
    for i, r in enumerate(results, 1):
        book.add(r, i)
    return [(n, e.ref) for n, e in book.numbered()]


def _link(ref: Reference) -> str:
    label = section_label(ref.breadcrumb).replace("[", "(").replace("]", ")")
    url = ref.source_url or ""
    return f"[{label}]({url})" if url.startswith(("http://", "https://")) else label


def read_more(refs: list[tuple[int, Reference]], cited: list[int], lang: str, limit: int = READ_MORE,
              twins: dict[str, dict] | None = None) -> str:
    """The sections to read next: the cited ones first, then the other top sections; a section
    from the other language's tree with its counterpart in the asker's (`twins`: id -> it) first."""
    chunks = [(n, r) for n, r in refs if r.type == "chunk"]
    first = [(n, r) for n, r in chunks if n in cited] + [(n, r) for n, r in chunks if n not in cited]
    twins = twins or {}
    lines = [f"[{n}] {_twin_link(twins.get(r.id))}{_link(r)}  " for n, r in first[:limit]]
    return f"**{WORDS[lang]['read_more']}**\n\n" + "\n".join(lines) if lines else ""


def _twin_link(twin: dict | None) -> str:
    if not twin:
        return ""
    label = section_label(twin["breadcrumb"]).replace("[", "(").replace("]", ")")
    url = twin["source_url"] or ""
    return (f"[{label}]({url})" if url.startswith(("http://", "https://")) else label) + " · "


def counterparts(refs: list[tuple[int, Reference]], lang: str, store) -> dict[str, dict]:
    """id -> the same section in the asker's language, for the sections from another tree."""
    rows = with_counterparts(store, [{"id": r.id, "type": r.type} for _, r in refs], lang)
    return {row["id"]: row["counterpart"] for row in rows if "counterpart" in row}


def offline_answer(question: str, results: list[RetrievalResult], embedder, retriever=None) -> tuple[str, dict]:
    """(the Markdown answer, its meta with `components`): the extract with its citations, "Read
    more" under it; a question the docs do not seem to cover says so first."""
    lang = language_of(question)
    refs = numbered(results)
    verdict = judged(results)
    if not refs:
        text = WORDS[lang]["nothing"]
        return text, {"llm": False, "rounds": len(results), **verdict, "references": [],
                      "components": [_card(text, [], verdict, False)]}
    answer, cited = extract(question, refs, embedder, corpus_idf(retriever) if retriever is not None else None)
    head = ""
    if verdict.get("answerable") is False:
        closest = [r for _, r in refs if r.type == "chunk"][:3]
        head = (f"{WORDS[lang]['not_covered']} " + ("、" if lang == "zh" else ", ").join(
            f"“{section_label(r.breadcrumb)}”" for r in closest) + (("。" if lang == "zh" else ".") + "\n\n"))
    twins = counterparts(refs, lang, store_of(retriever))
    text = head + answer + "\n\n" + read_more(refs, cited, lang, twins=twins)
    meta = {"llm": False, "rounds": len(results), **verdict, "references": reference_rows(refs, twins),
            "citations": {"cited": cited, "removed": 0, "removed_numbers": []},
            "components": build(head + answer, cited, refs, verdict, False, store_of(retriever), lang, notice=head.strip())}
    return text, meta


def reference_rows(refs: list[tuple[int, Reference]], twins: dict[str, dict] | None = None) -> list[dict]:
    """The numbered references as the answer's metadata lists them: readable title and section
    (the id stays for programs, never shown), and the section's `counterpart` in the asker's
    language where it has one."""
    rows = []
    for n, r in refs:
        row = {"n": n, "id": r.id, "type": r.type, "title": page_title(r.breadcrumb),
               "section": section_label(r.breadcrumb), "breadcrumb": r.breadcrumb,
               "source_url": r.source_url or "", "score": r.score}
        if twins and r.id in twins:
            row["counterpart"] = twins[r.id]
        if r.image_url:
            row["image_url"] = r.image_url
        rows.append(row)
    return rows


def store_of(retriever):
    """The retriever's read-only store (this thread's), None for a retriever without one."""
    get = getattr(retriever, "_store", None)
    return get() if callable(get) else None


def _card(markdown: str, cited: list[int], verdict: dict, llm: bool, notice: str = "") -> dict:
    card = {"type": "answer", "markdown": markdown, "citations": cited, "answerable": verdict.get("answerable"),
            "confidence": verdict.get("confidence"), "llm": llm}
    if notice:  # the "not covered" sentence the markdown opens with: a front-end may draw it apart
        card["notice"] = notice
    return card


def _where(n: int, r: Reference) -> dict:
    return {"n": n, "title": page_title(r.breadcrumb), "section": section_label(r.breadcrumb),
            "url": r.source_url or ""}


def build(markdown: str, cited: list[int], refs: list[tuple[int, Reference]], verdict: dict, llm: bool,
          store=None, lang: str | None = None, notice: str = "") -> list[dict]:
    """The answer's components (see the module's docstring); `notice`: the sentence `markdown`
    opens with when the docs do not seem to cover the question."""
    out = [_card(markdown, cited, verdict, llm, notice)]
    api = api_card.pick(store, refs, cited) if store is not None else None
    if api:
        out.append(api[0])
    pages = {r.source_path for n, r in refs if n in cited} or {r.source_path for _, r in refs[:1]}
    on_page = [(n, r) for n, r in refs if r.source_path in pages]
    code = next(((n, r) for n, r in on_page if r.type == "code"), None)
    if code and "```" not in markdown:
        out.append({"type": "code", "language": code[1].code_language or "", "code": code[1].text, **_where(*code)})
    # a table the API card already reads (its parameters) is not shown twice
    table = next(((n, r) for n, r in on_page if r.type == "table"
                  and not (api and section_label(r.breadcrumb) == api[0]["section"])), None)
    if table and table[1].text.splitlines()[0].strip() in markdown:
        table = None  # the answer is a row of it, under its header already
    if table:
        header, rows = parse_table(table[1].text)
        if header:
            out.append({"type": "table", "header": header, "rows": rows[:20], **_where(*table)})
    images = [(n, r) for n, r in on_page if r.type == "image"] or [(n, r) for n, r in refs if r.type == "image"]
    for n, r in images[:2]:  # the cited pages' images, else the retrieved ones (a screenshot asked for)
        out.append({**_where(n, r), "type": "image", "url": r.image_url, "alt": r.caption()})  # the image, not its section
    out.append({"type": "sources", "items": [{**_where(n, r), "kind": r.type} for n, r in refs
                                             if r.type == "chunk"][:8]})
    # the APIs named: the answer's, then the types the API card's parameters take ("Options")
    named = markdown + "".join(f" `{p['type']}`" for p in (api[0]["params"] if api else []))
    more = followups(store, refs, cited, named, lang or language_of(markdown),
                     {api[1]} if api else set()) if store is not None else []
    if more:
        out.append({"type": "followups", "items": more})
    return out


def other_language_path(path: str) -> str:
    """The same page in the other tree: en/... <-> zh-cn/..., "" when the path is in neither."""
    for a, b in (("en/", "zh-cn/"), ("zh-cn/", "en/")):
        if path.startswith(a):
            return b + path[len(a):]
    return ""


def followups(store, refs: list[tuple[int, Reference]], cited: list[int], text: str = "", lang: str = "en",
              shown: set[str] | None = None, limit: int = 3) -> list[dict]:
    """Two or three sections to go on with, from the index: the reference of an API the answer
    (`text`) names, the section after the first cited one (a how-to's next step), the same
    section in the other language, and the best section of another page. After a reference
    section the named APIs lead; after a guide, its next step. `shown`: section ids on show."""
    chunks = [(n, r) for n, r in refs if r.type == "chunk"]
    lead = next(((n, r) for n, r in chunks if n in cited), chunks[0] if chunks else None)
    if lead is None or not lead[1].source_path:
        return []
    ref = lead[1]
    page = store.nodes.page_sections(ref.source_path)
    at = next((i for i, row in enumerate(page) if row[0] == ref.id), None)
    skip = {r.id for n, r in chunks if n in cited} | {ref.id} | (shown or set())
    nxt = page[at + 1] if at is not None and at + 1 < len(page) else None
    other = other_language_path(ref.source_path)
    twin = store.nodes.page_sections(other) if other else []
    same = twin[min(at, len(twin) - 1)] if at is not None and twin else None
    # not the API card's own section again
    step = [_follow("next", nxt)] if nxt and nxt[0] not in (shown or set()) else []
    again = [_follow("other_language", same)] if same and same[0] not in (shown or set()) else []
    apis = api_card.named_apis(store, text, lang, skip)
    related = next((r for n, r in chunks if r.source_path != ref.source_path and n not in cited), None)
    near = [{"why": "related", "title": page_title(related.breadcrumb), "section": section_label(related.breadcrumb),
             "url": related.source_url or "", "query": section_label(related.breadcrumb).split(" › ")[-1]}] \
        if related is not None else []
    reference = api_card.parse(ref.text) is not None
    ordered = (apis + again + step if reference else step + apis + again) + near
    out, seen = [], set()
    for item in ordered:
        if (item["section"], item["url"]) not in seen:
            seen.add((item["section"], item["url"]))
            out.append(item)
    return out[:limit]


def _follow(why: str, row: tuple) -> dict:
    _, crumb, url, _, _ = row
    return {"why": why, "title": page_title(crumb), "section": section_label(crumb), "url": url,
            "query": section_label(crumb).split(" › ")[-1]}


def markdown(components: list[dict], lang: str = "en") -> str:
    """The components below the answer card as Markdown (the chat renders the card itself):
    code fenced with its language, a table, images inline, the sources folded, follow-ups."""
    w, parts = WORDS[lang], []
    for c in components:
        if c["type"] == "code":
            fence = "````" if "```" in c["code"] else "```"
            parts.append(f"{fence}{c['language']}\n{c['code']}\n{fence}\n[{c['n']}] {c['section']}")
        elif c["type"] == "table":
            parts.append(_md_table(c["header"], c["rows"]) + f"\n\n[{c['n']}] {c['section']}")
        elif c["type"] == "api":
            parts.append(api_markdown(c, lang))
        elif c["type"] == "image":
            # one line (a caption has several), no brackets or backticks (a code span would swallow the link)
            alt = " ".join(c["alt"].split())[:200].replace("[", "(").replace("]", ")").replace("`", "")
            parts.append(f"![{alt}]({c['url']})")
        elif c["type"] == "sources":
            items = "\n".join(f"- [{i['n']}] {_md_link(i)}" for i in c["items"])
            parts.append(f"<details><summary>{w['sources']} ({len(c['items'])})</summary>\n\n{items}\n\n</details>")
        elif c["type"] == "followups":
            parts.append(f"**{w['followups']}**\n\n" + "\n".join(f"- {_md_link(i)}" for i in c["items"]))
    return "\n\n".join(parts)


def _md_table(header: list[str], rows: list[list[str]]) -> str:
    row = lambda cells: "| " + " | ".join(x.replace("|", "\\|") for x in cells) + " |"  # noqa: E731
    return "\n".join([row(header), "|" + "---|" * len(header), *[row(r) for r in rows]])


def api_markdown(c: dict, lang: str = "en") -> str:
    """An API card as Markdown: its name and version, the signature fenced, the parameters and
    error codes as tables, the return value; its section cited."""
    w = WORDS[lang]
    head = f"**`{c['name']}`**" + (f" · {w['since']} {c['since']}" if c.get("since") else "")
    parts = [head]
    if c.get("signature"):
        fence = "````" if "```" in c["signature"] else "```"
        parts.append(f"{fence}\n{c['signature']}\n{fence}")
    if c.get("params"):
        flag = {True: w["yes"], False: w["no"], None: ""}
        rows = [[_plain(p["name"]), _plain(p["type"]), flag[p["required"]], _plain(p["description"])]
                for p in c["params"]]
        keep = [i for i in range(4) if i in (0, 3) or any(r[i] for r in rows)]  # no column nobody fills
        parts.append(_md_table([w["params"][i] for i in keep], [[r[i] for i in keep] for r in rows]))
    if c.get("returns"):
        parts.append(f"**{w['returns']}**: {_plain(c['returns'])}")
    if c.get("errors"):
        parts.append(_md_table(list(w["errors"]), [[_plain(e["code"]), _plain(e["message"])] for e in c["errors"]]))
    parts.append(f"[{c['n']}] {_md_link(c)}")
    return "\n\n".join(parts)


def _plain(text: str) -> str:
    """The card's plain text in Markdown: `Array<TouchObject>` is no HTML tag to drop."""
    return text.replace("<", "&lt;").replace(">", "&gt;")


def _md_link(item: dict) -> str:
    label = item["section"].replace("[", "(").replace("]", ")")
    return f"[{label}]({item['url']})" if item.get("url", "").startswith(("http://", "https://")) else label
