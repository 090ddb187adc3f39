"""The plain data every layer speaks: rows out of the store and what retrieval passes around.

Node rows stay dicts for now: the enrichment runner annotates them in place and embed_text
reads them; they become a type here when those move (see docs/architecture.md).

Frozen dataclasses with no behaviour beyond small conversions, so that the store, retrieval,
the agent and the edges agree on field names in one place; and the one token estimate, which
the query limit and the agent's budget both count by, and an item's Markdown body. Nothing here imports dgrag.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping, Sequence, TypedDict

import numpy as np

from .kernels.tokens import CJK, IDEOGRAPH

SECTIONS = ("chunks", "codes", "tables", "images")  # the result lists, in the seed's order
SECTION_OF = {"chunk": "chunks", "code": "codes", "table": "tables", "image": "images"}
CAPTION_CHARS = 300  # an image's caption, wherever it is read: the merged context, the agent's book, its images


# ---- the one token estimate: query limits, the agent's book and its token report ---------------
_TOKEN_PIECES = re.compile(f"[{CJK}]|[^\\W{CJK}]+|[^\\w\\s]")


class Node(TypedDict, total=False):
    """A node row as the store reads it (`nodes.by_rowids`): the columns by name, `meta`
    decoded. A mapping rather than a class, because the parser's new nodes (the same keys,
    before they have a rowid) go through the same text rules (`embed_text`, the summaries)."""

    rowid: int
    id: str
    type: str                 # file | chunk | code | table | image | entity
    text: str
    summary: str | None
    summary_source: str | None  # extractive | llm
    breadcrumb: str
    source_path: str | None
    line_start: int | None
    line_end: int | None
    source_url: str | None
    language: str | None
    content_hash: str | None
    prose: str | None         # a chunk's text without its code, tables and images
    entity_name: str | None
    entity_norm: str | None
    meta: dict[str, Any]




def url_of(template: str, path: str, line: int | None, line_end: int | None, anchor: str = "", url: str = "") -> str:
    """A node's source URL: `template` with {path}, {line}, {line_end}, {anchor} (its heading's
    anchor) and {url} (its page's path on the site and the anchor), or "path#Lline" without one
    (KeyError / IndexError / ValueError for a template that does not format)."""
    if not template:
        return f"{path}#L{line}" if line else path
    return template.format(path=path, line=line or 1, line_end=line_end or line or 1, anchor=anchor, url=url)


def language_of(text: str) -> str:
    """'zh' for a text with any Han character, else 'en': which prompt language a question gets."""
    return "zh" if IDEOGRAPH.search(text or "") else "en"


def estimate_tokens(text: str) -> int:
    """Subword tokens of `text`, estimated without a model: one per CJK character or symbol,
    one per 4 characters of a word. On the ArkUI-X docs it is within -3% / +15% (p10 / median)
    of multilingual-e5's tokenizer; one rule everywhere, so a query the limit lets through
    costs the agent's budget what the limit said."""
    return sum(1 if len(p) == 1 else math.ceil(len(p) / 4) for p in _TOKEN_PIECES.findall(text or ""))


# ---- rows of the index file ---------------------------------------------------------------------
@dataclass(frozen=True)
class Fact:
    """One OpenIE triple of `facts`: entity rowids `head` and `tail`, its source `chunk`."""
    rowid: int
    head: int
    relation: str
    tail: int
    text: str
    chunk: int
    source: str


# ---- retrieval --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Route:
    """One recall route after stage 1 (and 2): candidates best first.

    `positions` index the loaded snapshot's arrays of the route's table: for the node kinds
    (file, chunk, code, ...) they are graph node indices (`li.rowids[p]` is the store rowid);
    for kind "fact" they are fact positions (`li.fact_rowids[p]`). `rowids()` resolves either.
    `score` is the rerank score (the cosine until stage 2 sets it)."""
    kind: str
    positions: np.ndarray
    cosine: np.ndarray
    score: np.ndarray = None  # type: ignore[assignment]

    def __post_init__(self):
        if self.score is None:
            object.__setattr__(self, "score", self.cosine.astype(np.float64))

    @property
    def size(self) -> int:
        return int(self.positions.size)

    def top(self, k: int) -> "Route":
        order = np.argsort(-self.score, kind="stable")[:k]
        return Route(self.kind, self.positions[order], self.cosine[order], self.score[order])

    def rowids(self, li, k: int | None = None) -> list[int]:
        """Store rowids of the first k candidates (nodes or facts, by kind)."""
        table = li.fact_rowids if self.kind == "fact" else li.rowids
        return table[self.positions[:k]].tolist()


@dataclass(frozen=True)
class Stage3Result:
    """What stage 3 hands to stage 4: per collectable kind, (graph index, score) best first;
    the graph path (graph indices) that reached each cited node, None for the methods that draw
    no paths (ppr, dense); and a trace for display."""
    ranked: Mapping[str, list[tuple[int, float]]]
    paths: Mapping[int, list[int]] | None = None
    trace: Mapping[str, Any] = field(default_factory=dict)
    # by graph index, what ranked each of the first chunks (the diffusion's, when verbose):
    # {"score", "placed_by", "contributions"} (retrieve/methods.py `_why`)
    why: Mapping[int, Mapping[str, Any]] | None = None


@dataclass(frozen=True)
class Reference:
    """One retrieved node as the result lists show it (`to_api()` is the seed's item)."""
    id: str
    type: str
    score: float
    breadcrumb: str = ""
    source_url: str | None = None
    source_path: str | None = None
    line_start: int | None = None
    line_end: int | None = None
    language: str | None = None
    summary: str = ""
    text: str = ""
    corpus_idx: Any = None  # passages imported from a benchmark corpus only
    code_language: str | None = None  # code only
    image: Mapping[str, Any] | None = None  # images only: sha, width, height, alt, page
    graph_path_rowids: tuple[str, ...] = ()
    why: Mapping[str, Any] | None = None  # what ranked it: the features and their contributions (verbose)

    @property
    def image_url(self) -> str | None:
        return f"/images/{self.image.get('sha')}" if self.image is not None else None

    def caption(self) -> str:
        """An image's caption on one line: its summary, else its alt text, cut at CAPTION_CHARS."""
        return (self.summary or (self.image or {}).get("alt") or "image").replace("\n", " ")[:CAPTION_CHARS]

    def body_markdown(self) -> str:
        """The body as Markdown, for the merged context and the agent's book alike: code fenced
        with its language (a longer fence around one inside), an image by URL and caption."""
        if self.type == "code":
            fence = "````" if "```" in self.text else "```"
            return f"{fence}{self.code_language or ''}\n{self.text}\n{fence}"
        if self.type == "image":
            caption = self.caption()
            return f"![{caption.replace('[', '(').replace(']', ')')}]({self.image_url})\n\n{caption}"
        return self.text

    def to_api(self) -> dict:
        item = {"id": self.id, "type": self.type, "score": self.score, "breadcrumb": self.breadcrumb,
                "source_url": self.source_url, "source_path": self.source_path, "line_start": self.line_start,
                "line_end": self.line_end, "language": self.language, "summary": self.summary, "text": self.text}
        if self.corpus_idx is not None:
            item["corpus_idx"] = self.corpus_idx
        if self.code_language is not None:
            item["code_language"] = self.code_language
        if self.image is not None:
            item.update(image_sha=self.image.get("sha"), width=self.image.get("width"),
                        height=self.image.get("height"), alt=self.image.get("alt", ""), page=self.image.get("page"),
                        image_url=self.image_url)
        if self.graph_path_rowids:
            item["graph_path_rowids"] = list(self.graph_path_rowids)
        if self.why is not None:
            item["why"] = dict(self.why)
        return item


@dataclass(frozen=True)
class RetrievalResult:
    """One answered retrieval request. `to_api()` is the seed's JSON, built here only."""
    query: str
    method: str
    references: Mapping[str, tuple[Reference, ...]]  # by section: chunks, codes, tables, images
    context: str
    timing: Mapping[str, float]
    trace: Mapping[str, Any] | None = None
    # does the index answer the query (retrieve/confidence.py)? None where it was not judged
    answerable: bool | None = None
    confidence: float | None = None
    note: str = ""  # a word on the method, e.g. that `ppr` is an experimental comparison

    def __post_init__(self):
        object.__setattr__(self, "references", MappingProxyType(
            {s: tuple(self.references.get(s, ())) for s in SECTIONS}))

    @property
    def chunks(self) -> tuple[Reference, ...]:
        return self.references["chunks"]

    def all_references(self) -> list[Reference]:
        return [r for s in SECTIONS for r in self.references[s]]

    def to_api(self) -> dict:
        out = {"query": self.query, "method": self.method,
               **{s: [r.to_api() for r in self.references[s]] for s in SECTIONS},
               "context": self.context, "rag_context": self.context,
               **{f"rag_{s}_count": len(self.references[s]) for s in SECTIONS},
               "timing": dict(self.timing)}
        if self.answerable is not None:
            out.update(answerable=self.answerable, confidence=self.confidence)
        if self.note:
            out["note"] = self.note
        if self.trace is not None:
            out["trace"] = dict(self.trace)
        return out


def chat_to_api(query: str, results: Sequence[RetrievalResult], answer: str, seconds: float) -> dict:
    """The seed's /chat response over the searches one answer made (the first one's stage
    timings; `llm` is what the searches leave of `seconds`)."""
    timing = dict(results[0].timing) if results else {}
    timing["total"] = round(seconds, 4)
    timing["llm"] = round(max(0.0, seconds - sum(r.timing["rag_total"] for r in results)), 4)
    return {"query": query, "rag_context": "\n\n".join(r.context for r in results), "llm_response": answer,
            **{f"rag_{s}_count": sum(len(r.references[s]) for r in results) for s in SECTIONS},
            "references": [_brief(ref) for r in results for ref in r.all_references()],
            "timing": timing, **judged(results)}


def judged(results: Sequence[RetrievalResult]) -> dict:
    """`answerable` and `confidence` of the searches behind one answer: the first search's (the
    question as asked), else {} where none was judged."""
    first = next((r for r in results if r.answerable is not None), None)
    return {} if first is None else {"answerable": first.answerable, "confidence": first.confidence}


def page_title(breadcrumb: str) -> str:
    """A section's page title: the first heading of its breadcrumb."""
    return (breadcrumb or "").split(" / ")[0].strip()


def _brief(ref: Reference) -> dict:
    out = {"id": ref.id, "type": ref.type, "title": page_title(ref.breadcrumb), "breadcrumb": ref.breadcrumb,
           "source_url": ref.source_url, "score": ref.score}
    if ref.image is not None:
        out["image_url"] = ref.image_url
    return out
