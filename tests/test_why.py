""""Why this result": each chunk the diffusion ranks carries the features that ranked it, whose
contributions (weight x value) sum to the very score it was ranked by; the results come in rank
order; the inspector's "why" lines show that score and those contributions, largest first.
On a small real index (hash embedder, offline facts), through the retriever and through a live
REST server."""
from __future__ import annotations

import json
import urllib.request

import numpy as np
import pytest
from conftest import crafted_retriever

from dgrag.config import RetrievalConfig
from dgrag.retrieve import ranking

PAGES = {
    "guide.md": "# Navigation guide\n\n## Opening a page\n\nCall the page router to open the second page, "
                "see the [router reference](router.md) and pushUrl.\n\n## Themes\n\nColours and fonts of the app.\n",
    "router.md": "# Router reference\n\n## pushUrl\n\nOpens a page by its URL with parameters.\n\n"
                 "## Limits\n\nAt most 32 pages on the stack.\n",
    "motion.md": "# Motion guide\n\n## Moving a card\n\nTo move a card smoothly, wrap the change in animateTo.\n",
    "curves.md": "# Curves reference\n\n## animateTo\n\nRuns the closure's state changes over a duration.\n\n"
                 "## Spring\n\nA physical curve with stiffness and damping.\n",
}
QUESTIONS = ("how do I open a page with parameters", "how do I move a card smoothly", "pushUrl stack limit")


@pytest.fixture(scope="module")
def small(tmp_path_factory, hash_embedder):
    return crafted_retriever(tmp_path_factory.mktemp("why"), PAGES, hash_embedder)


def _in_registry_order(why: dict) -> np.ndarray:
    """The contributions as one row in the registry's order (0 where a feature is not listed)."""
    row = np.zeros(len(ranking.FEATURES))
    for c in why["contributions"]:
        row[ranking.COLUMN[c["feature"]]] = c["contribution"]
    return row


def _check_whys(res: dict) -> None:
    chunks = res["chunks"]
    assert chunks and all("why" in c for c in chunks)
    weights = RetrievalConfig().merged(None)
    for c in chunks:
        why = c["why"]
        assert _in_registry_order(why).sum() == why["score"]  # exactly: the score is their sum
        assert c["score"] == round(why["score"], 5)  # the score shown is the one that ranked
        sizes = [abs(x["contribution"]) for x in why["contributions"]]
        assert sizes == sorted(sizes, reverse=True) and all(sizes)  # largest first, none that is 0
        for x in why["contributions"]:
            assert x["weight"] == getattr(weights, f"rank_w_{x['feature']}")
            assert x["contribution"] == x["weight"] * x["value"]
    # rank order: by score, except a place PPR's walk was given (`rank_ppr_every`) and a first
    # place the bridge's next hop would have taken (the best without `bridge`)
    by_score = [c["why"]["score"] for c in chunks if c["why"]["placed_by"] == "score"]
    assert by_score == sorted(by_score, reverse=True)
    assert {c["why"]["placed_by"] for c in chunks[1:]} <= {"score", "ppr"}
    if chunks[0]["why"]["placed_by"] == "first_without_bridge":
        def unbridged(c):
            return c["why"]["score"] - _in_registry_order(c["why"])[ranking.COLUMN["bridge"]]
        assert all(unbridged(chunks[0]) >= unbridged(c) for c in chunks)
        assert chunks[0]["why"]["score"] < max(by_score)


def test_contributions_sum_to_the_score_that_ranked(small):
    for q in QUESTIONS:
        res = small.retrieve(q, {"verbose": True})
        _check_whys(res)
        assert res["chunks"][0]["why"]["placed_by"] != "ppr"  # the head is never PPR's


def test_a_place_given_to_the_walk_says_so(small):
    # PPR's places on every question (any agreement with dense is enough): every 2nd place
    seen = set()
    for q in QUESTIONS:
        res = small.retrieve(q, {"verbose": True, "rank_ppr_agreement": 0.0, "rank_ppr_every": 2, "rank_ppr_in": "any",
                                 "rank_ppr_head": 1, "final_chunk_k": 30})
        _check_whys(res)
        placed = [c["why"]["placed_by"] for c in res["chunks"]]
        seen.update(placed)
        ppr_places = [i for i, p in enumerate(placed) if p == "ppr"]
        assert all(i >= 1 for i in ppr_places)  # never in the head
        for i in ppr_places:  # it stands above a result its score alone would rank above it
            below = [c["why"]["score"] for c in res["chunks"][i + 1:] if c["why"]["placed_by"] == "score"]
            assert below and max(below) > res["chunks"][i]["why"]["score"]
    assert {"score", "ppr"} <= seen


def test_a_why_only_when_asked_and_only_for_the_ranked_method(small):
    q = QUESTIONS[0]
    assert all("why" not in c for c in small.retrieve(q)["chunks"])
    for method in ("dense", "ppr"):
        assert all("why" not in c for c in small.retrieve(q, {"method": method, "verbose": True})["chunks"])


def test_every_feature_is_named_described_and_has_a_weight():
    from dgrag.config import FITTED

    cfg = RetrievalConfig()
    data = json.loads((__import__("pathlib").Path(ranking.__file__).parent.parent / "rank_weights.json").read_text())
    assert list(data["weights"]) == list(ranking.FEATURES) and FITTED == data["weights"]
    assert {"date", "commit", "procedure", "questions"} <= set(data["provenance"])
    assert set(data["provenance"]["at_zero"]) == {f for f, v in FITTED.items() if v == 0}  # each one a reason
    assert [f.name for f in ranking.REGISTRY] == list(ranking.FEATURES)
    assert len(set(ranking.FEATURES)) == len(ranking.FEATURES)
    for f in ranking.REGISTRY:
        assert f.measures and f.computed
        assert isinstance(getattr(cfg, f"rank_w_{f.name}"), float)
    F = np.arange(2 * len(ranking.FEATURES), dtype=float).reshape(2, -1)
    w = ranking.weights_of(cfg)
    assert ranking.scores(F, w).tolist() == ranking.contributions(F, w).sum(axis=1).tolist()
    assert [r["feature"] for r in ranking.explained(F, w, 1)][0] == max(
        ((f, abs(F[1, j] * w[j])) for j, f in enumerate(ranking.FEATURES)), key=lambda t: t[1])[0]


def test_the_inspector_lines_show_the_rank_score_and_its_contributions(small):
    from dgrag.web import graph_picture as gp

    res = small.retrieve(QUESTIONS[0], {"verbose": True})
    _, text = gp.explain(small.handle.path, res)
    first = res["chunks"][0]
    lines = text.splitlines()
    assert lines[0].startswith(f"- **#1** `{first['id']}`") and f"rank score **{first['score']:.3f}**" in lines[0]
    top = first["why"]["contributions"][0]
    assert lines[1].strip().startswith(f"- {top['feature']} {top['contribution']:+.3f}")
    shown = [float(x.split("rank score **")[1].split("**")[0]) for x in lines if "rank score **" in x]
    assert shown == [round(c["score"], 3) for c in res["chunks"]]  # in rank order, the ranking's scores


def test_rest_retrieve_gives_the_why_in_rank_order_and_a_note_for_ppr(tmp_path, fixture_index):
    import sys

    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
    from app_server import app_settings, start_app

    live = start_app(app_settings(tmp_path, fixture_index))
    try:
        def post(body):
            req = urllib.request.Request(live.url + "/retrieve", json.dumps(body).encode(),
                                         {"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=60) as r:
                return json.loads(r.read())

        res = post({"query": "touch event TouchType Down", "retrieval_config": {"verbose": True}})
        _check_whys(res)
        assert res.get("note") is None and all(c.get("why") is None for c in res["codes"] + res["images"])
        plain = post({"query": "touch event TouchType Down"})
        assert plain["chunks"] and all(c.get("why") is None for c in plain["chunks"])  # only when verbose
        ppr = post({"query": "touch event TouchType Down", "retrieval_config": {"method": "ppr"}})
        assert ppr["method"] == "ppr" and "experimental comparison" in ppr["note"] and ppr["chunks"]
        with urllib.request.urlopen(live.url + "/openapi.json", timeout=30) as r:
            schemas = json.loads(r.read())["components"]["schemas"]
        assert {"score", "placed_by", "contributions"} <= set(schemas["Why"]["properties"])
        assert "why" in schemas["Item"]["properties"] and "note" in schemas["RetrieveResponse"]["properties"]
    finally:
        live.stop()


def test_ppr_is_offered_as_an_experimental_comparison_not_beside_the_default():
    from dgrag.web.ui import METHOD_INFO, METHODS, _column_md

    assert METHODS[0][1] == "diffusion" and METHODS[-1][1] == "ppr"
    assert "experimental comparison" in METHODS[-1][0]
    assert all("experimental" not in label for label, m in METHODS if m != "ppr")
    assert "experimental comparison" in METHOD_INFO and "below dense" in METHOD_INFO
    empty = {"timing": {}, "chunks": [], "codes": [], "tables": [], "images": [], "query": "q"}
    assert _column_md("ppr", empty).startswith("### ppr (experimental comparison)")
    assert _column_md("dense", empty).startswith("### dense\n")


def test_a_why_line_in_plain_words_on_a_hand_made_trace():
    from dgrag.web import graph_picture as gp

    nodes = {"4": {"type": "chunk", "id": "chunk-c", "breadcrumb": "Guide / Router / pushUrl", "meta": {}, "text": ""},
             "5": {"type": "chunk", "id": "chunk-d", "breadcrumb": "Guide / Start", "meta": {}, "text": ""}}
    trace = {"paths": {"4": ["5", "4"]}, "hops": [["5", "4", "jump", 0.4]], "score": {"4": 0.61},
             "seed_why": {"5": {"via": "question", "similarity": 0.83}}}
    item = {"id": "chunk-c", "why": {"score": 2.25, "placed_by": "ppr", "reranked_by": "llm", "contributions": [
        {"feature": "page", "weight": 3.0, "value": 0.5, "contribution": 1.5},
        {"feature": "base", "weight": 1.0, "value": 1.0, "contribution": 1.0},
        {"feature": "link", "weight": 0.5, "value": -0.5, "contribution": -0.25}]}}
    assert gp.ranked_lines(trace, nodes, {}, "4", "chunks", 3, item) == [
        "- **#3** `chunk-c` chunk “Router / pushUrl” · rank score **2.250** · a place given to the PPR walk "
        "(`rank_ppr_every`) · then reordered by the llm rerank",
        "  - page +1.500 = 3 × 0.500 · base +1.000 = 1 × 1.000 · link -0.250 = 0.5 × -0.500",
        "  - the walk: chunk “Guide / Start” matched the question directly, similarity 0.83 → chunk “Router / pushUrl” "
        "(jump 0.40) · path cost 0.40"]
    # a code block is ranked among its kind by the walk's score: its line is the walk's
    assert gp.ranked_lines(trace, nodes, {}, "4", "codes", 1, {"id": "chunk-c"}) == [
        "- **#1** `chunk-c`: chunk “Guide / Start” matched the question directly, similarity 0.83 → chunk "
        "“Router / pushUrl” (jump 0.40) · path cost 0.40 · walk score 0.610"]
