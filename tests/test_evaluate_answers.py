"""`dgrag eval --answers`: answer recall offline beside Recall@k, and the agent's exact match /
token F1 / rounds / tokens with a scripted model, on a small MuSiQue index (the first 60 passages,
the 3 questions whose gold passages are among them)."""
from __future__ import annotations

import json

import pytest

from conftest import MUSIQUE
from dgrag.cli import main
from dgrag.evaluation.answers import contains_answer, exact_match, gold_answers, normalize, token_f1

pytestmark = pytest.mark.skipif(not MUSIQUE.is_dir(), reason="needs ../shared/bench/musique")


@pytest.fixture(scope="module")
def small_musique(tmp_path_factory):
    root = tmp_path_factory.mktemp("mq")
    corpus = json.loads((MUSIQUE / "musique_train_corpus.json").read_text(encoding="utf-8"))[:60]
    (root / "corpus.json").write_text(json.dumps(corpus), encoding="utf-8")
    questions = [json.loads(line) for line in (MUSIQUE / "musique_train_gold.jsonl").read_text().splitlines()]
    small = [q for q in questions if max(q["gold_corpus_idx"]) < 60]
    (root / "q.jsonl").write_text("\n".join(json.dumps(q) for q in small), encoding="utf-8")
    assert main(["import-passages", str(root / "corpus.json"), "--db", str(root / "mq.db"), "--json"]) == 0
    return root, small


def test_normalisation_and_scores():
    assert normalize("The  Anglican Communion!") == "anglican communion"
    assert exact_match("anglican communion", ["the Anglican Communion"]) == 1.0
    assert token_f1("G. Hall", ["G. Stanley Hall", "Stanley Hall"]) == pytest.approx(0.8)
    assert contains_answer("There are 35 stores.", ["35"]) and not contains_answer("In 1935.", ["35"])
    assert gold_answers({"answer": "Paris", "answer_aliases": ["City of Paris", "Paris"]}) == ["Paris", "City of Paris"]


def test_offline_answer_recall_beside_recall_at_k(small_musique, capsys, monkeypatch):
    root, small = small_musique
    for var in ("DGRAG_LLM_BASE_URL", "DGRAG_LLM_MODEL", "DGRAG_CHAT_MODEL", "DGRAG_CHAT_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    args = ["eval", str(root / "q.jsonl"), "--db", str(root / "mq.db"), "--methods", "dense,diffusion",
            "--k", "1,5", "--answers"]
    assert main(args) == 0
    table = capsys.readouterr().out
    assert "3 questions with gold answers, offline" in table and "AR@5" in table and "R@5" in table
    assert main(args + ["--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["n"] == 3 and not report["llm"]
    for method in ("dense", "diffusion"):
        r = report["methods"][method]
        assert r["answer_recall"]["1"] <= r["answer_recall"]["5"] and r["rounds_mean"] == 1 and r["tokens_mean"] > 0
        rows = report["per_question"][method]
        # AR is what the words say: the Publix answer "35" is in its gold passage's text
        assert r["answer_recall_context"] > 0 and all(set(row["answer_recall"]) == {"1", "5"} for row in rows)


def test_with_an_llm_the_agent_is_scored(small_musique, capsys, monkeypatch, openai_server_factory):
    root, small = small_musique
    first = small[0]

    def model(request):
        if request.get("tools"):
            return "DONE"
        text = json.dumps(request["messages"])
        return first["answers"][0] if first["question"] in text else "I do not know"

    server = openai_server_factory(model)
    monkeypatch.setenv("DGRAG_LLM_BASE_URL", server.base_url)
    monkeypatch.setenv("DGRAG_LLM_MODEL", "chat")
    assert main(["eval", str(root / "q.jsonl"), "--db", str(root / "mq.db"), "--methods", "dense", "--k", "5",
                 "--answers", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    r, rows = report["methods"]["dense"], report["per_question"]["dense"]
    assert report["llm"] and r["em"] == pytest.approx(1 / 3, abs=1e-3) and r["f1"] == pytest.approx(1 / 3, abs=1e-3)
    assert rows[0]["prediction"] == first["answers"][0] and rows[0]["em"] == 1.0
    assert all(row["rounds"] == 1 and row["tokens"] > 0 for row in rows)
    finals = [q["json"] for q in server.chat_requests() if q["json"].get("stream")]
    assert len(finals) == 3 and "answer alone" in finals[0]["messages"][0]["content"]  # the short style
