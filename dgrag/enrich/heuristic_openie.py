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
for two entities adjacent in one sentence, the short phrase between them (≤ 6 words / ≤ 10
CJK characters) as the relation; and the named things of one sentence related to each other
(each with the next COOCCUR_WINDOW ones: the clause between neighbours, else "appears with"),
the topic standing in for an opening pronoun ("It was founded by X").
Output order (and so what survives the per-chunk caps of steps.py): definitions, signatures
and fields, aliases, adjacent phrases, the topic's "mentions", then the co-occurrences.

Pure functions, standard library only, deterministic. This module is the pipeline: named steps
(`STEPS`) run in order over one explicit `ExtractionState`, each reading what the earlier ones
left there and adding its own findings. The candidate finders live in `openie_mentions`, the
definition reader in `openie_definitions`, text and topic helpers in `openie_text`, patterns in
`openie_lexicon` and the word lists in `openie_words/*.txt` (package data).
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Callable, Mapping

from .openie_definitions import read_definitions
from .openie_lexicon import (  # noqa: F401 - normalize_entity and the limits are public here too
    BOILERPLATE, CJK, FIELD_LABELS, GENERIC_HEADINGS, MAX_DESC_CHARS, MAX_ENTITIES, MAX_NAME_CHARS, MAX_TOPIC_CHARS,
    MAX_TRIPLES, SCORE, SIG_LINE, SKIP_LABELS, WS, display_name, nfkc, normalize_entity, read_words,
)
from .openie_mentions import (
    Mention, bold_spans, cjk_mentions, code_spans, command_mentions, latin_mentions, quoted_mentions,
)
from .openie_text import clean_heading, is_cjk, sentence_spans, section_topic, trim_sentence, valid_name

__all__ = ["normalize_entity", "extract", "ExtractionState", "STEPS", "MAX_ENTITIES", "MAX_TRIPLES",
           "MAX_NAME_CHARS"]

Triple = tuple[int, int, str, str, str]      # (priority, position, head, relation, tail): output sorts on both

REL_EN = MappingProxyType({"mentions": "mentions", "is_a": "is a", "defined_in": "defined in",
                           "alias": "also known as", "returns": "returns", "param": "takes", "part_of": "part of",
                           "with": "appears with"})
REL_ZH = MappingProxyType({"mentions": "提及", "is_a": "是", "defined_in": "定义于", "alias": "又称", "returns": "返回",
                           "param": "参数类型", "part_of": "属于",
                           "with": "共现"})
_CONNECT_STOP_EN = frozenset(read_words("connect_stop_en"))
_CONNECT_STOP_ZH = frozenset(read_words("connect_stop_zh"))
# a sentence opening with one of these speaks of the section topic: "It was founded in ...", "该模块…"
_TOPIC_PRONOUNS_EN = frozenset({"it", "its", "he", "his", "she", "her", "they", "their", "this", "these"})
_TOPIC_PRONOUNS_ZH = ("它", "他", "她", "该", "其", "本模块", "此")
# True: the topic "mentions" every named thing, before the co-occurrences. False (only what relates to
# nothing else) lost 1.4-3.6 points of R@5 on MuSiQue offline: a passage's title in its facts is what the
# fact route matches (docs/benchmarks.md, "Offline OpenIE")
TOPIC_STAR = True
COOCCUR_WINDOW = 3      # a named thing relates to the next this many in its sentence


@dataclass
class Entity:
    name: str
    key: str
    pos: int
    score: int
    count: int
    desc: str


@dataclass
class ExtractionState:
    """One chunk's extraction in progress. The first block is set from the input and not changed
    after; the second is what the steps find, each step adding to what the earlier ones left."""
    text: str                      # the working text (heading line cleaned)
    body_start: int                # where the body starts after the heading line
    breadcrumb: str
    raw_markdown: str | None
    zh: bool
    R: Mapping[str, str]           # relation labels in the chunk's language
    topic: str
    topic_heading: str
    topic_alias: str
    parent: str
    topic_key: str
    sents: list[tuple[int, int]]
    sent_bounds: list[int]         # the sentences' starts, for bisect
    masked: str = ""               # the text with signature lines and boilerplate blanked
    sig_spans: list[tuple[int, int]] = field(default_factory=list)
    mentions: list[Mention] = field(default_factory=list)
    triples: list[Triple] = field(default_factory=list)
    extra: list[tuple[str, str, int]] = field(default_factory=list)   # (surface, kind, position): names not in the text
    chosen: list[Mention] = field(default_factory=list)               # mentions without overlaps, in text order
    contained: list[Mention] = field(default_factory=list)            # technical tokens inside a chosen one
    ents: dict[str, Entity] = field(default_factory=dict)
    structural: set[str] = field(default_factory=set)   # topic alias / parent: no "topic mentions" triple
    paired: set[tuple[int, int]] = field(default_factory=set)         # (start, start) of related mention pairs

    def sent_of(self, pos: int) -> int:
        return min(max(0, bisect.bisect_right(self.sent_bounds, pos) - 1), max(0, len(self.sents) - 1))


def new_state(text: str, breadcrumb: str, language: str, raw_markdown: str | None) -> ExtractionState:
    zh = (language or "").lower().startswith("zh")
    text = nfkc(text or "").replace("\\@", "@").replace("\u200b", "")
    topic, heading, alias, parent = section_topic(breadcrumb, text)
    text, body_start = _split_heading_line(text, breadcrumb)
    sents = sentence_spans(text)
    return ExtractionState(text=text, body_start=body_start, breadcrumb=breadcrumb, raw_markdown=raw_markdown,
                           zh=zh, R=REL_ZH if zh else REL_EN, topic=topic, topic_heading=heading, topic_alias=alias,
                           parent=parent, topic_key=normalize_entity(topic), sents=sents,
                           sent_bounds=[s for s, _ in sents], masked=text)


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
    st = new_state(text, breadcrumb, language, raw_markdown)
    for step in STEPS:
        step(st)
    return result(st)


def _split_heading_line(text: str, breadcrumb: str) -> tuple[str, int]:
    """(text, offset where the body starts): the first line is the heading title when it matches
    the breadcrumb's last heading, and is then replaced by its clean form."""
    lines = text.split("\n", 1)
    body_start = 0
    crumbs = [c.strip() for c in (breadcrumb or "").split(" / ") if c.strip()]
    if crumbs and clean_heading(lines[0]) == clean_heading(crumbs[-1]):
        head = clean_heading(lines[0])          # "getTotalBytes18+" -> "getTotalBytes"
        text = head + ("\n" + lines[1] if len(lines) > 1 else "")
        body_start = len(head) + 1 if len(lines) > 1 else len(text)
    return text, body_start


# --------------------------------------------------------------------------------------
# the steps, in order
# --------------------------------------------------------------------------------------
def read_signatures(st: ExtractionState) -> None:
    """API signature lines ("name(args): ReturnType", "type X = Y"): read, then masked."""
    text, R = st.text, st.R
    for m in SIG_LINE.finditer(text):
        g = "name" if m.group("name") else "tname"
        if m.start(g) < st.body_start or CJK.search(m.group(0)):
            continue
        name = m.group(g)
        st.sig_spans.append((m.start(), m.end()))
        st.masked = st.masked[:m.start()] + " " * (m.end() - m.start()) + st.masked[m.end():]
        st.mentions.append(Mention(m.start(g), m.end(g), name, "signature"))
        args = m.group("args") or ""
        for t in re.finditer(r"(?<![\w.'\"])[A-Z][A-Za-z0-9_]+(?:\.[A-Z][A-Za-z0-9_]*)*(?:<[^<>()]*>)?", args):
            tpos = m.start("args") + t.start()
            st.mentions.append(Mention(tpos, tpos + len(t.group(0)), t.group(0), "camel"))
            st.triples.append((1, tpos, name, R["param"], t.group(0)))
        rg = "ret" if g == "name" else "tval"
        ret = (m.group(rg) or "").strip().rstrip(";").strip()
        if ret and ret.lower() not in ("void", "undefined", "any", "null", "this") and valid_name(ret):
            rpos = text.find(ret, m.start(rg))
            if rpos < 0:
                continue
            st.mentions.append(Mention(rpos, rpos + len(ret), ret, "camel"))
            st.triples.append((1, rpos, name, R["returns"], ret))


def mask_boilerplate(st: ExtractionState) -> None:
    for bp in BOILERPLATE.finditer(st.masked):
        st.masked = st.masked[:bp.start()] + " " * (bp.end() - bp.start()) + st.masked[bp.end():]
        st.sig_spans.append((bp.start(), bp.end()))


def collect_mentions(st: ExtractionState) -> None:
    """The candidate finders over the masked text, then the raw Markdown's code and bold spans."""
    text, masked = st.text, st.masked
    sent_starts = {s + (len(text[s:e]) - len(text[s:e].lstrip())) for s, e in st.sents}
    latin = latin_mentions(masked, st.body_start, sent_starts, st.zh)
    st.mentions += latin
    st.mentions += command_mentions(masked)
    st.mentions += [Mention(m.start(), m.end(), "$$", "ident")
                    for m in re.finditer(r"(?<![$A-Za-z0-9_])\$\$(?![$A-Za-z0-9_])", masked)]
    st.mentions += quoted_mentions(masked)
    st.mentions += cjk_mentions(masked, latin)
    st.mentions += _topic_spans(st)
    if not st.raw_markdown:
        return
    for span, pos in code_spans(st.raw_markdown, text):
        if pos >= 0:
            for m in re.finditer(re.escape(span), text):
                st.mentions.append(Mention(m.start(), m.end(), span, "code"))
        else:
            st.extra.append((span, "code", len(text)))
    for b in bold_spans(st.raw_markdown):
        pos = text.find(b)
        if pos >= 0:
            st.mentions.append(Mention(pos, pos + len(b), b, "bold"))


def _topic_spans(st: ExtractionState) -> list[Mention]:
    """The section topic where the body names it ("The Journal of Mathematical Physics is ..."): one
    span, so the words inside it do not become entities of their own."""
    if len(st.topic_key) < 2 or not valid_name(st.topic):
        return []
    left = r"(?<![\w@$.])" if re.match(r"\w", st.topic) and not is_cjk(st.topic[:1]) else ""
    right = r"(?![\w])" if re.search(r"\w$", st.topic) and not is_cjk(st.topic[-1:]) else ""
    pat = re.compile(left + re.escape(st.topic) + right, re.I)
    return [Mention(m.start(), m.end(), m.group(0), "topic") for m in pat.finditer(st.masked, st.body_start)]


def read_definitions_step(st: ExtractionState) -> None:
    """Definitions, labelled fields and API first sentences (openie_definitions)."""
    found = read_definitions(st.text, st.topic, st.R, st.mentions, st.sents, st.body_start, st.sig_spans)
    st.mentions += found.mentions
    st.triples += found.triples
    st.extra += found.extra


def resolve_overlaps(st: ExtractionState) -> None:
    """Valid mentions without overlaps (longer first, then higher score), in text order, and the
    technical tokens contained in a chosen one: those stay entities, just not spans."""
    mentions = [m for m in st.mentions if m.surface and valid_name(m.surface)]
    mentions.sort(key=lambda m: (-(m.end - m.start), -m.score, m.start))
    occupied: list[tuple[int, int]] = []
    chosen: list[Mention] = []
    contained: list[Mention] = []
    for m in mentions:
        overlap = next(((a, b) for a, b in occupied if m.start < b and a < m.end), None)
        if overlap is None:
            chosen.append(m)
            occupied.append((m.start, m.end))
        elif m.kind in ("camel", "decorator", "api", "code", "defined", "signature", "ident", "file") \
                and overlap[0] <= m.start and m.end <= overlap[1]:
            contained.append(m)
    chosen.sort(key=lambda m: (m.start, m.end))
    st.chosen, st.contained = chosen, contained


def add_entity(st: ExtractionState, surface: str, kind: str, pos: int, score: int | None = None) -> str | None:
    """Add (or count again) the entity a surface names; its description is the sentence of its
    first appearance. None when the name is invalid or a generic label."""
    text, sents, ents = st.text, st.sents, st.ents
    name = display_name(surface)
    key = normalize_entity(name)
    if not valid_name(name) or (key != st.topic_key and (key in GENERIC_HEADINGS or key in SKIP_LABELS
                                                         or key in FIELD_LABELS)):
        return None
    sc = SCORE.get(kind, 10) if score is None else score
    if key in ents:
        ent = ents[key]
        ent.count += 1
        ent.score = max(ent.score, sc)
        if pos < ent.pos:
            ent.pos = pos
            si = st.sent_of(pos)
            ent.desc = trim_sentence(text, *sents[si], pos) if sents else name
        return ent.name
    if sents and pos < len(text):
        desc = trim_sentence(text, *sents[st.sent_of(pos)], pos)
    else:
        desc = ""
    ents[key] = Entity(name, key, pos, sc, 1, desc or name)
    return name


def seed_topic_entities(st: ExtractionState) -> None:
    """The topic (always kept), then its alias and parent heading with their structural triples."""
    text, topic, topic_key = st.text, st.topic, st.topic_key
    if topic:
        body = text[st.body_start:].strip()
        first = next(((s, e) for s, e in st.sents if s >= st.body_start), None)
        tdesc = trim_sentence(text, *first, first[0]) if first and body else (st.breadcrumb or topic)
        if st.topic_heading and normalize_entity(st.topic_heading) != topic_key and not body:
            tdesc = st.topic_heading
        st.ents[topic_key] = Entity(display_name(topic), topic_key, -1, 1000, 1, tdesc[:MAX_DESC_CHARS])
    for extra_name, rel_key in ((st.topic_alias, "alias"), (st.parent, "part_of")):
        if topic and extra_name and valid_name(extra_name, max_words=12, max_chars=MAX_TOPIC_CHARS):
            k = normalize_entity(extra_name)
            if k in st.ents or k == topic_key:
                continue
            desc = st.topic_heading if rel_key == "alias" else st.breadcrumb or extra_name
            st.ents[k] = Entity(display_name(extra_name), k, -1, 75, 1, desc[:MAX_DESC_CHARS])
            st.structural.add(k)
            st.triples.append((2, -1, topic, st.R[rel_key], extra_name))


def add_entities(st: ExtractionState) -> None:
    """Entities of the chosen mentions, the contained tokens (a little lower) and the extra names."""
    for m in st.chosen:
        add_entity(st, m.surface, m.kind, m.start)
    for m in st.contained:
        add_entity(st, m.surface, m.kind, m.start, SCORE.get(m.kind, 10) - 5)
    for surface, kind, pos in st.extra:
        add_entity(st, surface, kind, pos)
        ent = st.ents.get(normalize_entity(surface))
        if ent and ent.desc == ent.name and st.raw_markdown:
            ent.desc = (st.breadcrumb or st.topic)[:MAX_DESC_CHARS]


def pair_relations(st: ExtractionState) -> None:
    """Adjacent chosen mentions in one sentence: the short phrase between them as the relation."""
    chosen = st.chosen
    for a, b in zip(chosen, chosen[1:]):
        if st.sents and st.sent_of(a.start) != st.sent_of(b.start):
            continue
        if a.start < st.body_start:
            continue
        gap = st.text[a.end:b.start]
        rel = connector(gap, st.text[b.end:b.end + 1])
        if rel is None:
            continue
        st.paired.add((a.start, b.start))
        if rel == "__alias__":
            st.triples.append((2, a.start, a.surface, st.R["alias"], b.surface))
        else:
            st.triples.append((3, a.start, a.surface, rel, b.surface))


def cooccurrence_relations(st: ExtractionState) -> None:
    """Named things of one sentence related to each other, not only to the page topic: each
    with the next COOCCUR_WINDOW ones; between neighbours the words between them (their last
    short clause) are the relation, otherwise "appears with". A sentence that opens with a pronoun ("It was founded by X") relates
    the topic to its first named things."""
    by_sent: dict[int, list[Mention]] = {}
    for m in st.chosen:
        if m.start >= st.body_start:
            by_sent.setdefault(st.sent_of(m.start) if st.sents else 0, []).append(m)
    for si, ms in sorted(by_sent.items()):
        lead = _topic_pronoun(st, si)
        if lead is not None and all(normalize_entity(m.surface) != st.topic_key for m in ms):
            ms = [lead] + ms
        for i, a in enumerate(ms):
            for j, b in enumerate(ms[i + 1:i + 1 + COOCCUR_WINDOW]):
                if (a.start, b.start) in st.paired or normalize_entity(a.surface) == normalize_entity(b.surface):
                    continue
                st.paired.add((a.start, b.start))
                # the words between two neighbours say how they relate; past a third thing they may not
                rel = (clause_relation(st.text[a.end:b.start]) if j == 0 else None) or st.R["with"]
                # neighbours first; after the topic's "mentions" when those come first (TOPIC_STAR)
                st.triples.append(((5 if TOPIC_STAR else 4) + j, a.start, a.surface, rel, b.surface))


def _topic_pronoun(st: ExtractionState, si: int) -> Mention | None:
    """The topic as a mention standing at a sentence's opening pronoun, or None."""
    if not st.topic or not st.sents:
        return None
    s, e = st.sents[si]
    sent = st.text[s:e]
    lead = len(sent) - len(sent.lstrip())
    body = sent.lstrip()
    if st.zh:
        word = next((w for w in _TOPIC_PRONOUNS_ZH if body.startswith(w)), None)
    else:
        first = re.match(r"[A-Za-z]+", body)
        word = first.group(0) if first and first.group(0).lower() in _TOPIC_PRONOUNS_EN else None
    if word is None:
        return None
    return Mention(s + lead, s + lead + len(word), st.topic, "topic")


def clause_relation(gap: str) -> str | None:
    """The words between two named things as a relation: the last clause of the gap (after a
    comma or bracket; its last 5 words when longer) when it has a content word (at most 10 CJK
    characters)."""
    part = re.split(r"[,，、;；:：()（）\[\]\"“”|/\n]", gap)[-1].strip()
    if not part:
        return None
    words = part.split()
    if len(words) > 6 and not CJK.search(part):
        part = " ".join(words[-5:])     # the words next to the second thing: "... published monthly by the"
    return connector(part, "")


STEPS: tuple[Callable[[ExtractionState], None], ...] = (
    read_signatures, mask_boilerplate, collect_mentions, read_definitions_step, resolve_overlaps,
    seed_topic_entities, add_entities, pair_relations, cooccurrence_relations,
)


# --------------------------------------------------------------------------------------
# output
# --------------------------------------------------------------------------------------
def result(st: ExtractionState) -> tuple[list[tuple[str, str]], list[tuple[str, str, str]]]:
    """Capped entities (topic first, then by first appearance) and capped, deduplicated triples."""
    ents, topic_key = st.ents, st.topic_key
    # cap entities (topic always kept), most specific first
    ranked = sorted((e for k, e in ents.items() if k != topic_key),
                    key=lambda e: (-e.score, -e.count, e.pos, e.key))
    kept = ranked[:MAX_ENTITIES - (1 if topic_key in ents else 0)]
    keep_keys = {e.key for e in kept} | ({topic_key} if topic_key in ents else set())
    related = {normalize_entity(x) for t in st.triples for x in (t[2], t[4])}
    star = [(4 if TOPIC_STAR else 4 + COOCCUR_WINDOW, e.pos, st.topic, st.R["mentions"], e.name) for e in kept
            if e.key not in st.structural and (TOPIC_STAR or e.key not in related)]
    ordered = ([ents[topic_key]] if topic_key in ents else []) + sorted(kept, key=lambda e: (e.pos, e.key))
    return [(e.name, e.desc) for e in ordered], _final_triples(st.triples + star, ents, keep_keys)


def _final_triples(triples: list[Triple], ents: dict[str, Entity], keep_keys: set[str]
                   ) -> list[tuple[str, str, str]]:
    """Triples between kept entities, by priority then position, deduplicated, at most MAX_TRIPLES."""
    out_triples: list[tuple[str, str, str]] = []
    seen: set[tuple[str, str, str]] = set()
    for _prio, _pos, h, r, t in sorted(triples, key=lambda x: (x[0], x[1], normalize_entity(x[2]), x[3],
                                                               normalize_entity(x[4]))):
        hk, tk = normalize_entity(h), normalize_entity(t)
        r = WS.sub(" ", r).strip()
        if not r or hk == tk or hk not in keep_keys or tk not in keep_keys:
            continue
        key = (hk, r.casefold(), tk)
        if key in seen:
            continue
        seen.add(key)
        out_triples.append((ents[hk].name, r, ents[tk].name))
        if len(out_triples) >= MAX_TRIPLES:
            break
    return out_triples


def connector(gap: str, after: str) -> str | None:
    """The relation phrase between two adjacent mentions, "__alias__" for "X (Y)", or None if
    too long / content-free."""
    g = gap.strip()
    if g in ("(", "（") and after in (")", "）"):
        return "__alias__"
    if not g or re.search(r"[,，、;；:：()（）\[\]\"“”|/]", g) or "\n" in gap:
        return None
    cjk = CJK.findall(g)
    words = re.findall(r"[A-Za-z][\w'-]*", g)
    if cjk:
        if len(re.sub(r"\s", "", g)) > 10 or not all(is_cjk(c) or c.isspace() for c in g):
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
