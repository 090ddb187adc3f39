"""Vector storage: each vector once, int8 in new files, float32 files from before still read and
upgraded (migration 5 folds the entity name vectors), and a compact copy that opens the same."""
from __future__ import annotations

import numpy as np
import pytest

from dgrag.store import Store, VECTOR_TYPES
from dgrag.store.connect import applied_version, latest_version, open_connection
from dgrag.store import vectors

from old_files import open_at_version

DIM = 16


def _unit(rng, n: int) -> np.ndarray:
    v = rng.standard_normal((n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _file_at_version_4(path, rng) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """A file as dgrag wrote it at schema 4: float32 vec0 tables, the entity names in a second
    table (`vec_entity_name`) whose vectors differ from vec_entity's (a file from before entities
    were embedded by name). Returns what each table holds."""
    con = open_at_version(path, 4)
    con.execute("INSERT INTO meta VALUES ('embedding_model', 'hash/test'), ('embedding_dim', ?)", (str(DIM),))
    held = {}
    for kind, n in (("file", 3), ("chunk", 40), ("entity", 12), ("entity_name", 12), ("fact", 30)):
        con.execute(f"CREATE VIRTUAL TABLE vec_{kind} USING vec0(embedding float[{DIM}] distance_metric=cosine)")
        ids, mat = np.arange(1, n + 1) + (1000 if kind == "fact" else 0), _unit(rng, n)
        con.executemany(f"INSERT INTO vec_{kind}(rowid, embedding) VALUES (?, ?)",
                        [(int(r), v.tobytes()) for r, v in zip(ids, mat)])
        held[kind] = (ids, mat)
    for kind in ("code", "table", "image"):
        con.execute(f"CREATE VIRTUAL TABLE vec_{kind} USING vec0(embedding float[{DIM}] distance_metric=cosine)")
    con.execute("COMMIT")
    con.close()
    return held


def _tables(con) -> set[str]:
    return {n for (n,) in con.execute(
        "SELECT name FROM sqlite_master WHERE name LIKE 'vec_%' AND sql LIKE 'CREATE VIRTUAL%'")}


def test_quantized_vectors_keep_their_direction():
    rng = np.random.default_rng(0)
    v = _unit(rng, 200) * rng.uniform(0.5, 2.0, (200, 1)).astype(np.float32)
    q = vectors.quantize(v)
    assert q.dtype == np.int8 and np.all(np.abs(q).max(axis=1) == 127)
    back = np.stack([vectors.decode(r.tobytes(), DIM) for r in q])
    assert np.allclose(np.linalg.norm(back, axis=1), 1.0, atol=1e-6)
    cos = np.sum(back * (v / np.linalg.norm(v, axis=1, keepdims=True)), axis=1)
    assert cos.min() > 0.999
    assert np.array_equal(vectors.quantize(back), q)  # a reused vector is stored as it was
    assert not vectors.quantize(np.zeros((1, DIM))).any()


def test_centred_int8_reads_back_closer_than_int8_scaled_per_row():
    """Vectors sharing a large common component with a few large dimensions (as e5's do: the mean
    has norm 0.86-0.91): stored as their difference from the mean in one step size, their dot
    products read back with a fraction of the error of per-row scaling."""
    dim, rng = 384, np.random.default_rng(5)
    common = rng.standard_normal(dim).astype(np.float32) * 0.03
    common[:4] = [0.5, -0.4, 0.3, 0.3]
    v = common + rng.standard_normal((800, dim)).astype(np.float32) * 0.028
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    centre = vectors.fit_centre(v)
    codes = vectors.quantize_centred(v, centre)
    back = np.stack([vectors.decode(c.tobytes(), dim, centre) for c in codes])
    per_row = np.stack([vectors.decode(c.tobytes(), dim) for c in vectors.quantize(v)])
    assert np.allclose(np.linalg.norm(back, axis=1), 1.0, atol=1e-5)
    exact = v[:50] @ v.T
    err, err_per_row = (np.abs(v[:50] @ b.T - exact).mean() for b in (back, per_row))
    assert err < err_per_row / 2
    assert codes.dtype == np.int8 and np.abs(codes).max() == 127


def test_a_new_file_stores_each_vector_once_and_an_int8_copy_searches_alike(tmp_path):
    rng = np.random.default_rng(1)
    with Store(tmp_path / "new.db") as st:
        st.bind_embedder("hash/test", DIM)
        assert _tables(st.con) == {f"vec_{k}" for k in VECTOR_TYPES}
        assert all(st.vectors.storage(k) == "float32" for k in VECTOR_TYPES)  # exact, as built
        mat = _unit(rng, 50)
        with st.transaction():
            st.vectors.put_bulk("chunk", range(1, 51), mat)
        assert np.array_equal(st.vectors.matrix("chunk")[1], mat)
        st.copy_to(tmp_path / "small.db", int8=True)
    with Store(tmp_path / "small.db") as st:
        assert all(st.vectors.storage(k) == "int8" for k in VECTOR_TYPES)
        assert st.vectors.centre_of("chunk") is not None and st.vectors.centre_of("file") is None  # (empty)
        ids, got = st.vectors.matrix("chunk")
        blob = st.con.execute("SELECT embedding FROM vec_chunk WHERE rowid = 7").fetchone()[0]
        hits = st.vectors.knn("chunk", mat[6], 3)
        with st.transaction():  # an int8 table takes new vectors as int8
            st.vectors.put("chunk", [51], mat[:1], ["h"])
        assert np.sum(st.vectors.matrix("chunk")[1][-1] * mat[0]) > 0.999
    assert len(blob) == DIM  # one byte a component
    assert np.array_equal(ids, np.arange(1, 51)) and np.sum(got * mat, axis=1).min() > 0.999
    assert hits[0][0] == 7 and hits[0][1] > 0.999  # vec0's own KNN works on the int8 column
    order = np.argsort(-(got @ mat[6]))[:3] + 1
    assert [r for r, _ in hits] == order.tolist()


def test_a_version_4_file_folds_its_name_vectors_and_keeps_float32(tmp_path):
    rng = np.random.default_rng(2)
    path = tmp_path / "v4.db"
    held = _file_at_version_4(path, rng)
    with Store(path, readonly=True) as st:  # what the retriever opens: upgraded once
        assert applied_version(st.con) == latest_version()
        assert "vec_entity_name" not in _tables(st.con)
        assert st.vectors.storage("chunk") == "float32"
        e_ids, e_mat = st.vectors.matrix("entity")
        c_ids, c_mat = st.vectors.matrix("chunk")
    names_ids, names = held["entity_name"]
    order = np.argsort(e_ids)
    assert np.array_equal(e_ids[order], names_ids) and np.array_equal(e_mat[order], names)  # today's vectors
    assert np.array_equal(c_ids, held["chunk"][0]) and np.array_equal(c_mat, held["chunk"][1])  # exact, as stored
    with Store(path) as st:  # written to as it is: a float32 table takes float32 vectors
        with st.transaction():
            st.vectors.put("chunk", [5], held["file"][1][:1], ["h"])
        assert np.array_equal(st.vectors.matrix("chunk")[1][np.argsort(st.vectors.matrix("chunk")[0])][4],
                              held["file"][1][0])


def test_a_compact_copy_holds_the_same_vectors_in_a_smaller_file(tmp_path):
    rng = np.random.default_rng(3)
    path = tmp_path / "v4.db"
    held = _file_at_version_4(path, rng)
    with Store(path) as st:
        with st.transaction():
            st.vectors.delete_facts([1001, 1002, 1003])  # holes a compact copy leaves behind
        exact = {k: st.vectors.matrix(k) for k in VECTOR_TYPES}
        version = st.meta.graph_version()
        st.copy_to(tmp_path / "plain.db", compact=False)
        st.copy_to(tmp_path / "fitted.db", int8=False)
        st.copy_to(tmp_path / "compact.db", int8=True)
    plain, fitted, small = ((tmp_path / f"{n}.db").stat().st_size for n in ("plain", "fitted", "compact"))
    assert small < plain and fitted <= plain  # (16-d test vectors: the fitted chunks save under a page)
    with Store(tmp_path / "fitted.db", readonly=True) as st:  # the default: float32, exact
        for kind in VECTOR_TYPES:
            ids, mat = st.vectors.matrix(kind)
            a, b = np.argsort(ids), np.argsort(exact[kind][0])
            assert st.vectors.storage(kind) == "float32" and np.array_equal(mat[a], exact[kind][1][b])
        assert "chunk_size=40" in st.con.execute("SELECT sql FROM sqlite_master WHERE name = 'vec_chunk'").fetchone()[0]
    with Store(tmp_path / "compact.db", readonly=True) as st:
        assert st.integrity_check() == "ok" and st.meta.graph_version() == version  # the graph cache holds
        for kind in VECTOR_TYPES:
            assert st.vectors.storage(kind) == "int8"
            ids, mat = st.vectors.matrix(kind)
            want_ids, want = exact[kind]
            a, b = np.argsort(ids), np.argsort(want_ids)
            assert np.array_equal(ids[a], want_ids[b])
            if ids.size:
                assert np.sum(mat[a] * want[b], axis=1).min() > 0.999
        assert 1001 not in st.vectors.matrix("fact")[0]
        sql = st.con.execute("SELECT sql FROM sqlite_master WHERE name = 'vec_chunk'").fetchone()[0]
    assert "chunk_size=40" in sql  # 40 vectors: one chunk of 40 slots, not 1,024
    assert len(held["chunk"][0]) == 40


@pytest.mark.parametrize("n, size", [(0, 8), (1, 8), (40, 40), (101, 104), (1024, 1024), (1025, 520),
                                     (5000, 1000)])
def test_fitted_chunks_waste_under_8_slots_each(n, size):
    assert vectors.fitted_chunk(n) == size
    chunks = max(1, -(-n // size))
    assert size % 8 == 0 and size <= 1024 and chunks * size - n < 8 * chunks + (8 if n == 0 else 0)


def test_folding_identical_name_vectors_rewrites_none_and_frees_their_table(tmp_path):
    """A file from after entities were embedded by name: both tables hold the same vectors; the
    migration drops the copy without rewriting vec_entity (a rewrite leaves vec0 holes)."""
    rng = np.random.default_rng(4)
    path = tmp_path / "v4.db"
    held = _file_at_version_4(path, rng)
    con = open_connection(path)
    ids, mat = held["entity"]
    con.execute("DELETE FROM vec_entity_name")
    con.executemany("INSERT INTO vec_entity_name(rowid, embedding) VALUES (?, ?)",
                    [(int(r), v.tobytes()) for r, v in zip(ids, mat)])
    chunks_before = con.execute("SELECT count(*) FROM vec_entity_chunks").fetchone()[0]
    con.execute("BEGIN")
    assert vectors.fold_name_vectors(con) == 0
    con.execute("COMMIT")
    assert con.execute("SELECT count(*) FROM vec_entity_chunks").fetchone()[0] == chunks_before
    assert "vec_entity_name" not in _tables(con)
    got_ids, got = vectors.matrix(con, "entity")
    con.close()
    order = np.argsort(got_ids)
    assert np.array_equal(got_ids[order], ids) and np.array_equal(got[order], mat)


def test_the_graph_snapshot_packs_entity_names_and_repacks_an_old_one(tmp_path):
    """numpy's str array takes 4 bytes a character at the longest name's width: one long name
    made every name cost 1.6 kB. Names go as one UTF-8 buffer; an old snapshot is repacked."""
    import io

    from dgrag.retrieve.loaded import GRAPH_KEYS, _decode, ensure_graph_cache, load_index

    path = tmp_path / "e.db"
    norms = ["x" * 400] + [f"name {i} 名" for i in range(2000)]
    with Store(path) as st, st.transaction():
        for n in norms:
            st.semantic.upsert_entity(n, n.upper(), "", "en")
    first = load_index(path)  # builds and persists the snapshot
    assert set(first.entity_by_name) == set(norms)
    with Store(path, readonly=True) as st:
        version = st.meta.graph_version()
        packed = st.meta.read_graph_cache(version)
    assert len(packed) < 150_000  # 2,001 names at their own length, not 2,001 x 400 x 4 bytes
    old = io.BytesIO()
    g = _decode(packed)
    np.savez(old, **{k: (np.array(g[k], dtype=str) if k == "entity_names" else g[k]) for k in GRAPH_KEYS})
    assert len(old.getvalue()) > 3_000_000
    with Store(path) as st:
        assert st.write_graph_cache(version, old.getvalue())
    assert load_index(path).entity_by_name == first.entity_by_name  # an old snapshot still reads
    assert ensure_graph_cache(path)
    with Store(path, readonly=True) as st:
        assert len(st.meta.read_graph_cache(version)) == len(packed)
    assert load_index(path).entity_by_name == first.entity_by_name


def test_a_per_row_int8_file_from_before_reads_and_compacts_centred(tmp_path):
    """A compact file of schema 6: int8 tables scaled per row, no centres. It reads and searches
    as before after the upgrade, and a new compact copy of it is centred."""
    rng = np.random.default_rng(6)
    path = tmp_path / "old-int8.db"
    con = open_at_version(path, 6)
    con.execute("INSERT INTO meta VALUES ('embedding_model', 'hash/test'), ('embedding_dim', ?)", (str(DIM),))
    mat = _unit(rng, 30)
    for kind in VECTOR_TYPES:
        con.execute(f"CREATE VIRTUAL TABLE vec_{kind} USING vec0(embedding int8[{DIM}] distance_metric=cosine)")
    con.executemany("INSERT INTO vec_chunk(rowid, embedding) VALUES (?, vec_int8(?))",
                    [(i + 1, q.tobytes()) for i, q in enumerate(vectors.quantize(mat))])
    con.execute("COMMIT")
    con.close()
    with Store(path) as st:
        assert applied_version(st.con) == latest_version() and st.vectors.centre_of("chunk") is None
        ids, got = st.vectors.matrix("chunk")
        assert np.sum(got * mat[ids - 1], axis=1).min() > 0.999
        assert st.vectors.knn("chunk", mat[4], 1)[0][0] == 5
        st.copy_to(tmp_path / "again.db")
    with Store(tmp_path / "again.db", readonly=True) as st:
        assert st.vectors.centre_of("chunk") is not None
        ids, again = st.vectors.matrix("chunk")
        assert np.sum(again * mat[ids - 1], axis=1).min() > 0.995
        assert st.vectors.knn("chunk", mat[4], 1)[0][0] == 5
