"""Enrichment against a real loopback OpenAI-protocol server, and the offline path."""
from __future__ import annotations

import json


from dgrag.backends.llm import LLM
from dgrag.cli import main
from dgrag.enrich import semantic_layer
from dgrag.enrich.runner import StoreCache, run_step
from dgrag.store import Store


def responder(request: dict):
    """Answers like a small, well-behaved model: by the kind of prompt it was sent."""
    content = request["messages"][-1]["content"]
    text = content if isinstance(content, str) else " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    if '"entities"' in text or "entities" in text.lower() and "triples" in text.lower():
        return json.dumps({
            "entities": [["ACE Tools", "command line tool of ArkUI-X"], ["ACE tool", "the ACE command line tool"],
                         ["ArkUI-X", "cross-platform UI framework"], ["@State", "state decorator"]],
            "triples": [["ACE Tools", "builds apps for", "ArkUI-X"], ["ArkUI-X", "uses", "@State"]]})
    if any(isinstance(p, dict) and p.get("type") == "image_url" for p in (content if isinstance(content, list) else [])):
        return "A screenshot of the DevEco Studio dialog."
    return "LLM summary of this section."


def _llm_env(monkeypatch, server):
    monkeypatch.setenv("DGRAG_LLM_BASE_URL", server.url + "/v1")
    monkeypatch.setenv("DGRAG_LLM_MODEL", "test-model")
    monkeypatch.setenv("DGRAG_LLM_API_KEY", "sk-secret-123")
    monkeypatch.setenv("DGRAG_LLM_TIMEOUT_S", "2")
    monkeypatch.setenv("DGRAG_LLM_BACKOFF_S", "0.01")
    monkeypatch.setenv("DGRAG_LLM_MAX_RETRIES", "2")


def test_enrich_all_online_fills_the_semantic_layer_and_reruns_free(indexed, openai_server_factory,
                                                                     monkeypatch, capsys):
    server = openai_server_factory(responder)
    _llm_env(monkeypatch, server)
    assert main(["enrich", "--db", str(indexed.db_path), "--step", "all", "--json", "-q", "--max-workers", "4"]) == 0
    out = json.loads(capsys.readouterr().out)
    for step in ("summaries", "captions", "openie"):
        assert out[step]["failed"] == 0 and out[step]["done"] == out[step]["total"] > 0
    stats = out["stats"]
    assert stats["nodes"]["entity"] == 4 and stats["vectors"]["entity"] == 4
    assert stats["vectors"]["fact"] > 0
    assert stats["edges"]["semantic"] >= 2 and stats["edges"]["passage"] > 0 and stats["edges"]["synonymy"] >= 1
    with Store(indexed.db_path, readonly=True) as st:
        assert st.con.execute("SELECT count(*) FROM nodes WHERE summary_source='llm'").fetchone()[0] > 0
        raw = st.path.read_bytes()
    assert b"sk-secret-123" not in raw  # secrets never land in the index file
    calls = server.chat_calls
    assert calls > 0
    assert main(["enrich", "--db", str(indexed.db_path), "--step", "all", "--json", "-q"]) == 0
    assert server.chat_calls == calls  # a second run makes no HTTP call


def test_faults_lose_nothing_and_retry_failed_completes(indexed, openai_server_factory, monkeypatch):
    server = openai_server_factory(responder, fault_rate=0.3, fault_kinds=["429", "500", "garbage", "truncated"],
                                   seed=7)
    # the first 12 requests fail: the 4 workers' first items spend their 3 attempts on them, so some
    # items exhaust their retries whatever order the random faults after them fall in (under load
    # the workers' requests interleave differently, and the seeded faults alone may spare every item)
    server.add_faults(*["500"] * 12)
    _llm_env(monkeypatch, server)
    from dgrag.config import Settings

    settings = Settings.from_env(db_path=indexed.db_path)
    with Store(indexed.db_path) as store:
        llm = LLM.from_settings(settings, StoreCache(store))
        first = run_step(store, settings, "openie", llm, max_workers=4)
        assert first.done + first.failed == first.total
        assert first.failed > 0  # with 2 retries, some items exhaust them
        status = store.logs.enrich_counts()["openie"]
        assert status.get("done", 0) + status.get("failed", 0) == first.total
        server.set_fault_rate(0.0)
        second = run_step(store, settings, "openie", llm, retry_failed=True, max_workers=4)
        assert second.total == first.failed and second.failed == 0
        assert store.logs.enrich_counts()["openie"] == {"done": first.total}
        reasons = " ".join(r for _, r in first.failures)
        assert "sk-secret-123" not in reasons


def test_offline_path_gives_entities_facts_and_exact_match(indexed, embedder):
    from dgrag.config import Settings
    from dgrag.retrieve.retriever import Retriever

    settings = Settings(db_path=indexed.db_path)
    with Store(indexed.db_path) as store:
        reports = {s: run_step(store, settings, s, None) for s in ("summaries", "captions", "openie")}
        assert reports["openie"].offline == reports["openie"].total > 20
        semantic_layer.finalize(store, settings, embedder)
        stats = store.stats()
        covered = store.con.execute("SELECT count(DISTINCT chunk) FROM facts").fetchone()[0]
    assert stats["nodes"]["entity"] > 50 and stats["vectors"]["fact"] > 50
    assert stats["semantic"]["facts"] == stats["semantic"]["facts_offline"] == stats["vectors"]["fact"]
    assert covered >= 0.7 * reports["openie"].total  # most chunks get facts, both languages
    res = Retriever(settings, embedder=embedder).retrieve("What does @State do?", {"verbose": True})
    exact = res["trace"]["exact_entities"]
    assert exact, "the decorator in the question hits its entity directly"


def test_dry_run_sends_nothing(indexed, openai_server_factory, monkeypatch, capsys):
    server = openai_server_factory(responder)
    _llm_env(monkeypatch, server)
    assert main(["enrich", "--db", str(indexed.db_path), "--step", "summaries", "--dry-run", "--json", "-q"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["summaries"]["total"] > 0 and out["summaries"]["est_tokens"] > 0 and out["summaries"]["sample"]
    assert server.chat_calls == 0


def test_deleting_a_page_drops_only_its_entities(indexed, embedder):
    from dgrag.config import Settings
    from dgrag.ingest.pipeline import index_folder

    settings = Settings(db_path=indexed.db_path, docs_root=indexed.docs_root)
    with Store(indexed.db_path) as store:
        run_step(store, settings, "openie", None)
        semantic_layer.finalize(store, settings, None)
        before = store.stats()["nodes"]["entity"]
        (indexed.docs_root / "en/application-dev/reference/arkui-ts/ts-universal-events-touch.md").unlink()
        index_folder(settings, store, embedder)
        semantic_layer.finalize(store, settings, None)
        after = store.stats()["nodes"]["entity"]
        orphans = store.con.execute(
            "SELECT count(*) FROM nodes WHERE type='entity' AND rowid NOT IN (SELECT entity FROM chunk_entities)"
        ).fetchone()[0]
    assert 0 < after < before and orphans == 0


def test_an_entity_is_embedded_once_by_its_name(indexed, embedder):
    """The entity's vector embeds its name, and synonymy reuses it instead of embedding the
    name a second time (the tokens a whole-corpus build spends, docs/benchmarks.md, "Indexing throughput")."""
    from collections import Counter

    from dgrag.backends.embedders import Embedder
    from dgrag.config import Settings

    class Recording(Embedder):
        model_id, dim = embedder.model_id, embedder.dim
        seen: list[str] = []

        def embed_passages(self, texts):
            self.seen.extend(texts)
            return embedder.embed_passages(texts)

    settings = Settings(db_path=indexed.db_path)
    with Store(indexed.db_path) as store:
        run_step(store, settings, "openie", None)
        rep = semantic_layer.finalize(store, settings, Recording())
        names = dict(store.con.execute("SELECT rowid, entity_name FROM nodes WHERE type='entity'").fetchall())
        ent_ids, ent_mat = store.vectors.matrix("entity")
        tables = {n for (n,) in store.con.execute("SELECT name FROM sqlite_master WHERE name LIKE 'vec_entity%'")}
    seen = Counter(Recording.seen)
    assert len(names) > 50 and set(names.values()) <= set(seen)
    probes = set(semantic_layer.PROBE_TERMS.read_text(encoding="utf-8").split())  # the threshold's own texts
    assert max(seen[n] for n in set(names.values()) - probes) == 1  # each name embedded once
    assert sorted(ent_ids.tolist()) == sorted(names) and ent_mat.shape[0] == len(names)
    assert "vec_entity_name" not in tables  # synonymy reads vec_entity: each vector stored once
