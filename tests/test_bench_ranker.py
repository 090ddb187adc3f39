"""bench.ranker's fit: the weights it finds, and the guard that refuses a weight which buys one
corpus's recall with another's, on feature tables made by hand."""
from __future__ import annotations

import numpy as np

from bench import ranker
from dgrag.retrieve.ranking import FEATURES

BASE, OTHER = FEATURES.index("base"), FEATURES.index("lexical")


def _row(gold: int, base: list[float], other: list[float]) -> dict:
    F = np.zeros((len(base), len(FEATURES)))
    F[:, BASE], F[:, OTHER] = base, other
    return {"q": {"question": "q", "gold_corpus_idx": [gold], "split": "dev"},
            "items": [{"corpus_idx": i} for i in range(len(base))], "F": F.tolist()}


def _data(helped: int, hurt: int) -> dict:
    """`helped` questions where the other feature brings dense's third passage, the gold one,
    first (from a weight of 0.2); `hurt` questions of a second corpus where the same weight
    pushes dense's right first passage to second."""
    a = [_row(2, [1.0, 0.9, 0.8], [0.0, 0.0, 1.0]) for _ in range(helped)]
    b = [_row(0, [1.0, 0.9, 0.8], [0.0, 1.0, 0.0]) for _ in range(hurt)]
    return {"features": list(FEATURES), "configs": {"a": a, "b": b}}


def test_fit_takes_a_weight_that_helps_and_costs_nothing():
    w = ranker.fit(_data(helped=4, hurt=0))
    assert w[BASE] == 1.0 and w[OTHER] > 0.2  # enough to lift the gold passage over 0.2 of base margin
    assert ranker.summary(_data(4, 0)["configs"]["a"], w, "dev")["R@1"] == 100.0


def test_the_guard_refuses_a_weight_that_costs_another_corpus_its_first_passage():
    data = _data(helped=4, hurt=2)  # +100 R@1 and R@2 on a, -100 R@1 on b: a plain sum takes it
    assert ranker.fit(data, guard=0.0)[OTHER] > 0.2
    w = ranker.fit(data)  # the default guard: a point below dense costs more than a point above earns
    assert w[OTHER] < 0.1
    assert ranker.summary(data["configs"]["b"], w, "dev")["R@1"] == 100.0


def test_a_dump_written_before_issue_36_reads_its_trust_as_the_same_agreement():
    half = (0.5 - 0.34) / 0.32  # a trust of one half on the scale of then, in floating point
    assert half < 0.5 and ranker.agreement_of({"ppr_trust": half}) >= 0.5
    assert ranker.agreement_of({"ppr_trust": 0.4}) < 0.5  # an agreement of 0.468
    assert ranker.agreement_of({"ppr_trust": 0.0}) == 0.0 and ranker.agreement_of({}) == 0.0
    assert ranker.agreement_of({"ppr_agreement": 0.375, "ppr_trust": 1.0}) == 0.375  # a new dump's own


PPR = FEATURES.index("ppr")


def _graph_row(gold: int, lexical: list[float], ppr: list[float]) -> dict:
    row = _row(gold, [1.0, 0.9, 0.8], lexical)
    F = np.asarray(row["F"])
    F[:, PPR] = ppr
    return {**row, "F": F.tolist()}


def test_the_graph_guard_refuses_a_graph_weight_that_costs_a_corpus_what_it_had_without_the_graph():
    # the words point at the second passage and the walk at the third on every corpus; the gold is
    # the third on a1 and a2, the second on b. The walk's weight over the words' gains a1 and a2
    # their R@1 and costs b the R@1 the words alone gave it (never below dense: b's gold second)
    a = [_graph_row(2, [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]) for _ in range(2)]
    b = [_graph_row(1, [0.0, 1.0, 0.0], [0.0, 0.0, 1.0])]
    data = {"features": list(FEATURES), "configs": {"a1": a, "a2": a, "b": b}}
    free = ("lexical", "ppr")
    plain = ranker.fit(data, free=free)
    assert ranker.summary(a, plain, "dev")["R@1"] == 100.0 and ranker.summary(b, plain, "dev")["R@1"] == 0.0
    guarded = ranker.fit(data, graph_guard=3.0, free=free)
    assert ranker.summary(b, guarded, "dev")["R@1"] == 100.0  # what b had without the graph
    assert ranker.summary(a, guarded, "dev")["R@2"] == 100.0  # and a keeps what the walk gives it there


def test_cross_validation_fits_each_corpus_on_the_others_alone():
    helped = [_row(2, [1.0, 0.9, 0.8], [0.0, 0.0, 1.0]) for _ in range(3)]
    neutral = [_row(0, [1.0, 0.9, 0.8], [0.0, 0.0, 0.0]) for _ in range(3)]
    data = {"features": list(FEATURES), "configs": {"redux": helped, "mq_llm": neutral, "arkui_off": neutral}}
    folds = ranker.cross_validate(data, free=("lexical",))
    assert set(folds) == {"redux", "musique", "arkui"}
    assert folds["redux"][OTHER] == 0  # the only corpus where the feature matters was held out
    assert folds["musique"][OTHER] > 0.2 and folds["arkui"][OTHER] > 0.2


def test_the_extras_columns_rank_when_given_a_weight():
    row = _row(1, [1.0, 0.9, 0.8], [0.0, 0.0, 0.0])
    row["X"] = [[0.0, 0.0, 0.0], [1.0, 1.0, 1.0], [0.0, 0.0, 0.0]]
    w = ranker.weights({"heading_cover": 0.5})
    assert ranker.summary([row], ranker.DENSE, "dev")["R@1"] == 0.0
    assert ranker.summary([row], w, "dev")["R@1"] == 100.0


def test_lambdarank_grades_a_gold_section_above_its_page_above_the_rest():
    from bench import lambdarank

    row = {"q": {"question": "q", "gold_paths": ["a.md"], "gold_sections": ["A / Install"], "split": "dev"},
           "items": [{"source_path": "b.md", "breadcrumb": "B / Install"},
                     {"source_path": "a.md", "breadcrumb": "A / Usage"},
                     {"source_path": "a.md", "breadcrumb": "A / Install / On Linux"}]}
    assert lambdarank.grades(row).tolist() == [0, 1, 2]  # a sub-section counts for its section
    assert ranker.metrics_of(row, [2, 0, 1])["S@1"] == 1.0 and ranker.metrics_of(row, [0, 1, 2])["R@1"] == 0.0
