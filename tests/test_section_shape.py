"""A section's shape (retrieve/shape.py) and the ranking's `prose` feature: a heading with no text
of its own and a list of links match a question by their words and answer nothing; the section
below the heading, and the page the list links to, are ranked above them."""
from __future__ import annotations

import pytest
from conftest import crafted_retriever

from dgrag.config import RetrievalConfig
from dgrag.retrieve.ranking import FEATURES
from dgrag.retrieve.shape import prose_share
from dgrag.store import Store

PAGES = {
    "store.md": "# Store\n\n## Store methods\n\n### replaceReducer\n\n"
                "Store methods: replaceReducer swaps the reducer the store uses, for code splitting.\n",
    "guides.md": "# Guides\n\n## Store methods\n\n- [Store methods](store.md)\n- [Store methods, replaceReducer](store.md)\n\n"
                 "## Testing\n\nRun the reducers in a test with a fresh store each time.\n",
}
ZERO = {f"rank_w_{f}": 0.0 for f in FEATURES if f != "base"}


@pytest.mark.parametrize("text, share", [
    ("# Store", 0.0),                                                    # a heading alone
    ("## Store Methods\n\n&nbsp;\n<a id=\"methods\"></a>", 0.0),          # markup, no text
    ("## Coming\n\nComing soon.", 0.0),                                   # too short to answer
    ("## See also\n\n- [Using ACE Tools](ace.md)\n- [References](ref.md)", 0.0),
    ("## See also\n\n- <a href=\"a.html\">Using ACE Tools</a>\n- <a href=\"b.html\">References</a>", 0.0),
    ("## Routing\n\nPages are routed by their file path under the source folder.\n- [Routing](r.md)", 0.5),
    ("## Open\n\nCall the [router](router.md) to open a page with its parameters and a callback.", 1.0),
    # a sentence whose link text is most of it is prose, not a link list
    ("## Adding\n\nThe [configureStore API adds the thunk middleware during store creation](a.md), so it is there.", 1.0),
    ("## Picture\n\nThe layout of the page, as the preview draws it.\n![The page layout](layout.png)", 1.0),
    ("## APIs\n\n| API | Effect |\n|---|---|\n| [dispatch](a.md) | sends an action |\n| [subscribe](b.md) | listens |", 0.5),
    ("## 路由\n\n页面按源目录下的文件路径路由，每个文件对应一个页面。", 1.0),
    ("A passage without a heading: Hong Kong films of the 1990s.", 1.0),  # MuSiQue's passages
])
def test_prose_share_reads_the_sections_own_lines(text, share):
    assert prose_share(text) == pytest.approx(share)


@pytest.fixture(scope="module")
def shaped(tmp_path_factory, hash_embedder):
    return crafted_retriever(tmp_path_factory.mktemp("shaped"), PAGES, hash_embedder)


def _prose(retriever, res: dict) -> dict:
    rk = res["trace"]["stage3"]["ranking"]
    with Store(retriever.handle.path, readonly=True) as st:
        crumb = {str(n["rowid"]): n["breadcrumb"] for n in st.nodes.by_rowids(int(r) for r in rk["nodes"])}
    return {crumb[node]: row[FEATURES.index("prose")] for node, row in zip(rk["nodes"], rk["values"])}


def test_a_heading_alone_and_a_link_list_rank_below_the_section_that_answers(shaped):
    q = "Store methods"
    answer = "Store / Store methods / replaceReducer"
    hollow = ("Store / Store methods", "Guides / Store methods", "Store")
    by_words = shaped.retrieve(q, {**ZERO, "rank_w_prose": 1e-6, "verbose": True})  # computed, not weighed
    first = [c["breadcrumb"] for c in by_words["chunks"]]
    assert first[0] in hollow  # the words alone put a section with no answer first
    prose = _prose(shaped, by_words)
    assert prose[answer] == 0.0 and prose["Guides / Testing"] == 0.0  # prose: no change
    assert all(prose[h] == -1.0 for h in hollow if h in prose)
    shaped_res = shaped.retrieve(q, {**ZERO, "rank_w_prose": 1.0})
    assert [c["breadcrumb"] for c in shaped_res["chunks"]][0] == answer


def test_prose_is_a_text_feature_kept_by_the_no_graph_ablation():
    on = RetrievalConfig()
    assert on.rank_w_prose > 0
    assert RetrievalConfig(graph_features=False).rank_w_prose == on.rank_w_prose
