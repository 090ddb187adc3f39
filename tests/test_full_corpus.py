"""The whole shared corpus (400 pages, en + zh-cn), indexed end to end.

Vectors come from the OpenAI-compatible embeddings endpoint of the loopback server (the
path a user takes to a TEI / vLLM cluster), which keeps this test minutes, not an hour of
CPU embedding; everything else is the real pipeline on the real corpus.
"""
from __future__ import annotations

import json

import pytest

from conftest import CORPUS
from dgrag.cli import main
from dgrag.store import Store

pytestmark = pytest.mark.skipif(not CORPUS.is_dir(), reason="data/arkui-x-docs is not present")


def test_index_the_whole_shared_corpus(tmp_path, openai_server_factory, monkeypatch, capsys):
    server = openai_server_factory(embedding_dim=384)
    monkeypatch.setenv("DGRAG_EMBEDDER", "openai")
    monkeypatch.setenv("DGRAG_EMBEDDING_BASE_URL", server.url + "/v1")
    monkeypatch.setenv("DGRAG_EMBEDDING_MODEL", "loopback-hash-384")
    monkeypatch.setenv("DGRAG_EMBEDDING_BATCH_SIZE", "256")
    db = tmp_path / "corpus.db"
    assert main(["index", str(CORPUS), "--db", str(db), "-q", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    report, stats = out["report"], out["stats"]
    assert stats["nodes"]["file"] == 402  # 400 pages + the two root READMEs
    assert stats["nodes"]["chunk"] > 5000 and stats["nodes"]["code"] > 4000 and stats["nodes"]["table"] > 5000
    assert stats["nodes"]["image"] > 50 and report["images_merged"] > 50
    assert stats["edges"]["jump"] > 2500
    for t in ("file", "chunk", "code", "table", "image"):
        assert stats["vectors"][t] == stats["nodes"][t]
    assert report["skipped"] == []
    assert any("broken link" in p for p in report["problems"])
    with Store(db, readonly=True) as st:
        assert st.integrity_check() == "ok"
    # a second run reads every page, changes nothing, embeds nothing
    calls = server.embedding_calls
    assert main(["index", str(CORPUS), "--db", str(db), "-q", "--json"]) == 0
    again = json.loads(capsys.readouterr().out)["report"]
    assert again["files_unchanged"] == 402 and again["embedded"] == 0 and server.embedding_calls == calls
