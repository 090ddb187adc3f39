"""Offline OpenIE for technical docs: entities and triples without an LLM.

`extract(text, breadcrumb, language)` reads one chunk's prose (`filter` text: the heading
title on the first line, code blocks / tables / images removed) and returns
`(entities, triples)` in the same shape as the LLM OpenIE step:

* entities: `[(name, description)]`, the description being the (trimmed) sentence in which
  the entity first appears;
* triples: `[(head, relation, tail)]`, every head and tail being one of the entity names.

Candidates, most specific first: defined terms ("X is a Y", "X refers to", "X: ...",
"X是…", "X指…", "X用于…"), inline code spans (from `raw_markdown`), decorators and module
names (`@State`, `@ohos.router`), API names (`router.pushUrl`, `build()`), file names and
paths (`module.json5`), command lines (`ace build`), quoted terms (「」“”《》), CamelCase /
mixed-case identifiers and multi-word product names (ArkUI-X, DevEco Studio, UIAbility),
CJK noun phrases next to such tokens (ArkUI框架), acronyms (SDK, API), then plain capitalised
words and CJK noun phrases. The section topic (the nearest non-generic heading of the
breadcrumb) is always an entity.

Triples: topic --mentions/提及--> entity; definitional (X, "is a"/"是"/"指", Y) and
(X, "defined in"/"定义于", topic); (topic, label, value) for API reference fields such as
"System capability: SystemCapability.X" or "支持平台：Android、iOS"; aliases "X (Y)";
and for two entities adjacent in one sentence, the short phrase between them
(≤ 6 words / ≤ 10 CJK characters) as the relation.

Pure functions, standard library only, deterministic. This module runs the phases of one
extraction (`_Extraction`); the candidate finders live in `openie_mentions`, the definition
readers in `openie_definitions`, text and topic helpers in `openie_text`, word lists and
patterns in `openie_lexicon`.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

__all__ = ["normalize_entity", "extract", "MAX_ENTITIES", "MAX_TRIPLES", "MAX_NAME_CHARS"]

from .openie_definitions import _DefinitionReader
from .openie_lexicon import (  # noqa: F401 - normalize_entity and the limits are public here too
    MAX_DESC_CHARS, MAX_ENTITIES, MAX_NAME_CHARS, MAX_TOPIC_CHARS, MAX_TRIPLES, _BOILERPLATE, _CJK, _FIELD_LABELS,
    _GENERIC_HEADINGS, _SCORE, _SIG_LINE, _SKIP_LABELS, _WS, _display, _nfkc, normalize_entity,
)
from .openie_mentions import _bold_spans, _cjk_phrases, _code_spans, _commands, _latin_tokens, _Mention, _quoted
from .openie_text import _clean_heading, _is_cjk, _sentences, _topic, _trim_sentence, _valid


@dataclass
class _Entity:
    name: str
    key: str
    pos: int
    score: int
    count: int
    desc: str


# --------------------------------------------------------------------------------------
# main entry
# --------------------------------------------------------------------------------------
def extract(text: str, breadcrumb: str, language: str, raw_markdown: str | None = None
            ) -> tuple[list[tuple[str, str]], list[tuple[str, str, str]]]:
    """Entities `[(name, description)]` and triples `[(head, relation, tail)]` of one chunk.

    `text` is the chunk's prose (`filter`: first line the heading title), `breadcrumb` the
    "H1 / H2 / H3" path, `language` "zh" or "en" (relation labels: 提及/mentions, ...), and
    `raw_markdown` optionally the chunk's Markdown, whose inline code spans become entities.
    At most MAX_ENTITIES entities and MAX_TRIPLES triples, most specific first; the output
    order is deterministic (topic first, then by first appearance)."""
    ex = _Extraction(text, breadcrumb, language, raw_markdown)
    ex.read_signatures()
    ex.mask_boilerplate()
    ex.collect_mentions()
    _DefinitionReader(ex.text, ex.topic, ex.R, ex.mentions, ex.triples, ex.extra).read(
        ex.sents, ex.body_start, ex.sig_spans)
    chosen, contained = _resolve_overlaps(ex.mentions)
    ex.seed_topic_entities()
    ex.add_entities(chosen, contained)
    ex.pair_relations(chosen)
    return ex.result()


def _split_heading_line(text: str, breadcrumb: str) -> tuple[str, int]:
    """(text, offset where the body starts): the first line is the heading title when it matches
    the breadcrumb's last heading, and is then replaced by its clean form."""
    lines = text.split("\n", 1)
    body_start = 0
    crumbs = [c.strip() for c in (breadcrumb or "").split(" / ") if c.strip()]
    if crumbs and _clean_heading(lines[0]) == _clean_heading(crumbs[-1]):
        head = _clean_heading(lines[0])          # "getTotalBytes18+" -> "getTotalBytes"
        text = head + ("\n" + lines[1] if len(lines) > 1 else "")
        body_start = len(head) + 1 if len(lines) > 1 else len(text)
    return text, body_start


def _resolve_overlaps(mentions: list[_Mention]) -> tuple[list[_Mention], list[_Mention]]:
    """Valid mentions without overlaps (longer first, then higher score), in text order, and the
    technical tokens contained in a chosen one: those stay entities, just not spans."""
    mentions = [m for m in mentions if m.surface and _valid(m.surface)]
    mentions.sort(key=lambda m: (-(m.end - m.start), -m.score, m.start))
    occupied: list[tuple[int, int]] = []
    chosen: list[_Mention] = []
    contained: list[_Mention] = []
    for m in mentions:
        overlap = next(((a, b) for a, b in occupied if m.start < b and a < m.end), None)
        if overlap is None:
            chosen.append(m)
            occupied.append((m.start, m.end))
        elif m.kind in ("camel", "decorator", "api", "code", "defined", "signature", "ident", "file") \
                and overlap[0] <= m.start and m.end <= overlap[1]:
            contained.append(m)
    chosen.sort(key=lambda m: (m.start, m.end))
    return chosen, contained


class _Extraction:
    """One chunk's extraction in progress: the working text, its topic and sentences, and what
    the phases of `extract` have found so far.

    `triples` holds (priority, position, head, rel, tail): the output order sorts on both;
    `extra` holds (surface, kind, position) for names not tied to a span of the text."""

    def __init__(self, text: str, breadcrumb: str, language: str, raw_markdown: str | None):
        self.breadcrumb, self.raw_markdown = breadcrumb, raw_markdown
        self.zh = (language or "").lower().startswith("zh")
        self.R = _REL_ZH if self.zh else _REL_EN
        text = _nfkc(text or "").replace("\\@", "@").replace("\u200b", "")
        self.topic, self.topic_heading, self.topic_alias, self.parent = _topic(breadcrumb, text)
        self.topic_key = normalize_entity(self.topic)
        self.text, self.body_start = _split_heading_line(text, breadcrumb)
        self.sents = _sentences(self.text)
        self.sent_bounds = [s for s, _ in self.sents]
        self.masked = self.text            # the text with signature lines and boilerplate blanked
        self.sig_spans: list[tuple[int, int]] = []
        self.mentions: list[_Mention] = []
        self.triples: list[tuple[int, int, str, str, str]] = []
        self.extra: list[tuple[str, str, int]] = []
        self.ents: dict[str, _Entity] = {}
        self.structural: set[str] = set()  # topic alias / parent: no "topic mentions" triple

    def sent_of(self, pos: int) -> int:
        return min(max(0, bisect.bisect_right(self.sent_bounds, pos) - 1), max(0, len(self.sents) - 1))

    # ---- mentions
    def read_signatures(self) -> None:
        """API signature lines ("name(args): ReturnType", "type X = Y"): read, then masked."""
        text, R = self.text, self.R
        for m in _SIG_LINE.finditer(text):
            g = "name" if m.group("name") else "tname"
            if m.start(g) < self.body_start or _CJK.search(m.group(0)):
                continue
            name = m.group(g)
            self.sig_spans.append((m.start(), m.end()))
            self.masked = self.masked[:m.start()] + " " * (m.end() - m.start()) + self.masked[m.end():]
            self.mentions.append(_Mention(m.start(g), m.end(g), name, "signature"))
            args = m.group("args") or ""
            for t in re.finditer(r"(?<![\w.'\"])[A-Z][A-Za-z0-9_]+(?:\.[A-Z][A-Za-z0-9_]*)*(?:<[^<>()]*>)?", args):
                tpos = m.start("args") + t.start()
                self.mentions.append(_Mention(tpos, tpos + len(t.group(0)), t.group(0), "camel"))
                self.triples.append((1, tpos, name, R["param"], t.group(0)))
            rg = "ret" if g == "name" else "tval"
            ret = (m.group(rg) or "").strip().rstrip(";").strip()
            if ret and ret.lower() not in ("void", "undefined", "any", "null", "this") and _valid(ret):
                rpos = text.find(ret, m.start(rg))
                if rpos < 0:
                    continue
                self.mentions.append(_Mention(rpos, rpos + len(ret), ret, "camel"))
                self.triples.append((1, rpos, name, R["returns"], ret))

    def mask_boilerplate(self) -> None:
        for bp in _BOILERPLATE.finditer(self.masked):
            self.masked = self.masked[:bp.start()] + " " * (bp.end() - bp.start()) + self.masked[bp.end():]
            self.sig_spans.append((bp.start(), bp.end()))

    def collect_mentions(self) -> None:
        """The candidate finders over the masked text, then the raw Markdown's code and bold spans."""
        text, masked = self.text, self.masked
        sent_starts = {s + (len(text[s:e]) - len(text[s:e].lstrip())) for s, e in self.sents}
        latin = _latin_tokens(masked, self.body_start, sent_starts, self.zh)
        self.mentions += latin
        self.mentions += _commands(masked)
        self.mentions += [_Mention(m.start(), m.end(), "$$", "ident")
                          for m in re.finditer(r"(?<![$A-Za-z0-9_])\$\$(?![$A-Za-z0-9_])", masked)]
        self.mentions += _quoted(masked)
        self.mentions += _cjk_phrases(masked, latin)
        if not self.raw_markdown:
            return
        for span, pos in _code_spans(self.raw_markdown, text):
            if pos >= 0:
                for m in re.finditer(re.escape(span), text):
                    self.mentions.append(_Mention(m.start(), m.end(), span, "code"))
            else:
                self.extra.append((span, "code", len(text)))
        for b in _bold_spans(self.raw_markdown):
            pos = text.find(b)
            if pos >= 0:
                self.mentions.append(_Mention(pos, pos + len(b), b, "bold"))

    # ---- entities
    def add_entity(self, surface: str, kind: str, pos: int, score: int | None = None) -> str | None:
        text, sents, ents = self.text, self.sents, self.ents
        name = _display(surface)
        key = normalize_entity(name)
        if not _valid(name) or (key != self.topic_key and (key in _GENERIC_HEADINGS or key in _SKIP_LABELS
                                                           or key in _FIELD_LABELS)):
            return None
        sc = _SCORE.get(kind, 10) if score is None else score
        if key in ents:
            ent = ents[key]
            ent.count += 1
            ent.score = max(ent.score, sc)
            if pos < ent.pos:
                ent.pos = pos
                si = self.sent_of(pos)
                ent.desc = _trim_sentence(text, *sents[si], pos) if sents else name
            return ent.name
        if sents and pos < len(text):
            desc = _trim_sentence(text, *sents[self.sent_of(pos)], pos)
        else:
            desc = ""
        ents[key] = _Entity(name, key, pos, sc, 1, desc or name)
        return name

    def seed_topic_entities(self) -> None:
        """The topic (always kept), then its alias and parent heading with their structural triples."""
        text, topic, topic_key = self.text, self.topic, self.topic_key
        if topic:
            body = text[self.body_start:].strip()
            first = next(((s, e) for s, e in self.sents if s >= self.body_start), None)
            tdesc = _trim_sentence(text, *first, first[0]) if first and body else (self.breadcrumb or topic)
            if self.topic_heading and normalize_entity(self.topic_heading) != topic_key and not body:
                tdesc = self.topic_heading
            self.ents[topic_key] = _Entity(_display(topic), topic_key, -1, 1000, 1, tdesc[:MAX_DESC_CHARS])
        for extra_name, rel_key in ((self.topic_alias, "alias"), (self.parent, "part_of")):
            if topic and extra_name and _valid(extra_name, max_words=12, max_chars=MAX_TOPIC_CHARS):
                k = normalize_entity(extra_name)
                if k in self.ents or k == topic_key:
                    continue
                desc = self.topic_heading if rel_key == "alias" else self.breadcrumb or extra_name
                self.ents[k] = _Entity(_display(extra_name), k, -1, 75, 1, desc[:MAX_DESC_CHARS])
                self.structural.add(k)
                self.triples.append((2, -1, topic, self.R[rel_key], extra_name))

    def add_entities(self, chosen: list[_Mention], contained: list[_Mention]) -> None:
        for m in chosen:
            self.add_entity(m.surface, m.kind, m.start)
        for m in contained:
            self.add_entity(m.surface, m.kind, m.start, _SCORE.get(m.kind, 10) - 5)
        for surface, kind, pos in self.extra:
            self.add_entity(surface, kind, pos)
            ent = self.ents.get(normalize_entity(surface))
            if ent and ent.desc == ent.name and self.raw_markdown:
                ent.desc = (self.breadcrumb or self.topic)[:MAX_DESC_CHARS]

    # ---- triples and output
    def pair_relations(self, chosen: list[_Mention]) -> None:
        """Adjacent chosen mentions in one sentence: the short phrase between them as the relation."""
        for a, b in zip(chosen, chosen[1:]):
            if self.sents and self.sent_of(a.start) != self.sent_of(b.start):
                continue
            if a.start < self.body_start:
                continue
            gap = self.text[a.end:b.start]
            rel = _connector(gap, self.text[b.end:b.end + 1])
            if rel is None:
                continue
            if rel == "__alias__":
                self.triples.append((2, a.start, a.surface, self.R["alias"], b.surface))
            else:
                self.triples.append((3, a.start, a.surface, rel, b.surface))

    def result(self) -> tuple[list[tuple[str, str]], list[tuple[str, str, str]]]:
        """Capped entities (topic first, then by first appearance) and capped, deduplicated triples."""
        ents, topic_key = self.ents, self.topic_key
        # cap entities (topic always kept), most specific first
        ranked = sorted((e for k, e in ents.items() if k != topic_key),
                        key=lambda e: (-e.score, -e.count, e.pos, e.key))
        kept = ranked[:MAX_ENTITIES - (1 if topic_key in ents else 0)]
        keep_keys = {e.key for e in kept} | ({topic_key} if topic_key in ents else set())
        for e in kept:
            if e.key not in self.structural:
                self.triples.append((4, e.pos, self.topic, self.R["mentions"], e.name))
        ordered = ([ents[topic_key]] if topic_key in ents else []) + sorted(kept, key=lambda e: (e.pos, e.key))
        return [(e.name, e.desc) for e in ordered], self._final_triples(keep_keys)

    def _final_triples(self, keep_keys: set[str]) -> list[tuple[str, str, str]]:
        """Triples between kept entities, by priority then position, deduplicated, at most MAX_TRIPLES."""
        out_triples: list[tuple[str, str, str]] = []
        seen: set[tuple[str, str, str]] = set()
        for _prio, _pos, h, r, t in sorted(self.triples, key=lambda x: (x[0], x[1], normalize_entity(x[2]), x[3], normalize_entity(x[4]))):
            hk, tk = normalize_entity(h), normalize_entity(t)
            r = _WS.sub(" ", r).strip()
            if not r or hk == tk or hk not in keep_keys or tk not in keep_keys:
                continue
            key = (hk, r.casefold(), tk)
            if key in seen:
                continue
            seen.add(key)
            out_triples.append((self.ents[hk].name, r, self.ents[tk].name))
            if len(out_triples) >= MAX_TRIPLES:
                break
        return out_triples


_REL_EN = {"mentions": "mentions", "is_a": "is a", "defined_in": "defined in", "alias": "also known as",
           "returns": "returns", "param": "takes", "part_of": "part of"}
_REL_ZH = {"mentions": "提及", "is_a": "是", "defined_in": "定义于", "alias": "又称", "returns": "返回",
           "param": "参数类型", "part_of": "属于"}

_CONNECT_STOP_EN = {"and", "or", "the", "a", "an", "of", "in", "on", "to", "for", "with", "as", "by", "at",
                    "from", "is", "are", "be", "its", "their", "this", "that", "such", "e.g", "etc", "nor",
                    "which", "it", "also", "all", "both", "either", "not", "no", "than", "then", "into"}
_CONNECT_STOP_ZH = set("的和与及或等在中、以及或者并且也都就了对将把为被由从向到是")


def _connector(gap: str, after: str) -> str | None:
    """The relation phrase between two adjacent mentions, or None if too long / content-free."""
    g = gap.strip()
    if g in ("(", "（") and after in (")", "）"):
        return "__alias__"
    if not g or re.search(r"[,，、;；:：()（）\[\]\"“”|/]", g) or "\n" in gap:
        return None
    cjk = _CJK.findall(g)
    words = re.findall(r"[A-Za-z][\w'-]*", g)
    if cjk:
        if len(re.sub(r"\s", "", g)) > 10 or not all(_is_cjk(c) or c.isspace() for c in g):
            return None
        content = [c for c in cjk if c not in _CONNECT_STOP_ZH]
        if not content:
            return None
        return g.replace(" ", "")
    if not words or len(g.split()) > 6 or re.search(r"[^\w\s'-]", g):
        return None
    if not [w for w in words if w.lower() not in _CONNECT_STOP_EN]:
        return None
    return " ".join(g.split()).lower()
