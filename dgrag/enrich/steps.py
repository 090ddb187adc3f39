"""The enrichment steps: what each one reads, asks the LLM, and writes back.

A step is three functions: `inputs(store, node)` (the text it works on and its hash),
`ask(llm, node, ...)` (runs in a worker thread: LLM calls only, no SQL) and
`apply(store, node, result)` (main thread, inside a transaction). The offline variant of
each step produces the same kind of result with no LLM.
"""
from __future__ import annotations

import hashlib
import json
import mimetypes
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from ..errors import LLMError

from ..ingest import context, extractive
from . import heuristic_openie
from .openie_choice import PackChoice, choose_packs
from .openie_packs import Lexicon, lexicon

OFFLINE_ENTITIES_PER_CHUNK = 8
OFFLINE_TRIPLES_PER_CHUNK = 16   # 10 before the co-occurrence relations; room for both them and the topic's links


@dataclass
class Step:
    name: str
    kinds: tuple[str, ...]
    prompt: str
    inputs: Callable[[dict], str]
    ask: Callable[..., Any]
    offline: Callable[[dict], Any]
    apply: Callable[..., None]
    # the offline step as the whole corpus shapes it (document-frequency stop-entities):
    # (every node of the step's kinds, settings, knowledge) -> node -> result; None: `offline` as is
    offline_for_corpus: Callable[[list[dict], Any, Any], Callable[[dict], Any]] | None = None
    # what the offline step knows of the corpus, chosen before the pending nodes are listed:
    # (store, every node of the step's kinds, settings) -> (knowledge, whether it changed since the
    # last run: then every node done offline is done again); None: nothing to choose
    offline_knowledge: Callable[[Any, list[dict], Any], tuple[Any, bool]] | None = None


def render(name: str, language: str, **fields) -> str:
    from ..prompts import render as _render  # prompts are data files, read on first use

    return _render(name, language, **fields)


def _lang(node: dict) -> str:
    return "zh" if node.get("language") == "zh" else "en"


def input_hash(step: str, text: str) -> str:
    return hashlib.sha256(f"{step}\x1f{text}".encode("utf-8", "surrogatepass")).hexdigest()[:32]


# ---- summaries ---------------------------------------------------------------------------
def summary_input(node: dict) -> str:
    if node["type"] == "chunk":
        return (node.get("prose") or "")[:4000]
    if node["type"] in ("code", "table"):
        return f"{context.of(node)[:1500]}\n\n{node['text'][:3000]}"
    return (node["meta"].get("intro") or node["text"])[:4000]  # not the summary: it is the output


def ask_summary(llm, node: dict, **_: Any) -> str:
    prompt = render("summary", _lang(node), kind=node["type"], breadcrumb=node["breadcrumb"],
                    text=summary_input(node))
    text = llm.complete([{"role": "user", "content": prompt}], max_tokens=300).strip()
    if not text:
        raise LLMError("empty summary")
    return text


def offline_summary(node: dict) -> str:
    return node.get("summary") or extractive.summarize_chunk(node)


def apply_summary(store, node: dict, result: str, source: str) -> None:
    if source == "offline" and node.get("summary_source") == "extractive":
        return  # already the extractive summary: nothing to change, no re-embedding
    store.nodes.set_summary(node["rowid"], result, "llm" if source == "llm" else "extractive")


# ---- captions ----------------------------------------------------------------------------
def caption_input(node: dict) -> str:
    return f"{node['meta'].get('sha', '')}\n{node['meta'].get('alt', '')}\n{node['breadcrumb']}"


def ask_caption(llm, node: dict, image: tuple[bytes, str] | None = None, **_: Any) -> str:
    from ..backends.llm import image_part

    meta = node["meta"]
    prompt = render("caption", _lang(node), breadcrumb=node["breadcrumb"], alt=meta.get("alt", ""),
                    context=meta.get("context", "")[:1500])
    content: list[dict] = [{"type": "text", "text": prompt}]
    if image is not None:
        fmt = (image[1] or "png").lower()  # a compact snapshot's PNGs are WebP (store/images.py)
        mime = "image/webp" if fmt == "webp" else mimetypes.types_map.get("." + fmt, "image/png")
        content.append(image_part(image[0], mime))
    text = llm.complete([{"role": "user", "content": content}], max_tokens=300, model=llm.vision_model).strip()
    if not text:
        raise LLMError("empty caption")
    return text


def offline_caption(node: dict) -> str:
    meta = node["meta"]
    return extractive.caption_image(meta.get("alt", ""), meta.get("src", ""), node["breadcrumb"],
                                    meta.get("context", ""))


# ---- OpenIE ------------------------------------------------------------------------------
def openie_input(node: dict) -> str:
    return (node.get("prose") or "")[:6000]


def ask_openie(llm, node: dict, **_: Any) -> dict:
    prompt = render("openie", _lang(node), breadcrumb=node["breadcrumb"], text=openie_input(node))
    data = llm.complete_json([{"role": "user", "content": prompt}])
    return validate_openie(data)


def validate_openie(data: Any) -> dict:
    """Keep well-formed entities and triples; a reply with neither shape is an error."""
    if not isinstance(data, dict) or not isinstance(data.get("entities", []), list) \
            or not isinstance(data.get("triples", []), list):
        raise LLMError(f"OpenIE reply is not {{entities, triples}}: {json.dumps(data)[:200]}")
    ents = []
    for e in data.get("entities", []):
        if isinstance(e, str):
            e = [e, ""]
        if isinstance(e, (list, tuple)) and e and isinstance(e[0], str) and e[0].strip():
            ents.append((e[0].strip(), str(e[1]).strip() if len(e) > 1 else ""))
    triples = [tuple(str(x).strip() for x in t) for t in data.get("triples", [])
               if isinstance(t, (list, tuple)) and len(t) == 3 and all(str(x).strip() for x in t)]
    return {"entities": ents, "triples": triples}


def offline_openie(node: dict, stop: frozenset[str] = frozenset(), lex: Lexicon | None = None) -> dict:
    """The heuristic's entities and triples, less the stop-entities, capped per chunk."""
    ents, triples = heuristic_openie.extract(openie_input(node), node["breadcrumb"], _lang(node), node["text"], lex)
    return _capped(ents, triples, stop)


def _capped(ents, triples, stop: frozenset[str]) -> dict:
    # stop-entities go before the caps, so they take no entity's or relation's place
    norm = heuristic_openie.normalize_entity
    ents = [e for e in ents if norm(e[0]) not in stop]
    triples = [t for t in triples if norm(t[0]) not in stop and norm(t[2]) not in stop]
    return {"entities": ents[:OFFLINE_ENTITIES_PER_CHUNK], "triples": triples[:OFFLINE_TRIPLES_PER_CHUNK]}


def stop_entities(doc_entities: Iterable[tuple[str, Iterable[str]]], share: float, min_docs: int,
                  titles: Iterable[str] = ()) -> frozenset[str]:
    """Normalised names found in at least max(min_docs, share x documents) documents.

    `doc_entities` is (document, entity names) per chunk; a document is a page (a file), so a
    page's own topic, repeated in each of its sections, counts once. Such names ("United States",
    "ArkUI-X", months) join unrelated pages; as HippoRAG's IDF would, they are left out of the
    graph. share <= 0 turns the rule off. A page's own title is never one: a name with a page
    of its own ("France", "router") is where the links between pages lead."""
    docs: dict[str, set[str]] = {}
    for doc, names in doc_entities:
        docs.setdefault(doc, set()).update(heuristic_openie.normalize_entity(n) for n in names)
    if share <= 0 or not docs:
        return frozenset()
    df = Counter(k for keys in docs.values() for k in keys)
    floor = max(min_docs, share * len(docs))
    keep = {heuristic_openie.normalize_entity(t) for t in titles}
    return frozenset(k for k, n in df.items() if n >= floor and k not in keep)


# The entity names each chunk's extraction gave, by a digest of what it read. The first start's
# build runs the step a slice at a time (11 for the demo), each learning the stop-entities from
# the whole corpus: extracting every chunk again each time took 69 s of the demo's build, where
# the step alone takes 9.5 s. A pure function's memo, bounded: past the bound it starts over.
_NAMES_SEEN: dict[bytes, tuple[str, ...]] = {}
NAMES_SEEN_MAX = 500_000


def _digest(*parts: str) -> bytes:
    h = hashlib.blake2b(digest_size=16)
    for part in parts:
        h.update(part.encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
    return h.digest()


PACKS_META = "openie_packs"   # the meta key of the packs the offline OpenIE used (openie_choice.PackChoice)


def corpus_pack_choice(nodes: list[dict], settings, generator: str = "") -> PackChoice:
    """The packs for these chunks: from their pages' Markdown, the site generator, or the setting."""
    return choose_packs(((n.get("source_path") or str(n["rowid"]), n["text"] or "") for n in nodes),
                        generator, settings.openie_packs, (n.get("language") or "" for n in nodes))


def openie_knowledge(store, nodes: list[dict], settings) -> tuple[Lexicon, bool]:
    """Choose the packs (recorded in the index file); changed: another choice was recorded before."""
    site = json.loads(store.meta.get("site") or "{}")
    choice = corpus_pack_choice(nodes, settings, site.get("generator", "") if isinstance(site, dict) else "")
    before = json.loads(store.meta.get(PACKS_META) or "{}")
    with store.transaction():
        store.meta.set(PACKS_META, json.dumps(choice.as_dict(), ensure_ascii=False))
    lex = lexicon(choice.packs, settings.openie_topic_star)
    return lex, bool(before) and before.get("packs") != list(choice.packs)


def offline_openie_for_corpus(nodes: list[dict], settings, lex: Lexicon | None = None) -> Callable[[dict], dict]:
    """Extract every chunk (once per process: a chunk whose text is unchanged reuses its names),
    learn the stop-entities from the corpus, then answer per node. `lex`: the packs; None: chosen
    here from the nodes (without the site generator) or as the setting forces."""
    if lex is None:
        lex = lexicon(corpus_pack_choice(nodes, settings).packs, settings.openie_topic_star)
    raw, names = {}, {}
    for n in nodes:
        text = openie_input(n)
        if len(text.strip()) < 20:
            continue
        key = _digest(text, n["breadcrumb"], _lang(n), n["text"], lex.key)
        seen = _NAMES_SEEN.get(key)
        if seen is None:
            raw[n["rowid"]] = got = heuristic_openie.extract(text, n["breadcrumb"], _lang(n), n["text"], lex)
            if len(_NAMES_SEEN) >= NAMES_SEEN_MAX:
                _NAMES_SEEN.clear()
            seen = _NAMES_SEEN[key] = tuple(e for e, _ in got[0])
        names[n["rowid"]] = seen
    stop = stop_entities(((n.get("source_path") or str(n["rowid"]), names[n["rowid"]])
                          for n in nodes if n["rowid"] in names),
                         settings.openie_stop_entity_share, settings.openie_stop_entity_min_docs,
                         {n["breadcrumb"].split(" / ")[0] for n in nodes if settings.openie_keep_titles})

    def one(node: dict) -> dict:
        got = raw.get(node["rowid"])
        return offline_openie(node, stop, lex) if got is None else _capped(*got, stop)
    return one


def apply_openie(store, node: dict, result: dict, source: str) -> None:
    """Replace what this chunk contributed to the semantic layer."""
    write_semantics(store, node["rowid"], result["entities"], result["triples"], _lang(node), source)


def write_semantics(store, chunk: int, entities, triples, language: str, source: str) -> None:
    store.semantic.clear_chunk(chunk)
    described: dict[str, tuple[str, str]] = {}
    for name, desc in entities:
        norm = heuristic_openie.normalize_entity(name)
        if norm and norm not in described:
            described[norm] = (name, desc)
    for h, _, t in triples:
        for name in (h, t):
            norm = heuristic_openie.normalize_entity(name)
            if norm and norm not in described:
                described[norm] = (name, "")
    rowid_of = {}
    for norm, (name, desc) in described.items():
        rowid_of[norm] = store.semantic.upsert_entity(norm, name, desc, language)
        store.semantic.add_chunk_entity(chunk, rowid_of[norm], source)
    for h, r, t in triples:
        hn, tn = heuristic_openie.normalize_entity(h), heuristic_openie.normalize_entity(t)
        if hn in rowid_of and tn in rowid_of and r.strip():
            store.semantic.add_fact(rowid_of[hn], r.strip(), rowid_of[tn], f"({h}, {r}, {t})", chunk, source)


STEPS = {
    "summaries": Step("summaries", ("file", "chunk", "code", "table"), "summary", summary_input,
                      ask_summary, offline_summary, apply_summary),
    "captions": Step("captions", ("image",), "caption", caption_input, ask_caption, offline_caption,
                     apply_summary),
    "openie": Step("openie", ("chunk",), "openie", openie_input, ask_openie, offline_openie, apply_openie,
                   offline_openie_for_corpus, openie_knowledge),
}
