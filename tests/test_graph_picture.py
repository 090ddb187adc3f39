"""The inspector's picture and its "why" lines: exact text for each kind of seed on a hand-made
trace, the subgraph and figure drawn for it, and the same on the indexed excerpt, where the
trace's hops must carry the graph's own edge types and costs."""
from __future__ import annotations

import math

import pytest

from dgrag.web import graph_picture as gp

# A fact (Router, uses, pushUrl) seeds the entity pushUrl, whose passage edge reaches the chunk
# "Guide / Router / pushUrl"; a chunk the question matched holds a code block; a page seeds a
# chunk; an entity named in the question reaches a chunk over synonymy, then passage.
NODES = {
    "1": {"type": "entity", "id": "entity-a", "breadcrumb": "", "entity_name": "Router", "meta": {}, "text": "Router"},
    "2": {"type": "entity", "id": "entity-b", "breadcrumb": "", "entity_name": "pushUrl", "meta": {},
          "text": "pushUrl: goes to a page <b>now</b>"},
    "4": {"type": "chunk", "id": "chunk-c", "breadcrumb": "Guide / Router / pushUrl", "meta": {},
          "text": "Call router.pushUrl({url: 'pages/Second'}) to open the second page."},
    "5": {"type": "chunk", "id": "chunk-d", "breadcrumb": "Guide / Start", "meta": {}, "text": "Start here."},
    "6": {"type": "code", "id": "code-e", "breadcrumb": "Guide / Start", "meta": {}, "text": "ace create"},
    "7": {"type": "file", "id": "file-f", "breadcrumb": "Guide", "meta": {}, "text": "Guide"},
    "8": {"type": "entity", "id": "entity-g", "breadcrumb": "", "entity_name": "@State", "meta": {}, "text": "@State"},
    "9": {"type": "entity", "id": "entity-h", "breadcrumb": "", "entity_name": "State", "meta": {}, "text": "State"},
    "10": {"type": "chunk", "id": "chunk-i", "breadcrumb": "Decorators / A very long section title that goes on",
           "meta": {}, "text": "@State decorates a member variable."},
}
FACTS = {31: {"rowid": 31, "head": 1, "relation": "uses", "tail": 2, "text": "(Router, uses, pushUrl)", "chunk": 4}}
TRACE = {
    "visited": ["5", "2", "1", "8", "7", "4", "6", "9", "10"],
    "edges": [("2", "4"), ("5", "6"), ("8", "9"), ("9", "10")],
    "paths": {"4": ["2", "4"], "5": ["5"], "6": ["5", "6"], "10": ["8", "9", "10"]},
    "hops": [["2", "4", "passage", 0.2], ["5", "6", "contains", 0.3], ["8", "9", "synonymy", 0.12],
             ["9", "10", "passage", 0.2]],
    "score": {"2": 0.61, "4": 0.6123, "5": 0.8312, "6": 0.55, "10": 0.4, "1": 0.5, "8": 0.7, "9": 0.6, "7": 0.3},
    "similarity": {"4": 0.7512, "5": 0.8312},
    "seed_why": {"1": {"via": "fact", "fact": 31, "similarity": 0.71},
                 "2": {"via": "fact", "fact": 31, "similarity": 0.71},
                 "5": {"via": "question", "similarity": 0.8312}, "7": {"via": "question", "similarity": 0.6},
                 "8": {"via": "name"}},
}


def test_why_tells_each_path_in_plain_words():
    assert gp.why(TRACE, NODES, FACTS, "4") == \
        "fact (Router, uses, pushUrl) → entity “pushUrl” → chunk “Router / pushUrl” (passage 0.20) · path cost 0.20" \
        " · walk score 0.612"
    assert gp.why(TRACE, NODES, FACTS, "5") == \
        "chunk “Guide / Start” matched the question directly, similarity 0.83 · walk score 0.831"
    assert gp.why(TRACE, NODES, FACTS, "6") == \
        "chunk “Guide / Start” matched the question directly, similarity 0.83 → code “Guide / Start” (contains 0.30)" \
        " · path cost 0.30 · walk score 0.550"
    assert gp.why(TRACE, NODES, FACTS, "10") == \
        "entity “@State”, named in the question → entity “State” (synonymy 0.12) → chunk “Decorators / A very long" \
        " section title that goe…” (passage 0.20) · path cost 0.32 · walk score 0.400"


def test_why_for_a_fact_source_a_missing_fact_and_no_path():
    trace = {**TRACE, "paths": {"4": ["4"], "2": ["2"]},
             "seed_why": {"4": {"via": "fact source", "fact": 31, "similarity": 0.7},
                          "2": {"via": "fact", "fact": 99, "similarity": 0.7}}}
    assert gp.why(trace, NODES, FACTS, "4") == \
        "fact (Router, uses, pushUrl), read from chunk “Router / pushUrl” · walk score 0.612"
    assert gp.why(trace, NODES, FACTS, "2") == \
        "fact (a fact no longer in the index) → entity “pushUrl” · walk score 0.610"
    assert gp.why(trace, NODES, FACTS, "5") == ("chunk “Guide / Start” was not reached by the walk: the graph's "
                                                "PageRank from the matched facts ranked it in · walk score 0.831")


def test_the_picture_draws_paths_first_and_highlights_only_them():
    pic = gp.picture(TRACE, NODES, FACTS, ["4", "6"], limit=6)
    # the two paths, then the next subtree the walk grew (8 -> 9), before any lone seed (1)
    assert pic.nodes == ["2", "4", "5", "6", "8", "9"]
    assert pic.kinds == {"2": "entity", "4": "chunk", "5": "chunk", "6": "code", "8": "entity", "9": "entity"}
    assert pic.labels["4"] == "Router / pushUrl" and pic.labels["8"] == "@State"
    assert pic.targets == ["4", "6"]
    assert pic.edges == [gp.Edge("2", "4", "passage", 0.2, "passage 0.20", True),
                         gp.Edge("5", "6", "contains", 0.3, "contains 0.30", True),
                         gp.Edge("8", "9", "synonymy", 0.12, "synonymy 0.12", False)]
    seven = gp.picture(TRACE, NODES, FACTS, ["4", "6"], limit=8)
    assert seven.nodes == ["2", "4", "5", "6", "8", "9", "10", "1"]  # then the lone seeds
    assert seven.edges[-1] == gp.Edge("1", "2", "fact", seven.edges[-1].cost, "uses", False)
    assert math.isnan(seven.edges[-1].cost)
    assert "walk score 0.612 · similarity 0.751" in pic.hover["4"]
    assert "&lt;b&gt;now&lt;/b&gt;" in pic.hover["2"]  # document text is shown, not rendered
    wide = gp.picture(TRACE, NODES, FACTS, ["10"], limit=60)
    assert set(wide.nodes) == set(TRACE["visited"])
    assert [(e.a, e.b) for e in wide.edges if e.hot] == [("8", "9"), ("9", "10")]
    assert [(e.a, e.b) for e in wide.edges if not e.hot] == [("2", "4"), ("5", "6"), ("1", "2")]


def test_the_figure_holds_the_labels_the_path_and_the_hover_text():
    fig = gp.figure(gp.picture(TRACE, NODES, FACTS, ["10"], limit=60), "walk")
    by_name = {t.name: t for t in fig.data}
    assert set(by_name) == {"passage", "passage (hover)", "contains", "contains (hover)", "fact", "fact (hover)",
                            "path to a result", "path to a result (hover)", "path labels", "chunk", "code", "file",
                            "entity"}
    assert list(by_name["path labels"].text) == ["synonymy 0.12", "passage 0.20"]
    path = by_name["path to a result"]
    assert len(path.x) == 6 and path.line.color == gp.HOT and path.x[2] is None
    chunks = by_name["chunk"]
    assert list(chunks.customdata) == ["10", "5", "4"]  # the path to the result first
    assert list(chunks.text) == ["Decorators / A very long se…", "Guide / Start", "Router / pushUrl"]
    assert list(chunks.marker.size) == [18, 10, 10]  # the chosen result is drawn larger
    assert list(by_name["fact (hover)"].hovertext) == ["uses"]
    assert list(by_name["contains (hover)"].hovertext) == ["contains edge, cost 0.30"]
    assert fig == gp.figure(gp.picture(TRACE, NODES, FACTS, ["10"], limit=60), "walk")  # same trace, same picture


@pytest.fixture(scope="module")
def touch(fixture_index, embedder):
    from dgrag.retrieve.retriever import Retriever

    settings, _ = fixture_index
    return settings, Retriever(settings, embedder=embedder).retrieve("touch event TouchType Down", {"verbose": True})


def test_on_the_excerpt_the_trace_carries_the_graphs_edges_and_seeds(touch):
    settings, result = touch
    st3 = result["trace"]["stage3"]
    routes = result["trace"]["routes"]["chunk"]
    for rowid, cosine in zip(routes["rowids"], routes["cosine"]):
        assert st3["seed_why"][rowid] == {"via": "question", "similarity": pytest.approx(cosine, abs=1e-6)}
    image = result["images"][0]
    assert image["breadcrumb"] == "Touch Event / Example" and len(image["graph_path_rowids"]) == 2
    seed, target = image["graph_path_rowids"]
    assert [seed, target, "contains", 0.3] in st3["hops"]  # edge_cost gives every contains edge 0.3
    nodes, facts, rowid = gp.describe(settings.db_path, st3, [image["id"]])
    assert rowid == {image["id"]: target} and nodes[seed]["type"] == "chunk"
    assert gp.why(st3, nodes, facts, target) == (
        f"chunk “Touch Event / Example” matched the question directly, similarity "
        f"{st3['seed_why'][seed]['similarity']:.2f} → image “Touch Event / Example” (contains 0.30) · path cost 0.30"
        f" · walk score {image['score']:.3f}")


def test_on_the_excerpt_explain_draws_every_result_or_the_chosen_one(touch):
    settings, result = touch
    fig, text = gp.explain(settings.db_path, result)
    items = [it for k in gp.KINDS for it in result[k]]
    heads = [line for line in text.splitlines() if line.startswith("- **#")]
    assert len(heads) == len(items) and all(f"`{it['id']}`" in h for it, h in zip(items, heads))
    # a section: the score that ranked it and its features; a code block, table or image: the walk's
    for it, h in zip(items, heads):
        assert ("rank score" in h) == (it["type"] == "chunk") and ("walk score" in h) == (it["type"] != "chunk")
    by_name = {t.name: t for t in fig.data}
    hot = sum(len(it["graph_path_rowids"]) - 1 for it in items)
    assert len(by_name["path labels"].text) == hot == 4  # the code, 2 tables and the image hang off a chunk
    assert "Touch Event / TouchObject" in list(by_name["chunk"].text)
    image = result["images"][0]
    fig, text = gp.explain(settings.db_path, result, [image["id"]], limit=30)
    assert text.startswith(f"- **#1** `{image['id']}`: chunk “Touch Event / Example”")
    by_name = {t.name: t for t in fig.data}
    assert list(by_name["path labels"].text) == ["contains 0.30"]
    assert list(by_name["image"].marker.size).count(18) == 1  # only the chosen result is drawn larger
    assert sum(len(by_name[k].x) for k in gp.COLOURS if k in by_name) == 30
    assert gp.explain(settings.db_path, {**result, "trace": {}}) == (
        None, "_Nothing to explain: run a diffusion retrieval that returns results._")


def test_both_diffusion_engines_record_the_same_picture_fields(fixture_index, embedder, touch):
    from dgrag.retrieve.retriever import Retriever

    settings, compiled = touch
    reference = Retriever(settings, embedder=embedder).retrieve(
        "touch event TouchType Down", {"verbose": True, "diffusion_engine": "python"})
    a, b = compiled["trace"]["stage3"], reference["trace"]["stage3"]
    assert len(a["hops"]) > 50 and len(a["score"]) == len(a["visited"])
    for key in ("hops", "score", "similarity", "seed_why", "paths"):
        assert a[key] == b[key], key
