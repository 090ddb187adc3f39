"""Importing MuSiQue (HippoRAG's corpus and OpenIE formats) into the index."""
from __future__ import annotations

import json

import pytest

from conftest import MUSIQUE
from dgrag.config import Settings
from dgrag.enrich import semantic_layer
from dgrag.enrich.importers import import_openie, import_passages
from dgrag.store import Store

CORPUS = MUSIQUE / "musique_train_corpus.json"
OPENIE = MUSIQUE / "openie_musique_train_results_ner_gpt-3.5-turbo-1106_1890.json"
pytestmark = pytest.mark.skipif(not OPENIE.exists(), reason="../shared/bench/musique is not present")


def test_musique_passages_and_openie(tmp_path):
    db = tmp_path / "mq.db"
    with Store(db) as st:
        first = import_passages(st, CORPUS)
        again = import_passages(st, CORPUS)
        oie = import_openie(st, OPENIE)
        edges = semantic_layer.finalize(st, Settings(db_path=db), None)["edges"]
        stats = st.stats()
        idx = st.con.execute("SELECT meta FROM nodes WHERE type='chunk' ORDER BY rowid LIMIT 1").fetchone()[0]
    assert first["added"] == 1890 and again == {**again, "added": 0, "unchanged": 1890}
    assert stats["nodes"]["file"] == 1890 and stats["nodes"]["chunk"] == 1890
    assert json.loads(idx)["corpus_idx"] == 0
    assert oie["matched"] == 1890 and oie["n_unmatched"] == 0
    # 17,419 triples in the file; 185 are not (head, relation, tail) and are reported
    assert oie["triples"] + oie["malformed_triples"] == 17419 and oie["malformed_triples"] == 185
    assert stats["nodes"]["entity"] > 15000
    assert edges["passage"] > 20000 and edges["semantic"] > 15000


def test_python_literal_strings_and_nan(tmp_path):
    corpus = tmp_path / "c.json"
    corpus.write_text(json.dumps([{"title": "A", "text": "Alpha is near Beta."}, {"title": "B", "text": "Beta."}]))
    oie = tmp_path / "o.json"
    oie.write_text('{"docs": [{"title": "A", "extracted_entities": "[\'Alpha\', \'Beta\']", '
                   '"extracted_triples": "[[\'Alpha\', \'is near\', \'Beta\']]"}, '
                   '{"title": "B", "extracted_entities": NaN, "extracted_triples": [["Beta", NaN, "x"]]}]}')
    with Store(tmp_path / "t.db") as st:
        import_passages(st, corpus)
        out = import_openie(st, oie)
        facts = st.con.execute("SELECT text FROM facts").fetchall()
    assert out["matched"] == 2 and out["triples"] == 1 and out["malformed_triples"] == 1
    assert facts == [("(Alpha, is near, Beta)",)]
