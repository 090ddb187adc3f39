"""The answer without an LLM: the few sentences (or the one table row, or the one code block) of
the top sections that answer the question, each cited [n] against the numbered references.

The candidates are the units of the top sections (in the question's language where the results
hold both): their sentences and list items, each row of a table, each code block. Each is scored
by the packaged embedder (the question against every candidate, in one batch, at query time) and
by the lexical index's words (the share of the question's IDF-weighted words the unit holds, with
its section's title: a sentence often says "he" where its page names the subject), less a little
per rank of its section; in a docs tree, the share its whole section (heading path and body) holds
instead of its own (unweighted), which picks the section that leads the answer. The best unit
leads; a code block or a table row stands alone, sentences within `MARGIN` of the best fill up to
`ANSWER_CHARS`.

The second hop: an answer often sits in another section that names what the best sentence
introduced ("... the song was inspired by his then-girlfriend" after "written by Ed Sheeran"). A
sentence of another section gains `W_BRIDGE` x the share of the best sentence's new words (those
not in the question) that it holds, with its section's title. Chosen on the MuSiQue dev split
(every third question; docs/benchmarks.md, "Answers"): gold answer in the extract
35.3 -> 50.0; W_BRIDGE 0.3-0.5 with MARGIN 0.2-0.5 all within 3 points of it.
"""
from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass

import numpy as np

from ..core import Reference, language_of, page_title
from ..kernels.tokens import IDEOGRAPHS, tokenize
from ..retrieve.context import MAX_CHUNK_CHARS

ANSWER_CHARS = 600
SECTIONS = 5       # the top sections whose units are candidates
MAX_UNITS = 120    # candidates embedded per question (in section order)
MAX_SENTENCES = 8
W_LEX, W_RANK, MARGIN, W_BRIDGE = 0.1, 0.01, 0.3, 0.5
# Two kinds of index read differently. In a docs tree the section whose heading path and body hold
# the question's words is the one that answers: W_SECTION x the share of the question's words its
# whole section holds (`section_share`), and no per-unit word share (W_LEX_DOCS). In a passage
# index (MuSiQue) the passage holding most of the question is the first hop, not the answer, and
# the unit's own word share helps (W_LEX). Chosen on the dev splits (docs/benchmarks.md, "Answers"):
# docs (ArkUI-X v2 and the three doc sites, 100 questions) first citation a gold section 74 -> 81 of
# 100 (section R@1: 77) for W_LEX_DOCS 0.1 -> 0 and W_SECTION 0 -> 0.1 (0.1-0.3 with W_RANK 0.01-0.03
# all within 3); MuSiQue dev stays 50.0 (41.2 had passages taken W_SECTION too).
W_LEX_DOCS, W_SECTION = 0.0, 0.1
_SENTENCE_END = re.compile(f"(?<=[.!?])\\s+(?=[A-Z0-9\"'(`{IDEOGRAPHS}])|(?<=[。！？；])")
_LINK = re.compile(r"!?\[([^\]]*)\](?:\([^)]*\)|\[[^\]]*\])|<!--.*?-->")  # inline and reference links; comments
_FENCE = re.compile(r"^\s*(```|~~~)")
_LABEL = re.compile(r"\*\*[^*]+\*\*[:：]?|\[[^\]]+\]")  # a line that is only a bold or bracketed label


@dataclass
class Unit:
    text: str            # as shown
    kind: str            # sentence | row | code
    n: int               # the reference it cites
    rank: int            # its section's rank among the candidates' sections
    order: int           # position in its section
    title: str = ""      # its section's heading path, read with it when scored
    header: str = ""     # a row: its table's header row
    language: str = ""   # a code block: its language
    passage: bool = False  # from an imported passage corpus (no heading tree)


def split_section(text: str) -> list[tuple[str, str, str]]:
    """(kind, text, extra) of each unit of one section's Markdown: sentences and list items,
    table rows (extra: the header row), code blocks (extra: the language). Headings, images and
    table separators are left out."""
    units: list[tuple[str, str, str]] = []
    lines = text.splitlines()
    i, header, para = 0, "", []

    def flush():
        if para:
            plain = _LINK.sub(lambda m: m.group(1) or "", " ".join(para))  # relative links lead nowhere in an answer
            units.extend(("sentence", s.strip(), "") for s in _SENTENCE_END.split(plain) if _worth(s))
            para.clear()

    while i < len(lines):
        line = lines[i].strip()
        if _FENCE.match(line):
            flush()
            fence, lang, body = line[:3], line[3:].strip(), []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith(fence):
                body.append(lines[i])
                i += 1
            if body:
                units.append(("code", "\n".join(body), lang))
        elif line.startswith("|"):
            flush()
            if not header:
                header = line
            elif not re.fullmatch(r"[|:\-\s]+", line):
                units.append(("row", line, header))
        else:
            header = ""  # a table ends at its first other line
            if not line or line.startswith(("#", "![")):
                flush()
            elif re.match(r"^([-*+]|\d+\.)\s", line):
                flush()
                para.append(re.sub(r"^([-*+]|\d+\.)\s+", "", line))
                flush()
            else:
                para.append(line)
        i += 1
    flush()
    return units


def _worth(sentence: str) -> bool:
    """A unit says something: not a label line alone (`[Windows]`, `**OpenHarmony Platform**` before a
    code block answers nothing); a Chinese one 4 characters or more, another 8 or more and two words or more."""
    s = sentence.strip()
    if _LABEL.fullmatch(s):
        return False
    if language_of(s) == "zh":
        return len(s) >= 4 and any(c.isalnum() for c in s)
    return len(s) >= 8 and len(tokenize(s)) >= 2


def candidates(question: str, numbered: list[tuple[int, Reference]], sections: int = SECTIONS) -> list[Unit]:
    """The units of the top sections (chunks first, then the first code blocks and tables), in
    the question's language when the references hold any section in it."""
    lang = language_of(question)
    chunks = [(n, r) for n, r in numbered if r.type == "chunk"]
    same = [(n, r) for n, r in chunks if (r.language or lang) == lang]
    picked = (same or chunks)[:sections]
    extra = [(n, r) for n, r in numbered if r.type in ("code", "table")
             and (r.language or lang) == (lang if same else r.language or lang)][:2]
    units: list[Unit] = []
    for rank, (n, ref) in enumerate(picked + extra):
        parts = [("code", ref.text, ref.code_language or "")] if ref.type == "code" else split_section(ref.text)
        if ref.type == "chunk" and len(ref.text) >= MAX_CHUNK_CHARS:
            parts = parts[:-1]  # the reference holds the section's text cut short: its last unit is a fragment
        for order, (kind, text, extra_text) in enumerate(parts):
            units.append(Unit(text, kind, n, rank, order, ref.breadcrumb, header=extra_text if kind == "row" else "",
                              language=extra_text if kind == "code" else "", passage=ref.corpus_idx is not None))
    return units[:MAX_UNITS]


def score_units(question: str, units: list[Unit], embedder, idf=None) -> np.ndarray:
    """Each unit's score: cosine to the question + W_LEX x its share of the question's words
    - W_RANK x its section's rank (a passage); a docs section's unit: W_LEX_DOCS for its own
    share, + W_SECTION x its whole section's share (`section_share`). `idf(terms)`: the corpus's IDF of each term (uniform without)."""
    if not units:
        return np.zeros(0)
    texts = [f"{u.title}: {_plain(u)}"[:1000] for u in units]
    qv = np.asarray(embedder.embed_queries([question])[0], dtype=np.float32)
    cos = np.asarray(embedder.embed_passages(texts), dtype=np.float32) @ qv
    lex = np.array([word_share(question, t, idf) for t in texts])
    rank = np.array([u.rank for u in units], dtype=np.float64)
    passage = np.array([u.passage for u in units])
    section = np.where(passage, 0.0, W_SECTION * section_share(question, units))
    return cos + np.where(passage, W_LEX, W_LEX_DOCS) * lex - W_RANK * rank + section


def section_share(question: str, units: list[Unit]) -> np.ndarray:
    """Per unit: the share of the question's distinct words (unweighted) that its whole section
    holds, title and all its units read together."""
    texts: dict[int, list[str]] = {}
    for u in units:
        texts.setdefault(u.n, [u.title]).append(_plain(u))
    share = {n: word_share(question, " ".join(t)) for n, t in texts.items()}
    return np.array([share[u.n] for u in units])


def word_share(question: str, text: str, idf=None) -> float:
    """The share of the question's distinct words (IDF-weighted) that `text` holds."""
    terms = list(dict.fromkeys(tokenize(question)))
    if not terms:
        return 0.0
    held = set(tokenize(text))
    weights = np.asarray(idf(terms) if idf else np.ones(len(terms)), dtype=np.float64)
    total = float(weights.sum())
    return float(sum(w for t, w in zip(terms, weights) if t in held) / total) if total > 0 else 0.0


def _plain(u: Unit) -> str:
    return f"{u.header}\n{u.text}" if u.kind == "row" else u.text


def bridge_bonus(question: str, best: Unit, units: list[Unit]) -> np.ndarray:
    """Per unit: the share of the best sentence's words not in the question that it holds with
    its title; 0 for the units of the best sentence's own section."""
    asked = set(tokenize(question))
    new = [t for t in dict.fromkeys(tokenize(best.text)) if t not in asked]
    if not new:
        return np.zeros(len(units))
    return np.array([0.0 if u.n == best.n else
                     len(set(new) & set(tokenize(f"{u.title}: {u.text}"))) / len(new) for u in units])


def select(units: list[Unit], scores, budget: int = ANSWER_CHARS, question: str = "") -> list[Unit]:
    """The best unit; a code block or a table row alone (or after the sentence that leads into
    it: "for example:"), else the sentences within MARGIN of the best that fit in `budget` with
    their citations, after the second hop's bonus (`bridge_bonus`) when the question is given."""
    if not units:
        return []
    scores = np.asarray(scores, dtype=np.float64)
    best = units[int(np.argsort(-scores, kind="stable")[0])]
    if best.kind in ("code", "row"):
        return [best]
    after = next((u for u in units if u.n == best.n and u.order == best.order + 1), None)
    if after is not None and after.kind == "code" and best.text.rstrip().endswith((":", "：")):
        return [best, after]
    if question:
        scores = scores + W_BRIDGE * bridge_bonus(question, best, units)
    order = np.array([units.index(best)] + [i for i in np.argsort(-scores, kind="stable").tolist()
                                            if units[i] is not best])
    chosen, used, said = [], 0, set()
    for i in order.tolist():
        u = units[i]
        far = scores[i] < scores.max() - MARGIN and u is not best  # the best leads whatever its bonus
        if u.kind != "sentence" or far or len(chosen) >= MAX_SENTENCES or u.text.strip() in said:
            continue  # a sentence two sections repeat is said once
        cost = len(u.text) + len(f" [{u.n}]") + 1
        if used + cost > budget:
            if chosen:
                continue
            u = dataclasses.replace(u, text=u.text[:budget - len(f" [{u.n}]") - 1].rstrip() + "…")
            cost = budget
        chosen.append(u)
        said.add(u.text.strip())
        used += cost
    # the best first (its citation is the answer's lead), the rest in reading order
    return chosen[:1] + sorted(chosen[1:], key=lambda u: (u.rank, u.order))


def render(chosen: list[Unit], budget: int = ANSWER_CHARS) -> str:
    """The chosen units as Markdown, each cited [n]: sentences run on, a row under its header,
    a code block fenced with its language (cut to what the budget leaves)."""
    out = ""
    for u in chosen:
        if u.kind == "sentence":
            out += (" " if out else "") + f"{u.text} [{u.n}]"
        elif u.kind == "row":
            sep = "|" + "---|" * max(u.header.count("|") - 1, 1)
            out += ("\n\n" if out else "") + f"{u.header}\n{sep}\n{u.text}\n\n[{u.n}]"
        else:
            fence = "````" if "```" in u.text else "```"
            lead = "\n\n" if out else ""
            room = budget - len(out) - len(lead) - 2 * len(fence) - len(u.language) - len(f"\n\n[{u.n}]") - 2
            body = u.text if len(u.text) <= room else u.text[:max(room - 2, 0)].rstrip() + "\n…"
            out += f"{lead}{fence}{u.language}\n{body}\n{fence}" + ("" if lead else f"\n\n[{u.n}]")
    return out[:budget]


def corpus_idf(retriever):
    """The corpus's IDF per term (the loaded index's lexical index), or None without one."""
    handle = getattr(retriever, "handle", None)
    if handle is None:
        return None
    _, lex = handle.get().lexical()
    n, df = lex.n_docs, np.diff(lex.weights.indptr)
    unseen = math.log1p((n + 0.5) / 0.5)

    def idf(terms):
        return [math.log1p((n - df[lex.vocab[t]] + 0.5) / (df[lex.vocab[t]] + 0.5)) if t in lex.vocab else unseen
                for t in terms]

    return idf


def extract(question: str, numbered: list[tuple[int, Reference]], embedder, idf=None,
            budget: int = ANSWER_CHARS) -> tuple[str, list[int]]:
    """(the answer's Markdown, the reference numbers it cites)."""
    units = candidates(question, numbered)
    chosen = select(units, score_units(question, units, embedder, idf), budget, question)
    return render(chosen, budget), list(dict.fromkeys(u.n for u in chosen))


def section_label(breadcrumb: str) -> str:
    """A section as a person reads it: "Page › Heading › Subheading"."""
    parts = [p.strip() for p in (breadcrumb or "").split(" / ") if p.strip()]
    return " › ".join(parts) or page_title(breadcrumb)
