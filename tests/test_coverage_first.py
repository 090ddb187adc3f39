"""The batched build covers every page first: file and chunk vectors for all pages, then code,
tables and images, then the semantic layer; its status (banner, /health) says what each stage
covers. Checked step by step on the fixture corpus, with a model-free embedder."""
from __future__ import annotations

from pathlib import Path

from dgrag.config import Settings
from dgrag.store import Store
from dgrag.workflows import Progressive, Writer, enrich_index, index_docs
from dgrag.workflows.progressive import MEDIA, PAGES, SEMANTIC

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "docs"


def _state(db: Path) -> dict:
    """Per node type: (nodes, nodes with a vector); pages in the index; facts with a vector."""
    with Store(db, readonly=True) as st:
        rows = st.con.execute("SELECT type, count(*), count(embed_hash) FROM nodes GROUP BY type").fetchall()
        pages = {p for (p,) in st.con.execute("SELECT source_path FROM nodes WHERE type = 'file'")}
        facts = st.con.execute("SELECT count(*) FROM facts WHERE embedded = 1").fetchone()[0]
        vectors = st.vectors.counts()
    return {"nodes": {t: (n, v) for t, n, v in rows}, "pages": pages, "facts": facts, "vectors": vectors}


def test_every_page_is_answerable_before_code_tables_images_and_the_semantic_layer(tmp_path):
    settings = Settings(db_path=tmp_path / "demo.db", background_batch_pages=4, embedder="hash")
    build = Progressive(settings, FIXTURE, "", Writer())
    stages = [s.stage for s in build.steps]
    n = len(build.batches)
    assert n >= 3 and stages == [PAGES] * n + [MEDIA] + [SEMANTIC] * n
    seen = []
    for step in build.steps:
        status = build.run(max_batches=1)
        assert status.error == "" and status.batches_done == step.number
        seen.append((step, _state(settings.db_path), status.as_dict(), status.banner()))

    all_pages = {p for b in build.batches for p in b.pages}
    for step, state, status, banner in seen:
        nodes = state["nodes"]
        if step.stage == PAGES:  # the pages so far, with their file and chunk vectors; nothing else yet
            upto = {p for b in build.batches[:step.batch.number] for p in b.pages}
            assert state["pages"] == upto and status["pages_done"] == len(upto)
            assert all(nodes[t][1] == nodes[t][0] > 0 for t in ("file", "chunk"))
            assert all(nodes.get(t, (0, 0))[1] == 0 for t in ("code", "table", "image"))
            assert state["facts"] == 0 and "entity" not in nodes
            assert status["stages"][MEDIA][0] == status["stages"][SEMANTIC][0] == 0
            assert f"{len(upto)} of {len(all_pages)} pages done" in banner
        elif step.stage == MEDIA:  # every page's code, tables and images, still no semantic layer
            assert state["pages"] == all_pages
            assert all(nodes[t][1] == nodes[t][0] > 0 for t in ("code", "table", "image"))
            assert state["facts"] == 0
            assert status["stages"][MEDIA] == (len(all_pages), len(all_pages))
            assert f"{MEDIA} {len(all_pages)}/{len(all_pages)} pages; {SEMANTIC} 0/" in banner
    semantic = [(s, st) for s, st, *_ in seen if s.stage == SEMANTIC]
    facts = [st["facts"] for _, st in semantic]
    assert facts[0] > 0 and facts == sorted(facts)  # the semantic layer grows slice by slice
    assert seen[-1][2]["finished"] and seen[-1][3] == ""  # done: no banner
    assert seen[-2][2]["stages"][SEMANTIC][0] < len(all_pages) and f"{SEMANTIC} " in seen[-2][3]

    whole = tmp_path / "whole.db"  # the same index as one `dgrag index` + `dgrag enrich`
    s = Settings(db_path=whole, docs_root=FIXTURE, embedder="hash")
    with Store(whole) as st:
        index_docs(s, st)
        enrich_index(s, st, llm=None)
    got, want = _state(settings.db_path), _state(whole)
    assert got == want


def test_a_record_from_before_the_stages_is_read_as_batches(tmp_path):
    """A file whose build recorded k whole batches (each had everything): k steps done, and a
    finished one stays finished."""
    import json

    from dgrag.workflows.progressive import META_KEY

    settings = Settings(db_path=tmp_path / "demo.db", background_batch_pages=4, embedder="hash")
    build = Progressive(settings, FIXTURE, "", Writer())
    for done, want in ((1, 1), (len(build.batches), len(build.steps))):
        with Store(settings.db_path) as st, st.transaction():
            st.meta.set(META_KEY, json.dumps({"plan": build.plan, "batches_done": done,
                                              "batches": len(build.batches)}))
        assert Progressive(settings, FIXTURE, "", Writer()).recorded() == want
    assert Progressive(settings, FIXTURE, "", Writer()).finished
