"""The compact copy (`dgrag snapshot`, `Store.copy_to`): facts sharing a vector store it once,
PNG images become lossless WebP, merged near-duplicates lose their unused bytes, the graph
snapshot is deflated, pages are 16 KiB -- and every reader sees what it saw in the original."""
from __future__ import annotations

import io
import zipfile

import numpy as np
from PIL import Image

from dgrag.store import Store
from dgrag.store.store import PAGE_SIZES

DIM = 16


def _unit(rng, n: int) -> np.ndarray:
    v = rng.standard_normal((n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _png(seed: int, size=(64, 48), mode="RGBA") -> bytes:
    rng = np.random.default_rng(seed)
    arr = (rng.integers(0, 4, (size[1], size[0], 4)) * 60).astype(np.uint8)  # few colours: compresses
    out = io.BytesIO()
    Image.fromarray(arr, "RGBA").convert(mode).save(out, "PNG")
    return out.getvalue()


def _source(path, rng) -> dict:
    """A float32 file with 30 facts of which 10 reuse another fact's vector, two images (one a
    merged near-duplicate of the other) and a graph snapshot."""
    vecs = _unit(rng, 20)
    fact_vecs = np.concatenate([vecs, vecs[:10]])  # facts 21..30 share the vectors of 1..10
    with Store(path) as st:
        st.bind_embedder("hash/test", DIM)
        with st.transaction():
            st.con.executemany("INSERT INTO facts(rowid, head, relation, tail, text, chunk, source, embedded) "
                               "VALUES (?, 1, 'r', 2, ?, ?, 'offline', 1)",
                               [(i, f"fact {(i - 1) % 20}", 100 + i) for i in range(1, 31)])
            st.vectors.put_bulk("fact", range(1, 31), fact_vecs)
            st.images.put("a" * 64, _png(1), "png", 64, 48, "0", "0")
            st.images.put("b" * 64, _png(2), "png", 32, 24, "0", "0")
            st.images.merge("b" * 64, "a" * 64)
        buf = io.BytesIO()
        np.savez(buf, rowids=np.arange(5000, dtype=np.int64), indptr=np.zeros(5001, dtype=np.int64))
        assert st.write_graph_cache(st.meta.graph_version(), buf.getvalue())
        return {"facts": fact_vecs, "graph": buf.getvalue(), "version": st.meta.graph_version()}


def test_a_compact_copy_reads_as_the_original(tmp_path):
    rng = np.random.default_rng(7)
    held = _source(tmp_path / "src.db", rng)
    with Store(tmp_path / "src.db") as st:
        st.copy_to(tmp_path / "small.db", int8=True)
        knn_before = st.vectors.knn("fact", held["facts"][3], 4)
    with Store(tmp_path / "small.db", readonly=True) as st:
        assert st.con.execute("PRAGMA page_size").fetchone()[0] == PAGE_SIZES[0]  # a small file: 4 KiB
        assert st.con.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
        assert st.con.execute("SELECT count(*) FROM vec_fact").fetchone()[0] == 20  # each vector once
        assert st.vectors.counts()["fact"] == 30
        ids, mat = st.vectors.matrix("fact")
        order = np.argsort(ids)
        assert ids[order].tolist() == list(range(1, 31))
        assert np.sum(mat[order] * held["facts"], axis=1).min() > 0.999
        assert np.array_equal(mat[order][20:], mat[order][:10])  # an alias reads its owner's vector
        knn = st.vectors.knn("fact", held["facts"][3], 4)  # vec0's KNN, aliases included
        assert {r for r, _ in knn[:2]} == {r for r, _ in knn_before[:2]} == {4, 24}
        assert len(knn) == 4 and knn[0][1] > 0.999
        data, fmt = st.images.data("a" * 64)
        assert fmt == "webp"
        want = Image.open(io.BytesIO(_png(1))).convert("RGBA").tobytes()
        assert Image.open(io.BytesIO(data)).convert("RGBA").tobytes() == want  # lossless
        assert st.images.data("b" * 64) == (data, fmt)  # the duplicate is served as its representative
        assert st.con.execute("SELECT length(data) FROM images WHERE sha256 = ?", ("b" * 64,)).fetchone()[0] == 0
        graph = st.meta.read_graph_cache(held["version"])  # same version: the snapshot still holds
    assert len(graph) < len(held["graph"])
    with zipfile.ZipFile(io.BytesIO(graph)) as z:
        assert all(i.compress_type == zipfile.ZIP_DEFLATED for i in z.infolist())
    with np.load(io.BytesIO(graph)) as new, np.load(io.BytesIO(held["graph"])) as old:
        assert all(np.array_equal(new[k], old[k]) for k in old.files)


def test_deleting_a_fact_that_holds_a_shared_vector_hands_it_over(tmp_path):
    rng = np.random.default_rng(8)
    held = _source(tmp_path / "src.db", rng)
    with Store(tmp_path / "src.db") as st:
        st.copy_to(tmp_path / "small.db", int8=False)  # float32: the vectors compare exactly
    with Store(tmp_path / "small.db") as st:
        with st.transaction():
            st.vectors.delete_facts([1, 25])  # 1 holds the vector of 21; 25 is an alias of 5
        ids, mat = st.vectors.matrix("fact")
        got = dict(zip(ids.tolist(), mat))
        assert sorted(got) == [i for i in range(2, 31) if i != 25]
        assert np.array_equal(got[21], held["facts"][0]) and np.array_equal(got[5], held["facts"][4])
        with st.transaction():  # a fact given a vector of its own is no alias any more
            st.vectors.put("fact", [22], held["facts"][5:6], [""])
        assert np.array_equal(dict(zip(*st.vectors.matrix("fact")))[22], held["facts"][5])
        assert st.con.execute("SELECT count(*) FROM fact_vector_alias WHERE fact = 22").fetchone()[0] == 0


def test_an_image_webp_cannot_hold_exactly_stays_as_it_is():
    from dgrag.store.images import webp_lossless

    arr = (np.arange(64 * 64, dtype=np.uint16).reshape(64, 64) * 16)
    out = io.BytesIO()
    Image.fromarray(arr).save(out, "PNG")  # uint16: mode I;16
    assert webp_lossless(out.getvalue()) is None  # 16-bit: WebP would round it
    assert webp_lossless(b"not an image") is None
    small = _png(3, mode="P")
    webp = webp_lossless(small)
    assert webp is None or (len(webp) < len(small) and Image.open(io.BytesIO(webp)).convert("RGBA").tobytes()
                            == Image.open(io.BytesIO(small)).convert("RGBA").tobytes())


def test_dgrag_snapshot_writes_the_compact_int8_file_and_it_answers_alike(tmp_path, fixture_index, capsys):
    from dgrag.cli import main
    from dgrag.config import Settings
    from dgrag.ingest import context
    from dgrag.retrieve.retriever import Retriever

    src = fixture_index[0].db_path
    small, wide = tmp_path / "small.db", tmp_path / "wide.db"
    assert main(["snapshot", str(small), "--db", str(src)]) == 0
    assert main(["snapshot", str(wide), "--db", str(src), "--float32"]) == 0
    with Store(small, readonly=True) as st, Store(wide, readonly=True) as f32, Store(src, readonly=True) as orig:
        assert st.vectors.storage("chunk") == "int8" and st.vectors.centre_of("chunk") is not None
        assert f32.vectors.storage("chunk") == "float32" and f32.vectors.centre_of("chunk") is None
        assert st.con.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
        assert st.con.execute("SELECT count(*) FROM nodes WHERE source_url IS NULL AND type != 'entity'"
                              ).fetchone()[0] > 0  # the template gives them back
        rows = st.nodes.of_type(["code", "table", "chunk"])
        a, b = st.nodes.by_rowids(rows), orig.nodes.by_rowids(rows)
        assert [n["source_url"] for n in a] == [n["source_url"] for n in b]
        context.attach(st, a, 15)
        context.attach(orig, b, 15)
        assert [context.of(n) for n in a] == [context.of(n) for n in b]
    assert small.stat().st_size < wide.stat().st_size
    questions = ["How do I create an ArkUI-X project?", "two-way synchronization of state variables"]
    for q in questions:
        hits = [[c["id"] for c in Retriever(Settings(db_path=p)).retrieve(q, {"method": "diffusion"})["chunks"][:3]]
                for p in (src, small)]
        assert hits[0] == hits[1]


def test_new_facts_reuse_the_vector_of_their_text_in_a_compact_file(tmp_path):
    """A fact whose text an embedded fact has (its owner's or an alias's) takes that vector; only
    new texts reach the model, each once however the batches fall."""
    from dgrag.backends.embedders import Embedder
    from dgrag.config import Settings
    from dgrag.enrich.semantic_layer import embed_facts

    class Recording(Embedder):
        model_id, dim = "hash/test", DIM
        seen: list[str] = []

        def embed_passages(self, texts):
            self.seen.extend(texts)
            return _unit(np.random.default_rng(len(self.seen)), len(texts))

    rng = np.random.default_rng(9)
    held = _source(tmp_path / "src.db", rng)
    with Store(tmp_path / "src.db") as st:
        st.copy_to(tmp_path / "small.db", int8=False)
    texts = ["fact 3", "fact 14", "new one", "new two", "new one", "fact 3"]
    with Store(tmp_path / "small.db") as st:
        with st.transaction():
            st.con.executemany("INSERT INTO facts(rowid, head, relation, tail, text, chunk, source, embedded) "
                               "VALUES (?, 1, 'r', 2, ?, ?, 'offline', 0)",
                               [(40 + i, t, 200 + i) for i, t in enumerate(texts)])
            st.con.execute("UPDATE facts SET text = 'renamed' WHERE rowid = 4")  # 'fact 3': alias 24 only
        assert embed_facts(st, Recording(), Settings(db_path=tmp_path / "small.db", embedding_batch_size=2)) == 2
        got = dict(zip(*st.vectors.matrix("fact")))
    assert sorted(Recording.seen) == ["new one", "new two"]
    assert np.allclose(got[40], held["facts"][3]) and np.allclose(got[45], held["facts"][3])
    assert np.allclose(got[41], held["facts"][14])
    assert np.array_equal(got[42], got[44]) and not np.allclose(got[42], got[43])


SITE_PAGE = """# Guide

## Install

Run the installer first.

```bash
npm add -D vitepress
```

| option | what |
|---|---|
| base | the base path |

## Use

Nothing here.
"""


def _site(root):
    (root / "docs/.vitepress").mkdir(parents=True)
    (root / "docs/.vitepress/config.mts").write_text("export default { sitemap: { hostname: 'https://h.io' } }\n")
    (root / "docs/guide.md").write_text(SITE_PAGE, encoding="utf-8")
    return root


def _stored(path):
    with Store(path, readonly=True) as st:
        rows = st.con.execute("SELECT type, text, text_in, source_url FROM nodes WHERE type IN ('code', 'table') "
                              "ORDER BY rowid").fetchall()
        index = st.con.execute("SELECT 1 FROM sqlite_master WHERE name = 'nodes_embed_hash'").fetchone()
    return rows, index is not None


def test_a_compact_site_index_stores_code_and_tables_once_and_reads_them_back(tmp_path, hash_embedder):
    """The text of a code block and a table lives in its section's chunk alone and the sections'
    site URLs are derived; every reader sees what the original holds, and a page indexed again
    into the compact copy keeps its code's text and URL when the section around it changes."""
    from dgrag.config import Settings
    from dgrag.ingest.pipeline import index_folder

    root = _site(tmp_path / "site")
    src, small = tmp_path / "src.db", tmp_path / "small.db"
    with Store(src) as st:
        index_folder(Settings(db_path=src, docs_root=root), st, hash_embedder)
        st.copy_to(small)
    rows, has_index = _stored(small)
    assert [(k, t, u) for k, t, _, u in rows] == [("code", "", None), ("table", "", None)]
    assert all(at is not None for _, _, at, _ in rows) and not has_index
    with Store(small, readonly=True) as st, Store(src, readonly=True) as orig:
        ids = orig.nodes.of_type(["file", "chunk", "code", "table"])
        assert st.nodes.by_rowids(ids) == orig.nodes.by_rowids(ids)
        assert st.nodes.page_outline() == orig.nodes.page_outline()
        assert st.nodes.page_sections("docs/guide.md") == orig.nodes.page_sections("docs/guide.md")
        code = [n for n in orig.nodes.by_rowids(ids) if n["type"] == "code"][0]
    assert code["text"] == "npm add -D vitepress" and code["source_url"] == "https://h.io/guide.html#install"

    (root / "docs/guide.md").write_text(SITE_PAGE.replace("Run the installer first.", "Install it."), encoding="utf-8")
    with Store(small) as st:
        rep = index_folder(Settings(db_path=small, docs_root=root), st, hash_embedder)
        after = [n for n in st.nodes.by_rowids(st.nodes.of_type(["code"]))]
    assert rep.files_indexed == 1
    assert [(n["text"], n["source_url"]) for n in after] == [(code["text"], code["source_url"])]
    rows, has_index = _stored(small)
    assert [(k, t, at, u) for k, t, at, u in rows] == [
        ("code", code["text"], None, code["source_url"]), ("table", rows[1][1], None, "https://h.io/guide.html#install")]
    assert rows[1][1].startswith("| option | what |") and has_index  # the first embedding built it again
