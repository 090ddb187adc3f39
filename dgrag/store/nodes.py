"""The `nodes` table: files, chunks, code, tables, images and entities of the graph.
Functions over one connection; rows come out as `core.Node` mappings with `meta` decoded."""
from __future__ import annotations

import json
from typing import Iterable, Sequence

from ..core import Node, url_of
from . import semantic, vectors

COLUMNS = (
    "id", "type", "text", "summary", "summary_source", "breadcrumb", "source_path",
    "line_start", "line_end", "source_url", "language", "content_hash", "prose", "entity_name", "entity_norm",
    "meta",
)  # content_hash: of the node's text (an image's: of its bytes); prose: a chunk's text without
#    code, tables and images; entity_name / entity_norm: an entity's display and normalised name

__all__ = ["of_file", "page_sections", "page_outline", "file_rowids", "rowids_of", "insert", "update_position", "update", "image_by_sha", "set_image_sha",
           "delete", "redirect", "by_id", "by_rowids", "of_type", "page_chunks", "drop_derivable_urls", "store_text_once",
           "drop_hash_index", "ensure_hash_index",
           "texts_of_type", "count_of_pages", "set_summary",
           "unreferenced_images",
           "pending_embedding", "gc_entities", "insert_bulk", "table", "counts", "contained", "container",
           "sections_headed"]


# A node's text where a compact copy left it in its chunk (schema 10: `store_text_once`), read
# as if stored: `n` is the node's row
TEXT = ("CASE WHEN n.text_in IS NULL THEN n.text ELSE coalesce((SELECT substr(c.text, n.text_at + 1, n.text_len) "
        "FROM nodes c WHERE c.rowid = n.text_in), '') END")

# A section's URL on the published site (its page's URL and its heading's anchor; a code block's
# or a table's, its section's, through `text_in`), NULL where the page has none: a compact copy
# leaves out the URLs it gives back (`drop_derivable_urls`)
_PAGE_URL = ("(SELECT json_extract(f.meta, '$.url') FROM nodes f WHERE f.type = 'file' "
             "AND f.source_path = n.source_path)")
_ANCHOR = ("CASE n.type WHEN 'chunk' THEN json_extract(n.meta, '$.anchor') WHEN 'file' THEN NULL "
           "ELSE (SELECT json_extract(c.meta, '$.anchor') FROM nodes c WHERE c.rowid = n.text_in) END")
SITE_URL = (f"CASE WHEN n.type IN ('file', 'chunk', 'code', 'table') AND {_PAGE_URL} GLOB 'http*://*' "
            f"THEN {_PAGE_URL} || coalesce('#' || nullif({_ANCHOR}, ''), '') END")


def _marks(n: int) -> str:
    return ",".join("?" * n)


def _meta_json(node: dict) -> str:
    return json.dumps(node.get("meta") or {}, ensure_ascii=False)


def of_file(con, path: str) -> dict[str, tuple[int, str | None]]:
    """id -> (rowid, content_hash) of the structural nodes a page owns."""
    rows = con.execute("SELECT id, rowid, content_hash FROM nodes WHERE source_path=? AND type != 'image' "
                       "AND type != 'entity'", (path,)).fetchall()
    return {i: (r, h) for i, r, h in rows}


def rowids_of(con, ids: Iterable[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    ids = list(ids)
    for i in range(0, len(ids), 500):
        part = ids[i:i + 500]
        out.update(con.execute(f"SELECT id, rowid FROM nodes WHERE id IN ({_marks(len(part))})", part).fetchall())
    return out


def insert(con, node: dict) -> int:
    values = [node.get(c) for c in COLUMNS]
    values[COLUMNS.index("meta")] = _meta_json(node)
    cur = con.execute(f"INSERT INTO nodes({','.join(COLUMNS)}) VALUES ({_marks(len(COLUMNS))})", values)
    return int(cur.lastrowid)


def update_position(con, rowid: int, node: dict) -> None:
    """An unchanged node moved inside its page: new lines / URL / breadcrumb, same vector."""
    con.execute("UPDATE nodes SET line_start=?, line_end=?, source_url=?, breadcrumb=?, meta=? WHERE rowid=?",
                (node.get("line_start"), node.get("line_end"), node.get("source_url"), node.get("breadcrumb", ""),
                 _meta_json(node), rowid))


def update(con, rowid: int, node: dict) -> None:
    """Replace a node's content in place (same id, same rowid): its vector is recomputed."""
    cols = [c for c in COLUMNS if c not in ("id", "type")]
    values = [node.get(c) for c in cols]
    values[cols.index("meta")] = _meta_json(node)
    _keep_texts_in(con, [rowid])
    con.execute(f"UPDATE nodes SET {', '.join(f'{c}=?' for c in cols)}, embed_hash=NULL, text_in=NULL, "
                "text_at=NULL, text_len=NULL WHERE rowid=?", values + [rowid])


def image_by_sha(con, sha: str) -> int | None:
    row = con.execute("SELECT rowid FROM nodes WHERE type='image' AND content_hash=?", (sha,)).fetchone()
    return row[0] if row else None


def set_image_sha(con, rowid: int, sha: str, width: int, height: int) -> None:
    meta = json.loads(con.execute("SELECT meta FROM nodes WHERE rowid=?", (rowid,)).fetchone()[0])
    meta.update(sha=sha, width=width, height=height)
    con.execute("UPDATE nodes SET content_hash=?, meta=? WHERE rowid=?", (sha, json.dumps(meta, ensure_ascii=False),
                                                                         rowid))


def delete(con, rowids: Sequence[int]) -> None:
    """Nodes with their edges, links, vectors, facts and mentions."""
    for i in range(0, len(rowids), 500):
        part = list(rowids[i:i + 500])
        marks = _marks(len(part))
        _keep_texts_in(con, part)
        types = dict(con.execute(f"SELECT rowid, type FROM nodes WHERE rowid IN ({marks})", part).fetchall())
        con.execute(f"DELETE FROM edges WHERE src IN ({marks})", part)
        con.execute(f"DELETE FROM edges WHERE dst IN ({marks})", part)
        con.execute(f"DELETE FROM links WHERE src IN ({marks})", part)
        vectors.delete_of_nodes(con, types)
        semantic.forget_nodes(con, part)
        con.execute(f"DELETE FROM nodes WHERE rowid IN ({marks})", part)


def redirect(con, old: int, new: int) -> None:
    """Move every edge of `old` onto `new`, then delete `old` (near-duplicate merge)."""
    con.execute("UPDATE OR IGNORE edges SET dst=? WHERE dst=?", (new, old))
    con.execute("UPDATE OR IGNORE edges SET src=? WHERE src=?", (new, old))
    delete(con, [old])


def gc_entities(con) -> int:
    """Entities no chunk mentions any more: the reference count reached zero."""
    dead = [r for (r,) in con.execute(
        "SELECT rowid FROM nodes WHERE type='entity' AND rowid NOT IN (SELECT entity FROM chunk_entities)")]
    delete(con, dead)
    return len(dead)


def by_id(con, node_id: str) -> Node | None:
    rows = by_rowids(con, rowids_of(con, [node_id]).values())
    return rows[0] if rows else None


def by_rowids(con, rowids: Iterable[int]) -> list[Node]:
    """The nodes of `rowids` in that order (missing ones left out), `meta` decoded, and a source
    URL that a compact file leaves out (the file's url_template gives it) filled in."""
    rowids = list(rowids)
    out = {}
    cols = "n.rowid, " + ",".join(TEXT if c == "text" else f"n.{c}" for c in COLUMNS)
    cols += f", CASE WHEN n.source_url IS NULL THEN {SITE_URL} END"
    template = None
    for i in range(0, len(rowids), 500):
        part = rowids[i:i + 500]
        for *row, site_url in con.execute(f"SELECT {cols} FROM nodes n WHERE n.rowid IN ({_marks(len(part))})", part):
            d: Node = dict(zip(("rowid",) + COLUMNS, row))  # type: ignore[assignment]
            d["meta"] = json.loads(d["meta"] or "{}")
            if d["source_url"] is None and d["source_path"] is not None and d["type"] != "entity":
                template = _template(con) if template is None else template
                d["source_url"] = _url(template, None, site_url, d["source_path"], d["line_start"], d["line_end"])
            out[d["rowid"]] = d
    return [out[r] for r in rowids if r in out]


_TEMPLATE = "coalesce((SELECT value FROM meta WHERE key = 'url_template'), '')"


def _template(con) -> str:
    row = con.execute("SELECT value FROM meta WHERE key = 'url_template'").fetchone()
    return row[0] if row else ""


def drop_derivable_urls(con) -> int:
    """Leave out the source URLs the file's url_template gives back, or without one the site's
    (`SITE_URL`; run after `store_text_once`, whose chunk gives a code block its anchor):
    `by_rowids` fills them in (a compact copy, `dgrag snapshot`): 1.3 MB of the whole ArkUI-X
    index, 0.36 MB of VitePress's. Returns how many."""
    template = _template(con)
    same = []
    for rowid, path, start, end, url in con.execute(
            "SELECT rowid, source_path, line_start, line_end, source_url FROM nodes "
            "WHERE source_url IS NOT NULL AND source_path IS NOT NULL AND type != 'entity'"):
        try:
            if url_of(template, path, start, end) == url:
                same.append((rowid,))
        except (KeyError, IndexError, ValueError):
            return 0  # a template that does not format: every URL stays as stored
    con.executemany("UPDATE nodes SET source_url = NULL WHERE rowid = ?", same)
    site = 0
    if not template:  # the sections' URLs on the site, where the indexer gave them (no template)
        site = con.execute(f"UPDATE nodes AS n SET source_url = NULL WHERE n.source_url = {SITE_URL}").rowcount
    return len(same) + max(site, 0)


def store_text_once(con) -> int:
    """Leave out the text of each code block and table that its page's chunks hold verbatim
    (a compact copy, `dgrag snapshot`; schema 10): the node records the chunk, offset and length,
    and every reader here reads it back from there. Returns how many."""
    pages: dict[str, list[tuple[int, int, int, str]]] = {}
    for rowid, path, start, end, text in con.execute(
            "SELECT rowid, source_path, coalesce(line_start, 0), coalesce(line_end, 0), text FROM nodes "
            "WHERE type = 'chunk' AND source_path IS NOT NULL AND text_in IS NULL"):
        pages.setdefault(path, []).append((rowid, start, end, text))
    found = []
    for rowid, path, start, end, text in con.execute(
            "SELECT rowid, source_path, coalesce(line_start, 0), coalesce(line_end, 0), text FROM nodes "
            "WHERE type IN ('code', 'table') AND text != '' AND text_in IS NULL").fetchall():
        # the section around it first (by lines), then the rest of its page
        chunks = sorted(pages.get(path, ()), key=lambda c: not (c[1] <= start and end <= c[2]))
        for chunk, _, _, holder in chunks:
            at = holder.find(text)
            if at >= 0:
                found.append((chunk, at, len(text), rowid))
                break
    con.executemany("UPDATE nodes SET text = '', text_in = ?, text_at = ?, text_len = ? WHERE rowid = ?", found)
    return len(found)


def drop_hash_index(con) -> bool:
    """Leave out the index of embedded texts' hashes (a compact copy: 0.36 MB of VitePress's
    19 MB); only embedding reads it (`vectors.by_embed_hash`), and `ensure_hash_index` builds it
    again before. True if it was there."""
    had = con.execute("SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'nodes_embed_hash'").fetchone()
    con.execute("DROP INDEX IF EXISTS nodes_embed_hash")
    return had is not None


def ensure_hash_index(con) -> None:
    """The index of embedded texts' hashes, where a compact copy left it out (`drop_hash_index`):
    without it each batch's look-up of known vectors would read the whole table."""
    con.execute("CREATE INDEX IF NOT EXISTS nodes_embed_hash ON nodes(embed_hash)")


def _keep_texts_in(con, chunks: Sequence[int]) -> None:
    """Before chunks change or go: the texts that other nodes read from them written back into
    those nodes (`store_text_once`)."""
    marks = _marks(len(chunks))
    # a URL left out that the chunk gave (its anchor) is written back too
    site = f"CASE WHEN n.source_url IS NULL AND {_TEMPLATE} = '' THEN {SITE_URL} END"
    con.execute(f"UPDATE nodes AS n SET text = {TEXT}, source_url = coalesce(n.source_url, {site}), "
                f"text_in = NULL, text_at = NULL, text_len = NULL WHERE n.text_in IN ({marks})", list(chunks))


def texts_of_type(con, kind: str) -> list[tuple[int, str, str, str]]:
    """(rowid, breadcrumb, text, language) of every node of one type, by rowid: the lexical
    index's corpus."""
    return con.execute(f"SELECT n.rowid, coalesce(n.breadcrumb, ''), {TEXT}, coalesce(n.language, '') "
                       "FROM nodes n WHERE n.type=? ORDER BY n.rowid", (kind,)).fetchall()


def page_chunks(con, path: str) -> list[tuple[int, int, str]]:
    """(line_start, line_end, text) of a page's chunks: the page's text, from which the context
    of its code and tables is derived (`ingest/context.py`)."""
    return con.execute("SELECT line_start, line_end, text FROM nodes WHERE type = 'chunk' AND source_path = ?",
                       (path,)).fetchall()


def page_sections(con, path: str) -> list[tuple[str, str, str, int, str]]:
    """(id, breadcrumb, source_url, line_start, language) of a page's chunks in reading order:
    where an answer's follow-ups come from (the next section, the other language's)."""
    template = _template(con)
    rows = con.execute(f"SELECT n.id, coalesce(n.breadcrumb, ''), n.source_url, "
                       f"CASE WHEN n.source_url IS NULL THEN {SITE_URL} END, n.line_start, n.line_end, "
                       "coalesce(n.language, '') FROM nodes n WHERE n.type = 'chunk' AND n.source_path = ? "
                       "ORDER BY coalesce(n.line_start, 0), n.rowid", (path,)).fetchall()
    return [(i, crumb, _url(template, url, site, path, a, b), a or 0, lang)
            for i, crumb, url, site, a, b, lang in rows]


def contained(con, node_id: str, limit: int = 40) -> list[Node]:
    """The nodes a section contains (its subsections, tables, code, images), in reading order, at
    most `limit`: what an API card is read from besides the section's own text."""
    rowids = [r for (r,) in con.execute(
        "SELECT d.rowid FROM nodes s JOIN edges e ON e.src = s.rowid AND e.type = 'contains' "
        "JOIN nodes d ON d.rowid = e.dst WHERE s.id = ? ORDER BY d.line_start, d.rowid LIMIT ?", (node_id, limit))]
    return by_rowids(con, rowids)


def container(con, node_id: str) -> Node | None:
    """The section that contains a node (a table's, a code block's, a subsection's), None for none."""
    row = con.execute("SELECT s.rowid FROM nodes d JOIN edges e ON e.dst = d.rowid AND e.type = 'contains' "
                      "JOIN nodes s ON s.rowid = e.src AND s.type = 'chunk' WHERE d.id = ? LIMIT 1", (node_id,)).fetchone()
    rows = by_rowids(con, [row[0]]) if row else []
    return rows[0] if rows else None


def sections_headed(con, names: Sequence[str], each: int = 30) -> list[tuple[str, str, str, str, str]]:
    """(id, breadcrumb, source_url, source_path, language) of sections whose breadcrumb holds one of
    `names` (at most `each` per name, by rowid; 12 names at most); the caller keeps those whose
    own heading is the name."""
    out: list[tuple[str, str, str, str, str]] = []
    for name in [n for n in names if n][:12]:
        out.extend(con.execute("SELECT id, breadcrumb, coalesce(source_url, ''), coalesce(source_path, ''), "
                               "coalesce(language, '') FROM nodes WHERE type = 'chunk' AND instr(breadcrumb, ?) > 0 "
                               "ORDER BY rowid LIMIT ?", (name, each)).fetchall())
    return out


def page_outline(con) -> list[tuple[str, str, str, int, str, str, str]]:
    """(source_path, type, id, line_start, first line of text, source_url, breadcrumb) of every
    chunk and code node, by page and line: each page's headings (a chunk's first line) and code
    blocks, which the translation check compares across the language trees."""
    template = _template(con)
    rows = con.execute(
        "SELECT source_path, type, id, line_start, CASE WHEN instr(text, char(10)) > 0 "
        "THEN substr(text, 1, instr(text, char(10)) - 1) ELSE text END, source_url, site, line_end, breadcrumb FROM "
        f"(SELECT n.source_path, n.type, n.id, coalesce(n.line_start, 0) AS line_start, {TEXT} AS text, n.rowid, "
        f"n.source_url, CASE WHEN n.source_url IS NULL THEN {SITE_URL} END AS site, n.line_end, coalesce(n.breadcrumb, '') AS breadcrumb FROM nodes n "
        "WHERE n.type IN ('chunk', 'code') AND n.source_path IS NOT NULL) "
        "ORDER BY source_path, line_start, rowid").fetchall()
    return [(path, kind, i, a, first, _url(template, url, site, path, a or None, b), crumb)
            for path, kind, i, a, first, url, site, b, crumb in rows]


def _url(template: str, stored: str | None, site: str | None, path: str, start, end) -> str:
    """A node's source URL, where a compact copy left it out as the indexer would give it: the
    site's unless a template is set (ingest's `source_url`)."""
    if stored is not None:
        return stored
    if site and not template:
        return site
    try:
        return url_of(template, path, start, end)
    except (KeyError, IndexError, ValueError):
        return ""


def file_rowids(con) -> dict[int, str]:
    """rowid -> source path of every file (page) node."""
    return dict(con.execute("SELECT rowid, source_path FROM nodes WHERE type = 'file' AND source_path IS NOT NULL"))


def count_of_pages(con, pages: Sequence[str], kind: str) -> int:
    """Nodes of one type from these source pages."""
    n = 0
    for i in range(0, len(pages), 500):
        part = list(pages[i:i + 500])
        n += con.execute(f"SELECT count(*) FROM nodes WHERE type = ? AND source_path IN ({_marks(len(part))})",
                         [kind, *part]).fetchone()[0]
    return n


def of_type(con, kinds: Sequence[str]) -> list[int]:
    return [r for (r,) in con.execute(
        f"SELECT rowid FROM nodes WHERE type IN ({_marks(len(kinds))}) ORDER BY rowid", list(kinds))]


def set_summary(con, rowid: int, summary: str, source: str) -> None:
    """A new summary changes what gets embedded: the vector is recomputed."""
    con.execute("UPDATE nodes SET summary=?, summary_source=?, embed_hash=NULL WHERE rowid=?", (summary, source, rowid))


def unreferenced_images(con) -> list[int]:
    return [r for (r,) in con.execute(
        "SELECT rowid FROM nodes n WHERE type='image' AND NOT EXISTS "
        "(SELECT 1 FROM edges e WHERE e.dst = n.rowid AND e.type='contains')")]


def pending_embedding(con, limit: int = 1_000_000, kinds: Sequence[str] | None = None) -> list[tuple[int, str, Node]]:
    """Nodes (of `kinds`, or all) whose vector is missing or stale: (rowid, type, row)."""
    where = f" AND type IN ({_marks(len(kinds))})" if kinds else ""
    rowids = [r for (r,) in con.execute(
        f"SELECT rowid FROM nodes WHERE embed_hash IS NULL{where} ORDER BY rowid LIMIT ?", (*(kinds or ()), limit))]
    return [(n["rowid"], n["type"], n) for n in by_rowids(con, rowids)]


def insert_bulk(con, rows: Iterable[tuple]) -> None:
    """(rowid, id, type, text, breadcrumb, source_path, embed_hash) rows, for synthetic indexes."""
    con.executemany("INSERT INTO nodes(rowid, id, type, text, breadcrumb, source_path, embed_hash) "
                    "VALUES (?,?,?,?,?,?,?)", rows)


def table(con, codes: dict[str, int]):
    """(rowids ascending, type code per node) as arrays; the coding happens in SQL."""
    import numpy as np

    case = " ".join(f"WHEN '{t}' THEN {int(c)}" for t, c in codes.items())
    rows = con.execute(f"SELECT rowid, CASE type {case} ELSE 255 END FROM nodes ORDER BY rowid").fetchall()
    arr = np.array(rows, dtype=np.int64).reshape(-1, 2)
    return arr[:, 0].copy(), arr[:, 1].astype(np.uint8)


def counts(con) -> dict[str, int]:
    out = dict.fromkeys(vectors.NODE_TYPES, 0)
    out.update(con.execute("SELECT type, count(*) FROM nodes GROUP BY type").fetchall())
    return out
