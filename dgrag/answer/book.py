"""What the model has been shown: every retrieved item once, within a token budget.

Each retrieval's items enter the book in rank order; an item already in it (found by an
earlier query) is counted as repeated and not shown again. When the items in the book exceed
the budget, the lowest-scored ones are trimmed first (the most recent of equal scores first),
always keeping one. The final answer is written over the items left, numbered 1..N in the
order they were found; those numbers are the [n] the answer cites.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..core import SECTIONS as KINDS
from ..core import RetrievalResult
from .tokens import estimate_tokens



@dataclass
class Entry:
    item: dict
    round: int
    call: int  # which retrieve call found it (0, 1, 2, ... over the whole conversation)
    order: int
    tokens: int
    dropped: bool = False


@dataclass
class Added:
    """What one retrieve call added to the book."""
    new: list[Entry]
    repeated: int
    counts: dict[str, int] = field(default_factory=dict)  # items of each kind the call returned


class ContextBook:
    def __init__(self, budget_tokens: int):
        self.budget = max(1, int(budget_tokens))
        self._entries: dict[str, Entry] = {}
        self.trimmed: list[str] = []
        self.calls = 0

    def add(self, result: RetrievalResult, round_no: int) -> Added:
        call = self.calls
        self.calls += 1
        new, repeated = [], 0
        for kind in KINDS:
            for it in (ref.to_api() for ref in result.references[kind]):
                if it["id"] in self._entries:
                    repeated += 1
                    continue
                e = Entry(it, round_no, call, len(self._entries), estimate_tokens(render_item(it)))
                self._entries[it["id"]] = e
                new.append(e)
        self._trim()
        return Added([e for e in new if not e.dropped], repeated, {k: len(result.references[k]) for k in KINDS})

    def _trim(self) -> None:
        live = self.live()
        total, remaining = sum(e.tokens for e in live), len(live)
        for e in sorted(live, key=lambda e: (e.item.get("score") or 0.0, -e.order)):
            if total <= self.budget or remaining <= 1:
                break
            e.dropped = True
            total, remaining = total - e.tokens, remaining - 1
            self.trimmed.append(e.item["id"])

    # ---- reading --------------------------------------------------------------------------
    def live(self) -> list[Entry]:
        return [e for e in self._entries.values() if not e.dropped]

    def of_call(self, call: int) -> list[Entry]:
        return [e for e in self.live() if e.call == call]

    def tokens(self) -> int:
        return sum(e.tokens for e in self.live())

    def numbered(self) -> list[tuple[int, Entry]]:
        return list(enumerate(self.live(), 1))

    def references(self) -> list[dict]:
        """The numbered reference list: what each [n] of the answer points at."""
        out = []
        for n, e in self.numbered():
            it = e.item
            ref = {"n": n, "id": it["id"], "type": it["type"], "breadcrumb": it.get("breadcrumb", ""),
                   "source_url": it.get("source_url", ""), "score": it.get("score")}
            if it.get("image_url"):
                ref["image_url"] = it["image_url"]
            out.append(ref)
        return out

    def render_numbered(self) -> str:
        return "\n\n".join(render_item(e.item, n) for n, e in self.numbered())

    def context_text(self) -> str:
        """The plain text of every item left (what answer recall looks into)."""
        return "\n\n".join(e.item.get("text", "") for e in self.live())


def render_item(it: dict, n: int | None = None) -> str:
    """One item as the model reads it: its number (in the final context), kind, breadcrumb,
    source, then the body as Markdown (code fenced with its language, images by /images/{sha})."""
    head = f"[{n}] " if n is not None else "- "
    head += f"{it['type']} · {it.get('breadcrumb', '')}\n  Source: {it.get('source_url', '')}\n"
    return head + "\n" + _body(it)


def _body(it: dict) -> str:
    text = it.get("text", "")
    if it["type"] == "code":
        fence = "````" if "```" in text else "```"
        return f"{fence}{it.get('code_language', '')}\n{text}\n{fence}"
    if it["type"] == "image":
        caption = (it.get("summary") or it.get("alt") or "image").replace("\n", " ")[:300]
        alt = caption.replace("[", "(").replace("]", ")")
        return f"![{alt}]({it.get('image_url', '')})\n\n{caption}"
    return text
