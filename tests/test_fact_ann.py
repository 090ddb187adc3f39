"""The fact route's approximate index (kernels/ann.py, store/ann.py, retrieve/fact_ann.py): exact
values of the kernel on small arrays, the stored index in a real SQLite file (written from a
blank file, read back, rebuilt when the facts change), and exact search wherever the index is
not due or the library is absent."""
from __future__ import annotations

import numpy as np
import pytest

from dgrag.config import Settings
from dgrag.kernels import ann
from dgrag.kernels.knn import fold_equal_rows, topk
from dgrag.store import Store

DIM = 32


def unit(rng, n: int, dim: int = DIM) -> np.ndarray:
    x = rng.standard_normal((n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


# ---- the kernel ---------------------------------------------------------------------------
def test_the_fingerprint_sees_rowids_order_and_vectors():
    rng = np.random.default_rng(0)
    ids, vec = np.arange(1, 101), unit(rng, 100)
    fp = ann.fingerprint(ids, vec)
    assert fp == ann.fingerprint(ids.copy(), vec.copy())
    assert fp != ann.fingerprint(ids[::-1], vec[::-1])  # same facts, another row order
    moved = ids.copy()
    moved[-1] = 500  # a fact deleted, another added in its row
    assert fp != ann.fingerprint(moved, vec)
    other = vec.copy()
    other[3, 0] += 0.5  # a rowid reused for another fact
    assert fp != ann.fingerprint(ids, other)


def test_fold_groups_exactly_equal_rows_under_the_first():
    rng = np.random.default_rng(9)
    base = unit(rng, 4)
    vec = base[[0, 1, 0, 2, 1, 0, 3]].copy()
    near = vec.copy()
    near[6, 20] += 1e-7  # equal in the hashed leading components, not in the whole row
    for x, keep, groups in ((vec, [0, 1, 3, 6], [[0, 2, 5], [1, 4], [3], [6]]),
                            (np.vstack([vec, near[6:]]), [0, 1, 3, 6, 7], [[0, 2, 5], [1, 4], [3], [6], [7]])):
        k, indptr, members = fold_equal_rows(x)
        assert k.tolist() == keep
        assert [members[indptr[i]:indptr[i + 1]].tolist() for i in range(len(k))] == groups
    k, indptr, members = fold_equal_rows(np.zeros((0, DIM), np.float32))
    assert k.size == 0 and indptr.tolist() == [0] and members.size == 0


def test_the_library_absent_leaves_exact_search(monkeypatch):
    def missing():
        raise ImportError("No module named 'faiss'")

    monkeypatch.setattr(ann, "_faiss", missing)
    assert ann.available() is False


ann_lib = pytest.mark.skipif(not ann.available(), reason="the `ann` extra (faiss-cpu) is not installed")


@ann_lib
def test_a_wide_search_finds_the_exact_top_10_with_exact_scores():
    rng = np.random.default_rng(1)
    vec, queries = unit(rng, 2000), unit(rng, 20)
    index = ann.build(vec, threads=1)
    assert ann.size(index) == 2000
    for q in queries:
        want_pos, want_cos = topk(vec @ q, 10)
        pos, cos = ann.search_rescored(index, vec, q, 10, breadth=500)
        assert pos.tolist() == want_pos.tolist()
        np.testing.assert_allclose(cos, want_cos, rtol=0, atol=1e-6)
        ids, approx = ann.search(index, q, 500)  # the candidates, by the index's own int8 scores
        assert ids.shape == (1, 500) and set(want_pos.tolist()) <= set(ids[0].tolist())
        np.testing.assert_allclose(approx[0], vec[ids[0]] @ q, atol=0.02)  # 8-bit copies: near, not equal


@ann_lib
def test_the_breadth_is_per_call_and_narrow_searches_miss_some():
    rng = np.random.default_rng(2)
    vec, queries = unit(rng, 2000), unit(rng, 30)
    index = ann.build(vec, threads=1)

    def recall(breadth: int) -> float:
        return float(np.mean([len(set(ann.search_rescored(index, vec, q, 10, breadth)[0].tolist())
                                  & set(topk(vec @ q, 10)[0].tolist())) / 10 for q in queries]))

    narrow, wide = recall(10), recall(400)
    assert wide == 1.0 and narrow < wide
    assert recall(10) == narrow  # nothing of a search stays behind in the index


@ann_lib
def test_serialized_and_read_back_it_answers_the_same():
    rng = np.random.default_rng(3)
    vec, queries = unit(rng, 2000), unit(rng, 25)
    index = ann.build(vec, threads=1)
    blob = ann.serialize(index)
    again = ann.deserialize(bytearray(blob))
    for k in (1, 10, 100):
        a_ids, a_sims = ann.search(index, queries, k)
        b_ids, b_sims = ann.search(again, queries, k)
        assert np.array_equal(a_ids, b_ids) and np.array_equal(a_sims, b_sims)
    assert ann.serialize(again) == blob
    assert ann.describe(again) == f"faiss-cpu {__import__('faiss').__version__} HNSW16,SQ8 ef_construction=128"


@ann_lib
def test_an_empty_index_finds_nothing():
    index = ann.build(np.zeros((0, DIM), np.float32), threads=1)
    ids, sims = ann.search(index, np.ones(DIM, np.float32) / DIM ** 0.5, 5)
    assert ids.tolist() == [[-1] * 5] and sims.tolist() == [[0.0] * 5]


# ---- the stored index ---------------------------------------------------------------------
def test_a_blank_file_has_the_table_and_keeps_an_index_in_parts(tmp_path, monkeypatch):
    from dgrag.store import ann as stored

    with Store(tmp_path / "blank.db") as st:  # a blank file: every migration, 0006 included
        assert st.ann.header("fact") is None
        monkeypatch.setattr(stored, "PART_BYTES", 1000)  # many parts, as past 1e9 bytes
        data = bytes(range(256)) * 17
        st.write_ann("fact", "m", 3, "fp", "lib 1.0", data, 1.5)
        assert st.con.execute("SELECT count(*) FROM ann_index_parts").fetchone()[0] == 5
        head, got = st.ann.read("fact", "m", 3, "fp")
        assert bytes(got) == data and (head.library, head.bytes, head.built_s) == ("lib 1.0", len(data), 1.5)
        for key in (("other-model", 3, "fp"), ("m", 4, "fp"), ("m", 3, "other")):
            assert st.ann.read("fact", *key) is None  # stale: another model, count or fingerprint
        st.write_ann("fact", "m", 2, "fp2", "lib 1.0", b"xy", 0.1)  # replaced whole
        assert st.con.execute("SELECT count(*) FROM ann_index_parts").fetchone()[0] == 1
        assert bytes(st.ann.read("fact", "m", 2, "fp2")[1]) == b"xy"
        assert st.meta.graph_version() == 0  # a cache: the graph snapshot stays valid


def _file_with_facts(path, rng, n: int) -> np.ndarray:
    """An index file holding one chunk, two entities and `n` facts with unit vectors."""
    vec = unit(rng, n)
    with Store(path) as st:
        st.bind_embedder("test/unit", DIM)
        with st.transaction():
            chunk = st.nodes.insert({"id": "c", "type": "chunk", "text": "t", "breadcrumb": "P", "prose": "t"})
            a = st.semantic.upsert_entity("a", "A", "", "en")
            b = st.semantic.upsert_entity("b", "B", "", "en")
            for i in range(n):
                st.semantic.add_fact(a, f"r{i}", b, f"fact {i}", chunk, "test")
            ids = [r for r, *_ in st.semantic.all_facts()]
            st.vectors.put_bulk("fact", ids, vec)
    return vec


def _recall_all(li, queries, k: int, breadth: int) -> list[tuple[list[int], np.ndarray]]:
    from dgrag.retrieve.stages import recall_facts

    return [(r.positions.tolist(), r.cosine) for r in (recall_facts(li, q, k, breadth) for q in queries)]


def _same(a, b) -> None:
    assert [p for p, _ in a] == [p for p, _ in b]
    for (_, x), (_, y) in zip(a, b):
        np.testing.assert_allclose(x, y, rtol=0, atol=1e-6)


# one build thread: faiss's parallel inserts make a slightly different graph each run, and a
# node the walk cannot reach would make the exact-equality checks below flaky
DUE = Settings(fact_ann_min_vectors=100, index_threads=1)


@ann_lib
def test_the_index_is_built_at_load_stored_and_read_back(tmp_path):
    from dgrag.retrieve.loaded import load_index

    rng = np.random.default_rng(4)
    path = tmp_path / "facts.db"
    _file_with_facts(path, rng, 1500)
    queries = unit(rng, 15)
    first = load_index(path, DUE)
    assert first.fact_search.index is not None and "built in" in first.fact_search.how
    with Store(path, readonly=True) as st:
        head = st.ann.header("fact")
    assert (head.kind, head.model, head.count) == ("fact", "test/unit", 1500)
    assert head.fingerprint == ann.fingerprint(first.fact_rowids, first.fact_vec)
    again = load_index(path, DUE)
    assert "from the file" in again.fact_search.how
    exact = _recall_all(first, queries, 20, breadth=0)  # breadth 0: exact, index or not
    _same(_recall_all(first, queries, 20, breadth=1500), exact)
    _same(_recall_all(again, queries, 20, breadth=1500), exact)
    assert ann.serialize(again.fact_search.index) == ann.serialize(first.fact_search.index)


@ann_lib
def test_a_stale_index_is_rebuilt_when_the_facts_change(tmp_path):
    from dgrag.retrieve.loaded import load_index

    rng = np.random.default_rng(5)
    path = tmp_path / "facts.db"
    _file_with_facts(path, rng, 1200)
    before = load_index(path, DUE)
    with Store(path) as st, st.transaction():  # one fact deleted, one added
        gone = int(before.fact_rowids[7])
        st.con.execute("DELETE FROM facts WHERE rowid=?", (gone,))
        st.vectors.delete_facts([gone])
        st.semantic.add_fact(*st.con.execute("SELECT head, 'new', tail, 'new fact', chunk, 'test' FROM facts "
                                             "LIMIT 1").fetchone())
        new = st.con.execute("SELECT max(rowid) FROM facts").fetchone()[0]
        st.vectors.put_bulk("fact", [new], unit(rng, 1))
    after = load_index(path, DUE)
    assert "built in" in after.fact_search.how  # not the stored one: it indexes other vectors
    with Store(path, readonly=True) as st:
        head = st.ann.header("fact")
    assert head.count == 1200 and head.fingerprint == ann.fingerprint(after.fact_rowids, after.fact_vec)
    assert gone not in after.fact_rowids.tolist() and new in after.fact_rowids.tolist()
    queries = unit(rng, 10)
    _same(_recall_all(after, queries, 10, breadth=1200), _recall_all(after, queries, 10, breadth=0))
    assert "from the file" in load_index(path, DUE).fact_search.how


@ann_lib
def test_facts_sharing_a_vector_are_indexed_once_and_all_found(tmp_path):
    """Facts of one text share a vector: the index holds it once, a hit brings every fact of
    it (what exact search returns), and an index stored over every row is built again."""
    from dgrag.retrieve.loaded import load_index

    rng = np.random.default_rng(10)
    path = tmp_path / "facts.db"
    _file_with_facts(path, rng, 600)
    with Store(path) as st, st.transaction():  # every third fact takes the vector of the one before
        ids, mat = st.vectors.matrix("fact")
        order = np.argsort(ids)
        for i in range(2, 600, 3):
            st.con.execute("UPDATE vec_fact SET embedding = ? WHERE rowid = ?",
                           (mat[order[i - 1]].tobytes(), int(ids[order[i]])))
    li = load_index(path, DUE)
    assert ann.size(li.fact_search.index) == 400 and li.fact_search.folded is not None
    queries = unit(rng, 12)
    for q, (got, got_cos), (want, want_cos) in zip(queries, _recall_all(li, queries, 30, breadth=400),
                                                   _recall_all(li, queries, 30, breadth=0)):
        np.testing.assert_allclose(got_cos, want_cos, rtol=0, atol=1e-6)  # the same scores, twins included
        differ = set(got) ^ set(want)  # only where twins tie at the 30th place
        assert all(abs(float(li.fact_vec[p] @ q) - float(want_cos[-1])) < 1e-6 for p in differ)
    unfolded = ann.build(li.fact_vec, threads=1)  # what a file written before folding holds
    with Store(path) as st:
        st.write_ann("fact", "test/unit", 600, ann.fingerprint(li.fact_rowids, li.fact_vec),
                     ann.describe(unfolded), ann.serialize(unfolded), 1.0)
    again = load_index(path, DUE)
    assert "built in" in again.fact_search.how and ann.size(again.fact_search.index) == 400
    assert "from the file" in load_index(path, DUE).fact_search.how


@ann_lib
def test_a_read_only_file_keeps_the_index_in_memory(tmp_path, monkeypatch):
    from dgrag.retrieve import fact_ann
    from dgrag.retrieve.loaded import load_index

    path = tmp_path / "facts.db"
    _file_with_facts(path, np.random.default_rng(6), 300)
    monkeypatch.setattr(fact_ann, "Store", _ReadOnly)
    li = load_index(path, DUE)
    assert li.fact_search.index is not None and "not stored" in li.fact_search.how
    with Store(path, readonly=True) as st:
        assert st.ann.header("fact") is None


class _ReadOnly(Store):
    def __init__(self, path, *, readonly: bool = False, timeout: float = 30.0):
        if not readonly:
            raise PermissionError("a read-only file")
        super().__init__(path, readonly=True, timeout=timeout)


def test_below_the_threshold_or_without_the_library_search_is_exact(tmp_path, monkeypatch, caplog):
    from dgrag.retrieve.loaded import load_index

    rng = np.random.default_rng(7)
    path = tmp_path / "facts.db"
    _file_with_facts(path, rng, 400)
    queries = unit(rng, 10)
    plain = load_index(path)  # the default threshold (250,000 facts) is far off
    assert plain.fact_search.index is None and plain.fact_search.how == "exact"
    want = [topk(plain.fact_vec @ q, 30) for q in queries]
    for breadth in (0, 400):
        got = _recall_all(plain, queries, 30, breadth)
        assert [p for p, _ in got] == [w[0].tolist() for w in want]
    monkeypatch.setattr(ann, "_faiss", _no_library)
    with caplog.at_level("WARNING"):
        absent = load_index(path, DUE)
    assert absent.fact_search.index is None and "pip install 'dgrag[ann]'" in absent.fact_search.how
    assert "fact_ann_min_vectors" in caplog.text
    _same(_recall_all(absent, queries, 30, 400), _recall_all(plain, queries, 30, 0))
    with Store(path, readonly=True) as st:
        assert st.ann.header("fact") is None


def _no_library():
    raise ImportError("No module named 'faiss'")


def test_the_retriever_passes_the_breadth_and_exact_results_stay(tmp_path):
    from dgrag.config import RetrievalConfig
    from dgrag.retrieve.retriever import Retriever

    path = tmp_path / "facts.db"
    _file_with_facts(path, np.random.default_rng(8), 200)
    settings = Settings(db_path=path, fact_ann_min_vectors=10 if ann.available() else 10**9, index_threads=1,
                        retrieval=RetrievalConfig(diffusion_engine="python"))  # no JIT warm-up: not needed here
    r = Retriever(settings, embedder=_Fixed())
    li = r.handle.get()
    assert (li.fact_search.index is not None) == ann.available()
    approx = r._recall(li, _Fixed.vector, settings.retrieval.merged({"fact_ann_breadth": 200}))["fact"]
    exact = r._recall(li, _Fixed.vector, settings.retrieval.merged({"fact_ann_breadth": 0}))["fact"]
    assert approx.positions.tolist() == exact.positions.tolist() and approx.size == 100  # fact_candidate_k
    np.testing.assert_allclose(approx.cosine, exact.cosine, rtol=0, atol=1e-6)


class _Fixed:
    """A query embedder of the test file's model: every query is one fixed unit vector."""

    model_id = "test/unit"
    vector = unit(np.random.default_rng(9), 1)[0]

    def embed_queries(self, texts):
        return np.tile(self.vector, (len(texts), 1))


@ann_lib
def test_a_snapshot_copy_starts_with_the_index(tmp_path):
    from dgrag.retrieve.loaded import ensure_fact_ann, load_index

    path = tmp_path / "facts.db"
    _file_with_facts(path, np.random.default_rng(10), 300)
    assert ensure_fact_ann(path, Settings()) is None  # not due: nothing built
    assert "built in" in ensure_fact_ann(path, DUE)  # what `dgrag snapshot` does (on its copy)
    with Store(path, readonly=True) as st:
        st.copy_to(tmp_path / "copy.db", int8=False)  # compact, float32: the same vector values
    assert "from the file" in load_index(tmp_path / "copy.db", DUE).fact_search.how


@ann_lib
def test_stats_show_the_stored_index(tmp_path, capsys):
    from dgrag.cli import main
    from dgrag.retrieve.loaded import ensure_fact_ann

    path = tmp_path / "facts.db"
    _file_with_facts(path, np.random.default_rng(12), 300)
    with Store(path, readonly=True) as st:
        assert st.stats()["ann"] == {}
    ensure_fact_ann(path, DUE)
    with Store(path, readonly=True) as st:
        a = st.stats()["ann"]["fact"]
    assert a["vectors"] == 300 and a["bytes"] > 0 and a["library"]
    assert main(["stats", "--db", str(path)]) == 0
    assert f"approximate index: fact, {a['library']} over 300 vectors" in capsys.readouterr().out


@ann_lib
def test_bench_scale_reports_exact_and_approximate_side_by_side(tmp_path, capsys):
    from bench.scale import main

    _file_with_facts(tmp_path / "parents.db", np.random.default_rng(11), 300)
    assert main(["--index", str(tmp_path / "parents.db"), "--sizes", "1500", "--breadths", "150", "--held-out", "5",
                 "--questions", "", "--threads", "1", "--work", str(tmp_path / "w"), "--json", str(tmp_path / "r.json")]) == 0
    import json

    row = json.loads((tmp_path / "r.json").read_text())["sizes"]["1500"]
    assert row["read_back"].endswith("from the file") and row["index_mb"] > 0
    assert row["file_mb_with_index"] > row["file_mb_without_index"]
    ann_row = row["held_out"]["ann_150"]
    assert 0 < ann_row["recall_at_100"]["mean"] <= 1 and ann_row["cpu_p50_ms"] > 0
    assert "| 1,500 |" in capsys.readouterr().out
