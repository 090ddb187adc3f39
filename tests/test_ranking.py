"""The diffusion's weighted chunk ranking (retrieve/ranking.py) on a small crafted docs folder:
the base feature alone is dense's ranking; the lexical feature finds an identifier deep in a long
section; a `[text](page.md)` link brings the linked page's section in; PPR falls back to dense
when its seeds lead nowhere dense agrees with."""
from __future__ import annotations

import pytest
from conftest import crafted_retriever

from dgrag.config import RetrievalConfig, Settings
from dgrag.errors import ConfigError
from dgrag.retrieve.ranking import FEATURES
from dgrag.retrieve.retriever import Retriever
from dgrag.store import Store

FILLER = " ".join(f"The layout engine measures component{i} before it draws the frame." for i in range(12))
PAGES = {
    "guide.md": "# Navigation guide\n\n## Opening a page\n\nCall the page router to open the second page, "
                "see the [router reference](router.md).\n\n## Themes\n\nColours and fonts of the app.\n",
    "router.md": "# Router reference\n\n## pushUrl\n\nOpens a page by its URL with parameters.\n\n"
                 "## Limits\n\nAt most 32 pages on the stack.\n",
    "layout.md": "# Layout\n\n## Measuring\n\n" + FILLER + " Set setFooBarMode to skip the second pass.\n\n"
                 "## Drawing\n\nThe frame is drawn after measuring.\n",
    "tabs.md": "# Tabs reference\n\n## Attributes\n\nThe attributes a tab bar takes.\n\n"
               "| name | effect |\n|---|---|\n| barBackgroundBlurStyle | blurs what lies behind the tab bar |\n\n"
               "## Events\n\nonChange fires when the selected tab changes.\n",
    "motion.md": "# Motion guide\n\n## Moving a card\n\nTo move a card smoothly, wrap the change in animateTo.\n",
    "curves.md": "# Curves reference\n\n## animateTo\n\nRuns the closure's state changes over a duration.\n\n"
                 "## Spring\n\nA physical curve with stiffness and damping.\n",
}
ZERO = {f"rank_w_{f}": 0.0 for f in FEATURES if f != "base"}


@pytest.fixture(scope="module")
def crafted(tmp_path_factory, hash_embedder):
    return crafted_retriever(tmp_path_factory.mktemp("crafted"), PAGES, hash_embedder)


def _sections(res: dict) -> list[str]:
    return [c["breadcrumb"] for c in res["chunks"]]


def _feature(retriever, res: dict, feature: str, by: str = "breadcrumb") -> dict:
    """One feature of every ranked candidate, keyed by the candidate's `by` column."""
    rk = res["trace"]["stage3"]["ranking"]
    with Store(retriever.handle.path, readonly=True) as st:
        key = {str(n["rowid"]): n[by] for n in st.nodes.by_rowids(int(r) for r in rk["nodes"])}
    return {key[node]: row[FEATURES.index(feature)] for node, row in zip(rk["nodes"], rk["values"])}


def test_the_base_feature_alone_is_the_dense_ranking(crafted):
    for q in ("how do I open a page with parameters", "setFooBarMode", "fonts and colours"):
        dense = crafted.retrieve(q, {"method": "dense"})
        only_base = crafted.retrieve(q, {**ZERO, "method": "diffusion"})
        assert _sections(only_base)[:5] == _sections(dense)[:5]


def test_the_lexical_feature_finds_an_identifier_past_the_embedded_text(crafted):
    q = "setFooBarMode"
    section = "Layout / Measuring"
    assert len(FILLER) > 384  # the identifier sits past what the chunk's vector embeds
    res = crafted.retrieve(q, {**ZERO, "rank_w_lexical": 1.0, "verbose": True})
    assert _sections(res)[0] == section
    rk = res["trace"]["stage3"]["ranking"]
    lex = {node: row[FEATURES.index("lexical")] for node, row in zip(rk["nodes"], rk["values"])}
    assert max(lex.values()) == 1.0 and sorted(lex.values())[-2] < 1.0  # one section holds it


def test_a_link_from_a_top_section_brings_the_linked_pages_section(crafted):
    q = "Navigation guide: opening a page"
    res = crafted.retrieve(q, {**ZERO, "rank_w_link": 1.0, "verbose": True})
    link = _feature(crafted, res, "link", by="source_path")
    assert link.get("router.md", 0.0) > 0.0  # linked from the guide's section
    assert link.get("layout.md", 0.0) == 0.0  # no link either way
    assert "router.md" in [c["source_path"] for c in res["chunks"][:3]]


def test_the_child_feature_lifts_the_section_that_holds_a_matching_table(crafted):
    q = "| barBackgroundBlurStyle | blurs what lies behind the tab bar |"
    res = crafted.retrieve(q, {**ZERO, "rank_w_child": 1.0, "verbose": True})
    child, dense = _feature(crafted, res, "child"), _feature(crafted, res, "dense")
    held = "Tabs reference / Attributes"
    assert child[held] == 0.0 and all(v < 0.0 for c, v in child.items() if c != held)  # the best, alone
    assert dense[held] < 0.0  # the section's own text is not what matched: its table is
    assert _sections(res)[0] == held


def test_the_bridge_feature_reaches_the_section_a_top_passage_names(crafted):
    q = "how do I move a card smoothly"
    res = crafted.retrieve(q, {**ZERO, "rank_w_bridge": 1.0, "verbose": True})
    bridge = _feature(crafted, res, "bridge")
    assert _sections(res)[0] == "Motion guide / Moving a card"  # the first hop, by its words
    assert bridge["Curves reference / animateTo"] > 0.0  # named by it, on another page
    assert bridge.get("Curves reference / Spring", 0.0) == 0.0  # same page, not named
    assert bridge["Motion guide / Moving a card"] == 0.0  # a passage does not bridge to its own page
    assert "Curves reference / animateTo" in _sections(res)[:2]


def test_the_language_feature_marks_sections_in_the_questions_language(crafted):
    for q, marked in (("如何打开页面 pushUrl", 0.0), ("how do I open a page with pushUrl", 1.0)):
        res = crafted.retrieve(q, {**ZERO, "rank_w_language": 1.0, "verbose": True})
        assert set(_feature(crafted, res, "language").values()) == {marked}  # every page is English


def test_ppr_falls_back_to_dense_when_no_seed_leads_where_dense_agrees(crafted):
    q = "how do I open a page with parameters"
    dense = crafted.retrieve(q, {"method": "dense"})
    # compared with none of dense's passages, the walk's pages never agree: it falls back
    never = crafted.retrieve(q, {"method": "ppr", "diffusion_trust_dense_k": 0, "verbose": True})
    assert never["trace"]["stage3"]["fell_back_to_dense"] is True
    assert _sections(never) == _sections(dense)
    agreed = crafted.retrieve(q, {"method": "ppr", "verbose": True})  # a small folder: dense agrees
    assert agreed["trace"]["stage3"]["fell_back_to_dense"] is False
    assert _sections(agreed) != _sections(dense)
    off = crafted.retrieve(q, {"method": "ppr", "diffusion_trust_dense_k": 0, "ppr_fallback": False,
                               "verbose": True})
    assert off["trace"]["stage3"]["fell_back_to_dense"] is False


def test_rank_weights_are_bounded():
    from dgrag.errors import ConfigError

    with pytest.raises(ConfigError):
        RetrievalConfig().merged({"rank_w_lexical": 1e9})
    with pytest.raises(ConfigError, match="rank_w_prose must be a finite number >= 0"):
        RetrievalConfig().merged({"rank_w_prose": -1})


def test_the_bridge_never_takes_the_first_place_from_the_passages_that_match_the_question():
    import numpy as np

    from dgrag.retrieve.ranking import order

    F = np.zeros((4, len(FEATURES)))
    F[:, FEATURES.index("base")] = [1.0, 0.2, 0.9, 0.1]
    F[:, FEATURES.index("bridge")] = [0.0, 1.0, 0.0, 0.5]
    w = np.zeros(len(FEATURES))
    w[FEATURES.index("base")] = 1.0
    assert order(F, w).tolist() == [0, 2, 1, 3]  # no bridge weight: the base order
    w[FEATURES.index("bridge")] = 2.0  # scores 1.0, 2.2, 0.9, 1.1
    assert order(F, w).tolist() == [0, 1, 3, 2]  # 1 and 3 rise, behind the first hop


def test_fact_evidence_equals_a_node_by_node_sum(crafted):
    """The facts' evidence, summed over the nodes they reach, equals the plain per-node sum:
    each fact's min-max score at its source chunk, half of it shared by each entity's
    passages, the named entities' 1 shared the same way; chunks only, over the best."""
    import numpy as np

    from dgrag.core import Route
    from dgrag.kernels.graph_arrays import EDGE_TYPE_CODES, NODE_TYPE_CODES
    from dgrag.retrieve.methods import fact_evidence

    li = crafted.handle.get()
    n_facts = li.fact_head.shape[0]
    assert n_facts >= 4
    pos = np.arange(min(n_facts, 12))
    score = np.linspace(0.9, 0.2, pos.size)
    facts = Route("fact", pos, score.copy(), score.copy())
    exact = [int(li.fact_head[0])]

    want = np.zeros(li.n_nodes)

    def spread(e, credit):
        lo, hi = li.ga.indptr[e], li.ga.indptr[e + 1]
        nbr = li.ga.indices[lo:hi][li.ga.etype[lo:hi] == EDGE_TYPE_CODES["passage"]]
        for v in nbr.tolist():
            want[v] += credit / nbr.size

    s = (score - score.min()) / (score.max() - score.min())
    for p, w in zip(pos.tolist(), s.tolist()):
        if li.fact_chunk[p] >= 0:
            want[li.fact_chunk[p]] += w
        for e in (li.fact_head[p], li.fact_tail[p]):
            if e >= 0:
                spread(int(e), w * 0.5)
    spread(exact[0], 1.0)
    want[li.node_type != NODE_TYPE_CODES["chunk"]] = 0.0
    want /= want.max()
    got = fact_evidence(li, facts, exact)
    assert want.max() == 1.0 and np.count_nonzero(want) >= 2
    assert np.allclose(got, want, rtol=0, atol=1e-12)
    assert not fact_evidence(li, Route("fact", pos[:0], score[:0], score[:0]), []).any()


@pytest.fixture(scope="module")
def chain(tmp_path_factory, hash_embedder):
    """A two-hop pair: the film's page names Hong Kong, the question names the British."""
    from dgrag.ingest.pipeline import index_folder

    root = tmp_path_factory.mktemp("chain")
    (root / "docs").mkdir()
    pages = {"film.md": "# Fist Power\n\nFist Power is a 2000 action film made and released in Hong Kong.\n",
             "colony.md": "# British Hong Kong\n\nThe period of Crown rule from 1842 to 1997.\n",
             "other.md": "# Hong Kong cinema\n\nFilms of the territory.\n\n# Kowloon\n\nA part of the city.\n"}
    for name, text in pages.items():
        (root / "docs" / name).write_text(text, encoding="utf-8")
    s = Settings(db_path=root / "index.db", docs_root=root / "docs", embedder="hash")
    with Store(s.db_path) as st:
        index_folder(s, st, hash_embedder)
    return Retriever(Settings(db_path=s.db_path), embedder=hash_embedder)


def test_the_question_may_complete_a_title_the_top_passage_names(chain):
    """"British Hong Kong": "Hong Kong" is in the film's passage, "British" only in the question.
    With `rank_bridge_question` it is bridge evidence, without it not; a title with a term in
    neither gets none."""
    q = "When was the country that produced Fist Power taken by the British?"
    on = _feature(chain, chain.retrieve(q, {**ZERO, "rank_w_bridge": 1.0, "rank_bridge_k": 1, "verbose": True}),
                  "bridge")
    off = _feature(chain, chain.retrieve(q, {**ZERO, "rank_w_bridge": 1.0, "rank_bridge_k": 1,
                                             "rank_bridge_question": False, "verbose": True}), "bridge")
    assert on["British Hong Kong"] > 0.0 and off.get("British Hong Kong", 0.0) == 0.0
    assert on["Hong Kong cinema"] == 0.0  # "cinema" is in neither
    assert on["Fist Power"] == 0.0  # a passage does not bridge to its own page


def test_ppr_gets_every_nth_place_after_the_head_and_nothing_is_dropped():
    from dgrag.retrieve.ranking import interleave

    ranked = [(10, 5.0), (11, 4.0), (12, 3.0), (13, 2.0), (14, 1.0), (15, 0.5), (16, 0.2)]
    # PPR's best is already in the head, 99 is no candidate: its places go to 15, then 16
    assert interleave(ranked, [10, 99, 15, 16], head=2, every=3) == [
        (10, 5.0), (11, 4.0), (12, 3.0), (13, 2.0), (15, 0.5), (14, 1.0), (16, 0.2)]
    assert interleave(ranked, [16], head=1, every=2) == [
        (10, 5.0), (11, 4.0), (16, 0.2), (12, 3.0), (13, 2.0), (14, 1.0), (15, 0.5)]
    # no new PPR passage, every 0, or a head as long as the list: the weighted order
    assert interleave(ranked, [10, 11], head=2, every=3) == ranked
    assert interleave(ranked, [16], head=2, every=0) == ranked
    assert interleave(ranked, [16], head=7, every=1) == ranked


def test_ppr_gets_places_where_half_of_its_pages_agree_with_dense(crafted):
    q = "how do I open a page with parameters"
    anywhere = {"verbose": True, "rank_ppr_in": "any"}  # the crafted folder is a docs tree
    for dense_k in (20, 1, 0):
        res = crafted.retrieve(q, {**anywhere, "diffusion_trust_dense_k": dense_k})
        rk = res["trace"]["stage3"]["ranking"]
        assert rk["ppr_places"] == (rk["ppr_agreement"] >= RetrievalConfig().rank_ppr_agreement)
        assert rk["ppr_agreement"] == res["trace"]["stage3"]["dense_agreement"]
    assert rk["ppr_agreement"] == 0.0 and not rk["ppr_places"]  # dense_k 0: nothing agrees
    every = crafted.retrieve(q, {**anywhere, "diffusion_trust_dense_k": 0, "rank_ppr_agreement": 0.0})
    assert every["trace"]["stage3"]["ranking"]["ppr_places"]  # a bar of 0: every walk gets its places


@pytest.fixture(scope="module")
def passages(tmp_path_factory, hash_embedder):
    """The crafted folder's sections, one page each: a passage corpus."""
    pages = {f"p{i}.md": f"# {title}\n\n{body}\n" for i, (title, body) in enumerate((
        ("Opening a page", "Call the page router to open the second page."),
        ("pushUrl", "Opens a page by its URL with parameters."),
        ("Limits", "At most 32 pages on the stack."),
        ("Moving a card", "To move a card smoothly, wrap the change in animateTo."),
        ("animateTo", "Runs the closure's state changes over a duration.")))}
    return crafted_retriever(tmp_path_factory.mktemp("passages"), pages, hash_embedder)


def test_ppr_places_only_in_a_passage_corpus_unless_asked(crafted, passages):
    q, agree = "how do I open a page with parameters", {"verbose": True, "rank_ppr_agreement": 0.0}
    assert not crafted.handle.get().passage_pages() and passages.handle.get().passage_pages()
    docs = crafted.retrieve(q, agree)["trace"]["stage3"]["ranking"]
    assert docs["ppr_order"] and not docs["ppr_places"] and not docs["passage_pages"]
    assert crafted.retrieve(q, {**agree, "rank_ppr_in": "any"})["trace"]["stage3"]["ranking"]["ppr_places"]
    one = passages.retrieve(q, agree)["trace"]["stage3"]["ranking"]
    assert one["ppr_order"] and one["ppr_places"] and one["passage_pages"]
    with pytest.raises(ConfigError, match="rank_ppr_in"):
        RetrievalConfig().merged({"rank_ppr_in": "docs"})


def test_graph_features_false_is_the_no_graph_ablation():
    from dgrag.config import GRAPH_WEIGHTS, RetrievalConfig

    default, off = RetrievalConfig(), RetrievalConfig().merged({"graph_features": False})
    assert all(getattr(default, w) >= 0 for w in GRAPH_WEIGHTS) and any(getattr(default, w) > 0 for w in GRAPH_WEIGHTS)
    assert [getattr(off, w) for w in GRAPH_WEIGHTS] == [0.0] * len(GRAPH_WEIGHTS)
    assert off.rank_ppr_every == 0 and off.rank_bridge_question is False
    kept = [f for f in ("rank_w_base", "rank_w_lexical", "rank_w_page", "rank_w_language", "method")]
    assert [getattr(off, f) for f in kept] == [getattr(default, f) for f in kept]
    assert RetrievalConfig(graph_features=False).rank_w_ppr == 0.0  # from the environment too
