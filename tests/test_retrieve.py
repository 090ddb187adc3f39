"""4-stage retrieval on the indexed excerpt: quotas, fields, methods, overrides, trace."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from dgrag.cli import main
from dgrag.config import Settings
from dgrag.errors import ConfigError
from dgrag.retrieve.loaded import IndexHandle
from dgrag.retrieve.retriever import Retriever
from dgrag.store import Store

TIMING = {"stage1_query_embedding", "stage1_recall", "stage2_rerank", "stage3_spread", "stage4_final_rerank", "stage4_merge", "rag_total"}


@pytest.fixture(scope="module")
def retriever(fixture_index, embedder):
    settings, _ = fixture_index
    return Retriever(Settings(db_path=settings.db_path), embedder=embedder)


@pytest.mark.parametrize("method", ["diffusion", "dense", "ppr"])
def test_every_method_fills_quotas_with_cited_items(retriever, method):
    # every medium from any page (the page rule has a test of its own below)
    res = retriever.retrieve("How do I create an application with ACE Tools?", {"method": method, "final_media_pages": 0})
    assert res["method"] == method
    assert 0 < len(res["chunks"]) <= 10
    for key, quota in (("codes", 2), ("tables", 2), ("images", 2)):
        assert len(res[key]) <= quota
    assert res["codes"] and res["images"]
    for item in res["chunks"] + res["codes"] + res["tables"] + res["images"]:
        assert item["id"].split("-")[0] == item["type"]
        assert item["breadcrumb"] and item["source_url"]
    assert set(res["timing"]) == TIMING
    assert "- ID: " + res["chunks"][0]["id"] in res["context"]
    assert "/images/" in res["context"]


def test_english_and_chinese_questions_find_their_sections(retriever):
    en = retriever.retrieve("How do I create an application with ACE Tools?")
    assert any("Creating an Application" in c["breadcrumb"] for c in en["chunks"][:3])
    zh = retriever.retrieve("如何使用 ACE Tools 创建应用？")
    assert zh["chunks"][0]["breadcrumb"] == "ACE Tools快速指南 / 使用说明 / 创建应用"
    # the multilingual embedder reaches across languages too
    assert any(c["language"] == "zh" for c in retriever.retrieve("ACE Tools 快速指南 create demo")["chunks"])


def test_code_comes_from_the_chunks_that_hold_it(retriever, fixture_index):
    res = retriever.retrieve("ace create demo command", {"verbose": True})
    assert res["codes"]
    with Store(fixture_index[0].db_path, readonly=True) as store:
        for code in res["codes"]:
            path = code["graph_path_rowids"]  # seed first, the code block last
            assert len(path) >= 2, code["id"]
            (parent,) = store.nodes.by_rowids([int(path[-2])])
            # reached from the section that holds it: same page, its lines inside the section's
            assert parent["type"] == "chunk" and parent["source_path"] == code["source_path"]
            assert parent["line_start"] <= code["line_start"] <= code["line_end"] <= parent["line_end"]
    # the excerpt holds fewer reachable chunks than the quota of 100: the search runs out first
    assert res["trace"]["stage3"]["stop_reason"] == "exhausted"
    assert set(res["trace"]["routes"]) >= {"fact", "file", "chunk"}


def test_per_request_overrides(retriever):
    res = retriever.retrieve("ArkTS page", {"final_chunk_k": 3, "final_code_k": 1, "final_image_k": 0})
    assert len(res["chunks"]) == 3 and len(res["codes"]) <= 1 and res["images"] == []
    with pytest.raises(ConfigError):
        retriever.retrieve("x", {"no_such_parameter": 1})
    with pytest.raises(ConfigError):
        retriever.retrieve("x", {"method": "magic"})
    # values that would send a kernel into an endless or out-of-bounds run are refused
    for bad in ({"ppr_damping": 1.0}, {"ppr_push_eps": 0}, {"diffusion_max_frontier_size": -5},
                {"diffusion_time_budget_s": "nan"}, {"diffusion_per_node_neighbor_limit": -1}):
        with pytest.raises(ConfigError):
            retriever.retrieve("x", bad)


def test_reload_swaps_the_graph_atomically(fixture_index, tmp_path):
    db = tmp_path / "copy.db"
    shutil.copy(fixture_index[0].db_path, db)
    handle = IndexHandle(db)
    old = handle.get()
    with Store(db) as store, store.transaction():  # a writer drops one page's nodes
        victims = [n["rowid"] for n in store.nodes.by_rowids(old.rowids.tolist()) if n["type"] != "file"][:5]
        store.nodes.delete(victims)
    assert handle.get() is old and old.n_nodes == len(old.rowids)  # readers keep their snapshot whole
    new = handle.reload()
    assert handle.get() is new and handle.generation == 1
    assert new.n_nodes == old.n_nodes - 5 and not set(victims) & set(new.rowids.tolist())
    assert set(victims) <= set(old.rowids.tolist())  # the old snapshot still holds them


def test_cli_query_json_no_llm(fixture_index, capsys):
    rc = main(["query", "如何创建 ArkTS 页面？", "--db", str(fixture_index[0].db_path), "--json", "--no-llm"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["chunks"] and set(out["timing"]) == TIMING
    assert all(i["source_url"].startswith("https://github.com/arkui-x/docs/blob/master/") for i in out["chunks"])


def test_cli_stats_json_shape(fixture_index, capsys):
    assert main(["stats", "--db", str(fixture_index[0].db_path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"index", "nodes", "edges", "vectors", "semantic", "ann", "size_bytes"}
    assert out["ann"] == {}  # no approximate index below fact_ann_min_vectors
    assert out["nodes"]["file"] == 11 and out["vectors"]["chunk"] == out["nodes"]["chunk"]
    assert out["semantic"] == {"facts": 0}  # the fixture index is structural only


def test_sqlite_vec_route_agrees_with_the_in_memory_one(retriever):
    q = "如何使用 ACE Tools 创建应用？"
    a = retriever.retrieve(q, {"method": "dense"})
    b = retriever.retrieve(q, {"method": "dense", "vector_search": "sqlite-vec"})
    assert [c["id"] for c in a["chunks"][:5]] == [c["id"] for c in b["chunks"][:5]]


def test_llm_final_rerank_follows_the_model(fixture_index, embedder, openai_server_factory):
    def ranker(request):
        return '{"ranking": [2, 0]}'

    server = openai_server_factory(ranker)
    s = Settings(db_path=fixture_index[0].db_path, llm_base_url=server.url + "/v1", llm_model="m", llm_timeout_s=5)
    r = Retriever(s, embedder=embedder)
    base = r.retrieve("ACE Tools create", {"final_rerank_backend": "none"})["chunks"]
    llm = r.retrieve("ACE Tools create", {"final_rerank_backend": "llm"})["chunks"]
    assert [c["id"] for c in llm[:2]] == [base[2]["id"], base[0]["id"]]
    assert server.chat_calls == 1


def test_the_graph_snapshot_is_persisted_and_invalidated_by_writes(indexed, embedder):
    from dgrag.ingest.pipeline import index_folder
    from dgrag.retrieve.loaded import load_index
    from dgrag.store import Store

    first = load_index(indexed.db_path)  # builds, then persists the snapshot
    with Store(indexed.db_path, readonly=True) as st:
        version = st.meta.graph_version()
        assert st.meta.read_graph_cache(version) is not None
    again = load_index(indexed.db_path)  # from the snapshot: the same graph
    assert (again.ga.indices == first.ga.indices).all() and again.entity_by_name == first.entity_by_name
    assert (again.fact_rowids == first.fact_rowids).all()
    page = indexed.docs_root / "en/application-dev/quick-start/start-overview.md"
    page.write_text(page.read_text(encoding="utf-8") + "\n## More\n\nSee [ACE](start-with-ace-tools.md).\n",
                    encoding="utf-8")
    with Store(indexed.db_path) as st:
        index_folder(indexed, st, embedder)
        assert st.meta.graph_version() > version and st.meta.read_graph_cache(st.meta.graph_version()) is None
    fresh = load_index(indexed.db_path)
    assert fresh.n_nodes == first.n_nodes + 1 and fresh.n_edges > first.n_edges


def test_a_snapshot_in_a_read_only_folder_serves_alone(fixture_index, embedder, tmp_path, capsys):
    """A replica needs nothing but the file: `dgrag snapshot`, then a read-only copy answers
    the same as the original (its graph from the persisted snapshot: nothing to write). Float32
    vectors, so that "the same" is exact (the int8 default's recall is paired in test_compact_file)."""
    settings, _ = fixture_index
    folder = tmp_path / "replica"
    folder.mkdir()
    assert main(["snapshot", "--float32", str(folder / "index.db"), "--db", str(settings.db_path)]) == 0
    assert "DGRAG_DB_PATH=" in capsys.readouterr().out
    assert main(["snapshot", str(folder / "index.db"), "--db", str(settings.db_path)]) == 2  # never overwrites
    (folder / "index.db").chmod(0o444)
    folder.chmod(0o555)
    try:
        replica = Retriever(Settings(db_path=folder / "index.db"), embedder=embedder)
        original = Retriever(Settings(db_path=settings.db_path), embedder=embedder)
        q = "How do I create an application with ACE Tools?"
        assert [c["id"] for c in replica.retrieve(q)["chunks"]] == [c["id"] for c in original.retrieve(q)["chunks"]]
        assert sorted(p.name for p in folder.iterdir()) == ["index.db"]  # no journal, no cache written
    finally:
        folder.chmod(0o755)


def test_ppr_without_facts_gives_the_dense_ranking(retriever):
    # the excerpt index has no semantic layer: no fact or entity can seed the walk
    assert retriever.handle.get().fact_vec.shape[0] == 0
    q = "How do I create an application with ACE Tools?"
    dense, ppr = retriever.retrieve(q, {"method": "dense"}), retriever.retrieve(q, {"method": "ppr"})
    assert ppr["chunks"] and [c["id"] for c in ppr["chunks"]] == [c["id"] for c in dense["chunks"]]


def test_dense_agreement_is_the_share_of_the_walks_pages_dense_ranks():
    from dgrag.config import RetrievalConfig
    from dgrag.retrieve.methods import dense_agreement

    def cfg(walk_k, dense_k):
        return RetrievalConfig(diffusion_trust_k=walk_k, diffusion_trust_dense_k=dense_k)

    page = np.array([0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9])  # node -> page; nodes 0 and 1 share page 0
    dense = np.array([1, 2, 3, 4, 5, 6])                 # pages 0, 1, 2, 3, 4, 5
    walk = [(0, 0.9), (1, 0.8), (8, 0.7), (5, 0.6)]      # pages 0, 0, 7, 4
    assert dense_agreement(page, cfg(3, 4), dense, walk) == 0.5  # pages {0, 7}: 1 of 2
    assert dense_agreement(page, cfg(4, 4), dense, walk) == 1 / 3  # {0, 7, 4}; 4 is dense's 5th
    assert dense_agreement(page, cfg(4, 5), dense, walk) == 2 / 3
    assert dense_agreement(page, cfg(4, 0), dense, walk) == 0.0  # dense's best 0: nothing to agree with
    assert dense_agreement(page, cfg(4, 5), dense, [(9, 1.0), (10, 0.5)]) == 0.0  # never ranked
    assert dense_agreement(page, cfg(4, 5), dense, []) == 0.0


def test_code_tables_and_images_earn_their_slot_beside_the_first_chunks(retriever):
    q = "How do I create an application with ACE Tools?"
    everything = retriever.retrieve(q, {"final_media_pages": 0})
    narrow = retriever.retrieve(q, {"final_media_pages": 1})
    first = narrow["chunks"][0]["source_path"]
    assert narrow["chunks"] == everything["chunks"]  # only the media are filtered
    assert all(i["source_path"] == first for k in ("codes", "tables") for i in narrow[k])
    media = ("codes", "tables", "images")
    assert sum(len(everything[k]) for k in media) > sum(len(narrow[k]) for k in media)
    assert any(i["source_path"] != first for k in ("codes", "tables") for i in everything[k])
    off = retriever.retrieve(q, {"final_media_pages": 1, "final_modality_floor": 2.0})  # above any cosine
    assert off["chunks"] and not any(off[k] for k in media)


def test_stage3_reads_stage_ones_cosines_and_computes_the_rest_alike(retriever, embedder):
    """The question's cosines are computed for the nodes asked about and kept: stage 3 with
    the chunk and file cosines stage 1 left, the rest computed as the diffusion reaches them,
    gives what it gives computing every node's cosine first."""
    from dgrag.config import RetrievalConfig
    from dgrag.retrieve.loaded import QueryCosines
    from dgrag.retrieve.methods import run_diffusion
    from dgrag.retrieve.stages import recall_facts, recall_nodes

    li = retriever.handle.get()
    for q in ("How do I create an application with ACE Tools?", "如何实现页面跳转？"):
        qv = embedder.embed_queries([q])[0].astype(np.float32)
        every = np.clip(li.similarity(qv), 0.0, None)
        cos = QueryCosines(li, qv)
        routes = {"fact": recall_facts(li, qv, 20), "file": recall_nodes(li, qv, "file", 10, cos),
                  "chunk": recall_nodes(li, qv, "chunk", 30, cos)}
        assert routes["chunk"].positions.tolist() == recall_nodes(li, qv, "chunk", 30).positions.tolist()
        assert np.isnan(cos.lazy()[li.type_rows("code")]).all()  # not asked for yet
        picked = np.arange(0, li.n_nodes, 7)
        assert np.allclose(cos[picked], every[picked], atol=1e-6)
        lazy = RetrievalConfig(verbose=True, diffusion_lazy_cosine_min_vectors=0)  # the fixture is small
        shared = run_diffusion(li, lazy, qv, routes, [], q, cos)
        alone = run_diffusion(li, RetrievalConfig(verbose=True), qv, routes, [], q)  # one matmul for all
        for kind, items in alone.ranked.items():  # the same nodes; scores to float32's sums
            assert [n for n, _ in shared.ranked[kind]] == [n for n, _ in items]
            assert np.allclose([s for _, s in shared.ranked[kind]], [s for _, s in items], rtol=1e-6, atol=1e-6)
        assert shared.paths == alone.paths
        sims = shared.trace["similarity"]
        assert sims and all(abs(v - round(float(every[n]), 4)) < 2e-4 for n, v in sims.items()
                            if n not in set(routes["chunk"].positions.tolist()))
