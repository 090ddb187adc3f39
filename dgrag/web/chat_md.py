"""What the chat shows beside an answer, as Markdown: the references in rank order (kind and
"Page › Section", linked, no node id), the agent's searches, the retrieved images."""
from __future__ import annotations

import html

from ..answer.extractive import section_label

KINDS = {"chunk": "section", "code": "code", "table": "table", "image": "image"}


def references_md(result: dict) -> str:
    """Each reference as a person reads it: its kind and "Page › Section", linked; in rank
    order within each kind, no node id and no score."""
    lines = []
    for key in ("chunks", "codes", "tables", "images"):
        for it in result.get(key, []):
            crumb = html.escape(section_label(it["breadcrumb"])).replace("[", "(").replace("]", ")")
            url = it["source_url"] or ""
            link = f"[{crumb}]({url})" if url.startswith("http") else f"{crumb} (`{url}`)"
            lines.append(f"- {KINDS.get(it['type'], it['type'])} · {link}")
    return "\n".join(lines) or "_no references_"


def searches_md(rounds: list[dict]) -> str:
    """The agent's searches as one line above its answer: searched for "X" (n new), then for "Y"."""
    if not rounds:
        return ""

    def q(text: str) -> str:
        return "".join("\\" + c if c in "\\`*_[]<>#|" else c for c in text)
    steps = [f"“{q(r['query'])}” ({r['counts']['new']} new, {1000 * r['timing']['retrieve_s']:.0f} ms)" for r in rounds]
    return "🔎 Searched for " + ", then for ".join(steps) + "\n\n"


def images_md(result: dict) -> str:
    return "\n\n".join(f"![{html.escape(i.get('alt') or i['breadcrumb'])}]({i['image_url']})"
                       for i in result.get("images", []))
