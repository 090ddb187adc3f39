"""Import existing corpora and existing extractions (HippoRAG's formats).

- passages: a JSON list of `{title, text}`; each becomes a file with one chunk that keeps
  its list index as `corpus_idx`;
- OpenIE results: `{"docs": [{title, passage, extracted_entities, extracted_triples}]}`,
  in corpus order, where the lists may be Python-literal strings and values may be NaN.
"""
from __future__ import annotations

import ast
import hashlib
import json
import math
from pathlib import Path

from ..errors import DgragError
from ..ingest.page import content_hash, detect_language, node_id
from ..store import Store
from .steps import input_hash, openie_input, write_semantics


def _load_json(path: Path):
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))  # json reads bare NaN
    except (OSError, ValueError) as exc:
        raise DgragError(f"cannot read {path}: {exc}") from None


def passage_path(idx: int) -> str:
    return f"passages/{idx:06d}"


def import_passages(store: Store, path: Path, progress=None) -> dict:
    data = _load_json(path)
    if not isinstance(data, list):
        raise DgragError(f"{path}: expected a JSON list of {{title, text}} passages")
    added = unchanged = bad = 0
    log = store.logs.files()
    with store.transaction():
        for idx, item in enumerate(data):
            if not isinstance(item, dict) or not isinstance(item.get("text"), str):
                bad += 1
                continue
            title, text = str(item.get("title") or f"passage {idx}"), item["text"]
            p = passage_path(idx)
            digest = hashlib.sha256(f"{title}\x1f{text}".encode()).hexdigest()
            if log.get(p, (None,))[0] == digest:
                unchanged += 1
                continue
            old = store.nodes.of_file(p)
            store.nodes.delete([r for r, _ in old.values()])
            _insert_passage(store, p, idx, title, text, digest)
            store.logs.log_file(p, digest, "ok", "", 2)
            added += 1
            if progress:
                progress("import", idx + 1, len(data))
    return {"passages": len(data), "added": added, "unchanged": unchanged, "invalid": bad}


def _insert_passage(store: Store, p: str, idx: int, title: str, text: str, digest: str) -> None:
    lang = detect_language(text)
    common = {"source_path": p, "line_start": 1, "line_end": 1, "language": lang, "source_url": p,
              "breadcrumb": title, "summary_source": "extractive"}
    f = store.nodes.insert({**common, "id": node_id("file", p), "type": "file", "text": title,
                           "summary": title, "content_hash": digest, "meta": {"corpus_idx": idx, "title": title}})
    c = store.nodes.insert({**common, "id": node_id("chunk", p, title, ""), "type": "chunk", "text": text,
                           "summary": text[:300], "content_hash": content_hash(text), "prose": text,
                           "meta": {"corpus_idx": idx, "title": title, "level": 0}})
    store.edges.add([(f, c, "contains", 1.0)])


def _as_list(value) -> list:
    if isinstance(value, list):
        return value
    if isinstance(value, str):
        try:
            parsed = ast.literal_eval(value)
            return parsed if isinstance(parsed, list) else []
        except (ValueError, SyntaxError):
            return []
    return []  # NaN and other junk


def _clean(x) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    return str(x).strip()


def import_openie(store: Store, path: Path, progress=None) -> dict:
    data = _load_json(path)
    docs = data.get("docs") if isinstance(data, dict) else data
    if not isinstance(docs, list):
        raise DgragError(f"{path}: expected {{'docs': [...]}} in HippoRAG's OpenIE format")
    chunks = _passage_chunks(store)
    matched = triples = entities = malformed = 0
    unmatched = []
    with store.transaction():
        for idx, doc in enumerate(docs):
            chunk = _match(chunks, idx, _clean(doc.get("title")))
            if chunk is None:
                unmatched.append(idx)
                continue
            ents = [(_clean(e), "") for e in _as_list(doc.get("extracted_entities")) if _clean(e)]
            raw = _as_list(doc.get("extracted_triples"))
            trip = [tuple(_clean(x) for x in t) for t in raw if isinstance(t, (list, tuple)) and len(t) == 3]
            trip = [t for t in trip if all(t)]
            malformed += len(raw) - len(trip)  # not (head, relation, tail): reported, not guessed at
            write_semantics(store, chunk["rowid"], ents, trip, chunk["language"] or "en", "import")
            store.logs.log_enrich(chunk["rowid"], "openie", "done", "imported", 0,
                             input_hash("openie", openie_input(chunk)))
            matched += 1
            entities += len(ents)
            triples += len(trip)
            if progress:
                progress("import openie", idx + 1, len(docs))
    return {"docs": len(docs), "matched": matched, "unmatched": unmatched[:20], "n_unmatched": len(unmatched),
            "entities": entities, "triples": triples, "malformed_triples": malformed}


def _passage_chunks(store: Store) -> dict[int, dict]:
    rowids = store.nodes.of_type(["chunk"])
    out = {}
    for n in store.nodes.by_rowids(rowids):
        if "corpus_idx" in n["meta"]:
            out[int(n["meta"]["corpus_idx"])] = n
    return out


def _match(chunks: dict[int, dict], idx: int, title: str) -> dict | None:
    """By corpus order, confirmed by the title; else by the title alone."""
    c = chunks.get(idx)
    if c is not None and (not title or c["meta"].get("title") == title):
        return c
    return next((c for c in chunks.values() if c["meta"].get("title") == title), None) if title else None
