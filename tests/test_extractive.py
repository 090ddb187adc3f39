"""The answer without an LLM: the sentences (or the row, or the code block) that answer, cited;
whether the docs cover a question, calibrated per index; components; no node id shown."""
from __future__ import annotations

import dataclasses
import json
import re

import pytest

from dgrag.answer import Answerer
from dgrag.answer.components import markdown as components_md
from dgrag.answer.components import other_language_path, parse_table
from dgrag.answer.extractive import ANSWER_CHARS, Unit, render, select, split_section
from dgrag.config import Settings
from dgrag.retrieve.confidence import META_KEY, RULE, UNKNOWN_PENALTY, Calibration, Evidence, Scale
from dgrag.retrieve.retriever import Retriever
from dgrag.store import Store

NODE_ID = re.compile(r"(chunk|code|table|image|file|entity)-[0-9a-f]{16}")


def test_a_section_splits_into_sentences_rows_and_code_blocks():
    text = ("# Title\n\nFirst sentence here. Second one follows! 第三句话在这里。第四句话也在。短\n\n"
            "| Name | Type |\n|---|---|\n| width | number |\n\n- a list item stands alone\n\n"
            "```ts\nlet a = 1\n```\n![pic](x.png)\n")
    assert split_section(text) == [
        ("sentence", "First sentence here.", ""), ("sentence", "Second one follows!", ""),
        ("sentence", "第三句话在这里。", ""), ("sentence", "第四句话也在。", ""), ("row", "| width | number |", "| Name | Type |"),
        ("sentence", "a list item stands alone", ""), ("code", "let a = 1", "ts")]


def test_a_label_line_is_no_unit_and_a_repeated_sentence_is_said_once():
    text = "[Windows]\n\n```shell\nace check\n```\n\n**Note**\n\nRun ace check after installing the SDK.\n"
    assert split_section(text) == [("code", "ace check", "shell"), ("sentence", "Run ace check after installing the SDK.", "")]
    assert split_section("短句也行。\n") == [("sentence", "短句也行。", "")]
    assert split_section("**OpenHarmony Platform**\n\n**注意：**\n\n[macOS]\n\n**Bold** words lead a sentence.\n") == [
        ("sentence", "**Bold** words lead a sentence.", "")]
    same = [Unit("Set the SDK path first.", "sentence", 1, 0, 0), Unit("Set the SDK path first.", "sentence", 2, 1, 0),
            Unit("Then run ace check.", "sentence", 2, 1, 1)]
    assert render(select(same, [0.9, 0.89, 0.88])) == "Set the SDK path first. [1] Then run ace check. [2]"


def test_a_section_cut_short_in_its_reference_loses_its_last_fragment():
    from dgrag.answer.extractive import candidates
    from dgrag.core import Reference
    from dgrag.retrieve.context import MAX_CHUNK_CHARS

    tail = " If you use Android S"  # "…Studio, download the SDK there." past the cut
    head = "Install the SDK first. " * 107 + "Run ace check now."
    cut = Reference("c1", "chunk", 1.0, "Setup / SDK", text=head + " " * (MAX_CHUNK_CHARS - len(head) - len(tail)) + tail)
    assert len(cut.text) == MAX_CHUNK_CHARS
    assert candidates("install the sdk", [(1, cut)])[-1].text == "Run ace check now."
    short = dataclasses.replace(cut, text="Install the SDK first. If you use Android Studio, download it there.")
    assert candidates("install the sdk", [(1, short)])[-1].text == "If you use Android Studio, download it there."


def test_sentences_fill_the_budget_best_first_and_a_code_block_stands_alone():
    units = [Unit("A" * 300, "sentence", 1, 0, 0), Unit("B" * 250, "sentence", 2, 1, 0),
             Unit("C" * 200, "sentence", 1, 0, 1), Unit("D" * 10, "sentence", 3, 2, 0)]
    chosen = select(units, [0.80, 0.83, 0.79, 0.50])
    assert [u.text[0] for u in chosen] == ["B", "A"]  # C would pass 600 with its citation; D is too far below
    text = render(chosen)
    assert text == "B" * 250 + " [2] " + "A" * 300 + " [1]" and len(text) <= ANSWER_CHARS
    code = [Unit("x = 1\n" * 200, "code", 4, 0, 0, language="ts"), units[0]]
    out = render(select(code, [0.9, 0.8]))
    assert out.startswith("```ts\nx = 1") and out.endswith("```\n\n[4]") and len(out) <= ANSWER_CHARS
    assert render(select([Unit("y" * 900, "sentence", 1, 0, 0)], [0.5])) == "y" * 595 + "… [1]"
    lead = [Unit("For example:", "sentence", 2, 0, 3), Unit("ace create demo", "code", 2, 0, 4, language="sh")]
    assert render(select(lead + units, [0.9, 0.5, 0.8, 0.8, 0.8, 0.8])) == \
        "For example: [2]\n\n```sh\nace create demo\n```"


def test_tables_and_paths_read_as_people_write_them():
    assert parse_table("| a | b |\n|:--|--:|\n| 1 | 2 |\n") == (["a", "b"], [["1", "2"]])
    assert other_language_path("en/application-dev/x.md") == "zh-cn/application-dev/x.md"
    assert other_language_path("zh-cn/a.md") == "en/a.md" and other_language_path("docs/a.md") == ""


def test_calibration_places_the_threshold_and_confidence_rises_past_it():
    latin = Scale(0.80, 0.02, 0.2, 0.1, threshold=4.0, scale=1.0)
    cal = Calibration(latin=latin, han=Scale(0.70, 0.02, 0.2, 0.1, threshold=4.0, scale=1.0))
    assert latin.score(0.84, 0.4) == pytest.approx(4.0)
    assert cal.judge(Evidence(0.86, 0.4)) == (True, pytest.approx(1 / (1 + 2.718281828 ** -1), abs=1e-4))
    ok, conf = cal.judge(Evidence(0.80, 0.2))
    assert not ok and conf == pytest.approx(1 / (1 + 2.718281828 ** 4), abs=1e-4)
    # a Chinese question is read on its own group's scale: the same evidence scores 5 higher there
    assert cal.score(Evidence(0.80, 0.2, han=True)) == pytest.approx(5.0) and cal.judge(Evidence(0.80, 0.2, han=True))[0]


def test_coverage_is_the_held_weight_over_the_root_of_the_questions_weight():
    """A section holding words of IDF weight H of a question whose words weigh T in all scores
    H / sqrt(T): a long question is not judged by its incidental words alone (a share, H / T,
    would halve when the question doubles with words no section holds)."""
    import math

    import numpy as np

    from dgrag.kernels.lexical import build_lexical
    from dgrag.retrieve.confidence import coverage

    lex = build_lexical(["alpha beta", "gamma delta", "epsilon zeta"])
    n, unseen = 3, math.log1p((3 + 0.5) / 0.5)
    idf1 = math.log1p((n - 1 + 0.5) / (1 + 0.5))  # a word one of three sections holds
    cos = np.array([0.9, 0.1, 0.0])
    short = coverage(lex, "alpha beta", cos)
    assert short == pytest.approx(2 * idf1 / math.sqrt(2 * idf1))
    # two more words no section holds: the share falls to `kept` of itself, the coverage to its root
    long = coverage(lex, "alpha beta omega omicron", cos)
    assert long == pytest.approx(2 * idf1 / math.sqrt(2 * idf1 + 2 * unseen))
    kept = 2 * idf1 / (2 * idf1 + 2 * unseen)
    assert long / short == pytest.approx(math.sqrt(kept)) and kept < long / short < 1


def test_a_name_the_corpus_never_contains_costs_two_spreads():
    cal = Calibration(*[Scale(0.80, 0.02, 0.2, 0.1, threshold=4.0, scale=1.5)] * 2)
    near = Evidence(0.86, 0.4, unknown=("flutter",))  # one spread past the threshold: not enough
    assert cal.score(near) == pytest.approx(5.0 - UNKNOWN_PENALTY * 1.5) and cal.judge(near)[0] is False
    assert cal.judge(Evidence(0.86, 0.4))[0] is True
    strong = Evidence(0.90, 0.5, unknown=("mycard",))  # 2.67 spreads past: one's own component name stays
    assert cal.judge(strong)[0] is True and 0.5 < cal.judge(strong)[1] < cal.judge(Evidence(0.90, 0.5))[1]


def test_another_frameworks_api_is_not_covered_while_the_docs_own_names_are(indexed, embedder):
    retriever = Retriever(indexed, embedder=embedder)
    ok, conf, ev = retriever.judge("Flutter 的 GetX 怎么做路由管理？")
    assert ev.unknown == ("flutter", "getx") and ev.han and not ok and conf < 0.5
    ok, _, ev = retriever.judge("How does Flutter's Navigator.push pass arguments?")
    assert "flutter" in ev.unknown and not ok
    ok, conf, ev = retriever.judge("ACE Tools 怎么创建应用？")
    assert ev.unknown == () and ev.han and ok and conf > 0.5


@pytest.fixture(scope="module")
def agent(fixture_index, embedder):
    settings = Settings(db_path=fixture_index[0].db_path)
    return Answerer(settings, Retriever(settings, embedder=embedder), llm=None)


def _done(agent, question):
    return list(agent.chat(question))[-1]


def test_the_offline_answer_cites_the_sentences_that_answer_in_the_questions_language(agent):
    done = _done(agent, "ACE Tools 怎么创建应用？")
    card = done["meta"]["components"][0]
    assert card["type"] == "answer" and card["answerable"] is True and card["llm"] is False
    assert len(card["markdown"]) <= ANSWER_CHARS and re.search(r"\[\d+\]", card["markdown"])
    refs = {r["n"]: r for r in done["meta"]["references"]}
    assert all(refs[n]["type"] != "chunk" or "/zh-cn/" in refs[n]["source_url"] for n in card["citations"])
    assert "ace create" in card["markdown"]  # the sentence that leads into the command, and the command
    assert "**延伸阅读**" in done["answer"] and "未配置 LLM" not in done["answer"]
    kinds = [c["type"] for c in done["meta"]["components"]]
    assert kinds[0] == "answer" and "sources" in kinds and "followups" in kinds
    follow = next(c for c in done["meta"]["components"] if c["type"] == "followups")["items"]
    assert 2 <= len(follow) <= 3 and {f["why"] for f in follow} & {"next", "other_language"}


def test_a_question_the_docs_do_not_cover_says_so_first(agent):
    done = _done(agent, "How do I bake sourdough bread at home?")
    assert done["meta"]["answerable"] is False and done["meta"]["confidence"] < 0.5
    assert done["answer"].startswith("The docs don't seem to cover this; the closest sections are “")
    assert "**Read more**" in done["answer"]
    card = done["meta"]["components"][0]  # the sentence given apart too, for a front-end that draws it so
    assert card["notice"].startswith("The docs don't seem to cover this") and card["markdown"].startswith(card["notice"])
    answered = _done(agent, "How do I create an ArkTS page?")["meta"]["components"][0]
    assert answered["answerable"] is True and "notice" not in answered


def test_the_calibration_is_kept_in_the_file_once_per_version(indexed, embedder):
    retriever = Retriever(indexed, embedder=embedder)
    ok, conf, _ = retriever.judge("How do I create an ArkTS page?")
    assert ok and conf > 0.5
    with Store(indexed.db_path, readonly=True) as st:
        stored = json.loads(st.meta.get(META_KEY))
        version = st.meta.graph_version()
    assert stored["key"].startswith(f"{version}:") and stored["key"].endswith(f":{RULE}")
    assert set(stored["calibration"]) == {"latin", "han"}
    assert stored["calibration"]["latin"]["threshold"] != stored["calibration"]["han"]["threshold"]
    again = Retriever(indexed, embedder=embedder)  # a new process reads it back, computes nothing
    again.calibrations.get(again.handle.get(), embedder)
    assert list(again.calibrations._by_key.values())[0] == Calibration.from_json(stored["calibration"])


def test_no_node_id_in_what_a_person_reads(agent):
    from dgrag.web.ui import _choices, references_md

    for question in ("How do I create an ArkTS page?", "如何使用 @State 装饰器？", "Who won the 2014 World Cup?"):
        events = list(agent.chat(question))
        done = events[-1]
        shown = done["answer"] + components_md(done["meta"]["components"], "en")
        shown += json.dumps(done["meta"]["components"], ensure_ascii=False)
        found = [e["result"].to_api() for e in events if e["type"] == "retrieval"]
        shown += "".join(references_md(r) for r in found) + "".join(label for label, _ in _choices(found))
        assert "chunk-" in json.dumps(found)  # the ids are there for programs...
        assert not NODE_ID.search(shown), NODE_ID.search(shown)  # ...and never in what is shown


def test_hugging_faces_router_takes_the_spaces_token():
    env = {"DGRAG_LLM_BASE_URL": "https://router.huggingface.co/v1", "DGRAG_LLM_MODEL": "Qwen/Qwen2.5-7B-Instruct",
           "HF_TOKEN": "hf_secret"}
    s = Settings.from_env(env)
    assert s.llm_configured and s.llm_api_key == "hf_secret"
    assert Settings.from_env({**env, "DGRAG_LLM_API_KEY": "own"}).llm_api_key == "own"
    assert Settings.from_env({**env, "DGRAG_LLM_BASE_URL": "http://localhost:8000/v1"}).llm_api_key == ""


def test_the_second_hop_joins_the_sentence_that_names_what_the_best_introduced():
    from dgrag.answer.extractive import bridge_bonus
    q = "Who inspired the song written by the producer of Amy?"
    best = Unit("Amy was produced by Ed Sheeran.", "sentence", 1, 0, 0)
    hop = Unit("Sheeran wrote it for Athina.", "sentence", 2, 1, 0, title="Thinking Out Loud")
    other = Unit("The weather was fine that day.", "sentence", 3, 2, 0)
    same = Unit("Sheeran sang it.", "sentence", 1, 0, 1)
    bonus = bridge_bonus(q, best, [best, hop, other, same])
    assert bonus.tolist()[2:] == [0.0, 0.0] and bonus[0] == 0.0  # its own section gains nothing
    assert 0 < bonus[1] < 1
    # without the question the far sentence stays out; with it, the second hop joins the answer
    units, scores = [best, hop, other], [0.9, 0.5, 0.55]
    assert [u.n for u in select(units, scores)] == [1]
    assert [u.n for u in select(units, scores, question=q)] == [1, 2]


def test_a_sections_whole_text_and_heading_path_count_for_each_of_its_units():
    from dgrag.answer.extractive import section_share
    units = [Unit("The width takes a number.", "sentence", 1, 0, 0, title="Button / Attributes"),
             Unit("Set it in vp.", "sentence", 1, 0, 1, title="Button / Attributes"),
             Unit("Its color is black.", "sentence", 2, 1, 0, title="Text")]
    # "button" (the heading path) and "width" (the first sentence) lift the section's second sentence too
    assert section_share("button width colour", units).tolist() == pytest.approx([2 / 3, 2 / 3, 0.0])
    assert section_share("button width color", units).tolist() == pytest.approx([2 / 3, 2 / 3, 1 / 3])
    assert section_share("", units).tolist() == [0.0, 0.0, 0.0]


def test_a_docs_section_weighs_its_whole_sections_words_and_a_passage_its_own(hash_embedder):
    import dataclasses as dc

    from dgrag.answer import extractive as ex
    doc = [Unit("The width takes a number.", "sentence", 1, 0, 0, title="Button / Attributes"),
           Unit("Set it in vp.", "sentence", 1, 0, 1, title="Button / Attributes")]
    passage = [dc.replace(u, passage=True) for u in doc]
    q = "button width colour"
    gap = ex.score_units(q, doc, hash_embedder) - ex.score_units(q, passage, hash_embedder)
    # the same text and embedding: the difference is the weights alone (word shares 2/3 and 1/3)
    assert gap.tolist() == pytest.approx([ex.W_SECTION * 2 / 3 + (ex.W_LEX_DOCS - ex.W_LEX) * 2 / 3,
                                          ex.W_SECTION * 2 / 3 + (ex.W_LEX_DOCS - ex.W_LEX) * 1 / 3], abs=1e-6)
