"""Cross-references a docs site's structure carries: API-identifier edges (a guide naming an
API -> the reference section its heading defines) and anchored jump links (-> the section the
anchor names), built at index time and kept right by an incremental re-index; and the ranking's
`xref` feature over them."""
from __future__ import annotations

import numpy as np
import pytest

from dgrag.config import Settings
from dgrag.ingest.pipeline import index_folder
from dgrag.ingest.xref import MAX_DEFINERS, api_edges, defined_by
from dgrag.retrieve import cross_refs
from dgrag.retrieve.loaded import load_index
from dgrag.store import Store

GUIDE = """# Writing slices

## Making a slice

Call `createSlice` with a name and the initial state; the store gets its reducer.

```js
const todos = createSlice({ name: 'todos', initialState: [] })
```

## Navigation

The nav bar lists the pages. The options are in [the slice reference](api.md#createslice).
"""
API = """# API reference

## `createSlice`

Takes a name and case functions; returns a slice object.

## nav

The site's top bar.

## Options

Every option of a slice, and how createSlice reads them.
"""
OTHER = """# Unrelated

## Shipping

Nothing here names an API.
"""


@pytest.mark.parametrize("title, ident", [
    ("`createSlice`", "createSlice"), ("createSlice", "createSlice"), ("replaceReducer(nextReducer)", "replaceReducer"),
    ("Vec::push", "Vec::push"), ("`router.pushUrl`", "router.pushUrl"), ("<ClientOnly>", "ClientOnly"),
    ("`ThreadPool`", "ThreadPool"), ("assert_eq!", "assert_eq"), ("search_case_insensitive", "search_case_insensitive"),
    # plain words, prose headings, product names and file names define nothing
    ("nav", None), ("Options", None), ("footer", None), ("TodoMVC", None), ("macOS", None), ("App.js", None),
    ("combineReducers.md", None), ("What is createSlice?", None), ("Using createAsyncThunk", None), ("push", None),
])
def test_a_heading_defines_an_identifier_only_when_it_is_one_and_specific(title, ident):
    assert defined_by(title) == ident


def _rows(con, path: str) -> dict[str, int]:
    return {t: r for r, t in con.execute(
        "SELECT rowid, json_extract(meta, '$.title') FROM nodes WHERE type='chunk' AND source_path=?", (path,))}


def _edges(con, kind: str) -> set[tuple[int, int]]:
    return set(con.execute("SELECT src, dst FROM edges WHERE type=?", (kind,)).fetchall())


@pytest.fixture
def site(tmp_path, hash_embedder):
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in (("guide.md", GUIDE), ("api.md", API), ("other.md", OTHER)):
        (docs / name).write_text(text, encoding="utf-8")
    s = Settings(db_path=tmp_path / "index.db", docs_root=docs, embedder="hash")
    with Store(s.db_path) as st:
        report = index_folder(s, st, hash_embedder)
    return s, report


def test_a_guide_calling_an_api_gets_an_edge_to_its_reference_section_and_common_words_none(site):
    s, report = site
    with Store(s.db_path, readonly=True) as st:
        guide, api = _rows(st.con, "guide.md"), _rows(st.con, "api.md")
        edges = _edges(st.con, "api")
        weight = st.con.execute("SELECT weight FROM edges WHERE type='api'").fetchall()
    # the prose and the code block of "Making a slice" name createSlice: one edge, from the
    # section (its code block's uses count for it); "Navigation" says "nav" and "options":
    # plain words, no edge; api.md's own "Options" names createSlice on the defining page: none
    assert edges == {(guide["Making a slice"], api["createSlice"])}
    assert report.api_edges == 1
    assert weight == [(1.0,)]  # one section names it: log2(1 + 1) = 1


def test_an_anchored_link_reaches_the_section_it_names(site):
    s, _ = site
    with Store(s.db_path, readonly=True) as st:
        guide, api = _rows(st.con, "guide.md"), _rows(st.con, "api.md")
        page = st.con.execute("SELECT rowid FROM nodes WHERE type='file' AND source_path='api.md'").fetchone()[0]
        jumps = _edges(st.con, "jump")
    assert (guide["Navigation"], api["createSlice"]) in jumps  # the section the anchor names
    assert (guide["Navigation"], page) in jumps  # and its page, which the `link` feature reads
    assert not {(guide["Navigation"], api[t]) for t in ("API reference", "nav", "Options")} & jumps


def test_a_reindex_after_an_edit_keeps_the_edges_right(site, hash_embedder):
    s, _ = site
    guide = s.docs_root / "guide.md"
    guide.write_text(GUIDE.replace("`createSlice`", "the slice maker").replace("createSlice(", "makeSlice(")
                     .replace("#createslice", "#options"), encoding="utf-8")
    (s.docs_root / "other.md").write_text(OTHER.replace("Nothing here names an API.", "Ship with `createSlice`."),
                                          encoding="utf-8")
    with Store(s.db_path) as st:
        index_folder(s, st, hash_embedder)
        g, api, other = _rows(st.con, "guide.md"), _rows(st.con, "api.md"), _rows(st.con, "other.md")
        assert _edges(st.con, "api") == {(other["Shipping"], api["createSlice"])}
        jumps = _edges(st.con, "jump")
    assert (g["Navigation"], api["Options"]) in jumps and (g["Navigation"], api["createSlice"]) not in jumps


def test_hubs_and_ambiguous_identifiers_are_bounded():
    # defined by more sections than MAX_DEFINERS in one language: ambiguous, no edge
    many = [(i, f"ref{i}.md", "`doThing`", "", "en") for i in range(MAX_DEFINERS + 1)]
    assert api_edges(many + [(100, "guide.md", "Use", "call doThing()", "en")]) == []
    # a translated site: each guide reaches its own language's reference only
    sections = [(1, "en/ref.md", "useData", "", "en"), (2, "es/ref.md", "useData", "", "es"),
                (3, "en/guide.md", "Data", "useData() returns", "en"), (4, "es/guide.md", "Datos", "useData()", "es")]
    assert api_edges(sections) == [(3, 1, 1.0), (4, 2, 1.0)]
    # the more sections name an identifier, the lighter (the walk's cost higher) each edge
    users = [(10 + i, f"g{i}.md", "G", "router.pushUrl(x)", "") for i in range(7)]
    edges = api_edges([(1, "router.md", "pushUrl", "", "")] + users)
    assert [w for _, _, w in edges] == [pytest.approx(1 / 3)] * 7  # 1 / log2(1 + 7)


def test_the_xref_feature_credits_the_section_a_top_passage_calls(site):
    s, _ = site
    li = load_index(s.db_path, s)
    with Store(s.db_path, readonly=True) as st:
        guide, api, other = _rows(st.con, "guide.md"), _rows(st.con, "api.md"), _rows(st.con, "other.md")
    top = li.index_of(np.array([guide["Making a slice"], other["Shipping"]]))
    cands = li.index_of(np.array([api["createSlice"], api["nav"], guide["Navigation"]]))
    value = cross_refs.evidence(li, top, np.array([0.8, 1.0]), cands)
    # createSlice's section: the guide's base 0.8 over log2(1 + its 2 cross-references: the API
    # edge and the anchored link); nav: nothing calls it; Navigation: not reached from the top
    assert value.tolist() == [pytest.approx(0.8 / np.log2(3)), 0.0, 0.0]
    assert set(cross_refs.reached(li, top).tolist()) == {int(cands[0])}


def test_the_reference_a_matching_guide_calls_is_ranked_by_the_xref_weight(tmp_path, hash_embedder):
    from conftest import crafted_retriever

    from dgrag.retrieve.ranking import FEATURES

    pages = {"guide.md": GUIDE, "api.md": API, "other.md": OTHER}
    for i in range(6):  # more pages than the results hold, so that a section can miss them
        pages[f"filler{i}.md"] = f"# Topic {i}\n\n## Part {i}\n\nShipping boxes number {i} by sea and air.\n"
    r = crafted_retriever(tmp_path, pages, hash_embedder)
    zero = {f"rank_w_{f}": 0.0 for f in FEATURES if f != "base"}
    q = "initial state of the todos store reducer"
    ref = "API reference / createSlice"

    def ranked(cfg):
        res = r.retrieve(q, {**zero, **cfg, "final_chunk_k": 3, "verbose": True})
        return [c["breadcrumb"] for c in res["chunks"]], res

    without, _ = ranked({})
    with_xref, _ = ranked({"rank_w_xref": 1.0})
    assert without[0] == "Writing slices / Making a slice" and ref not in without
    assert with_xref[:2] == ["Writing slices / Making a slice", ref]  # the guide first, then the API it calls
    off = r.retrieve(q, {**zero, "rank_w_xref": 5.0, "graph_features": False, "final_chunk_k": 3})
    assert [c["breadcrumb"] for c in off["chunks"]] == without  # the no-graph ablation turns it off


def test_an_index_built_before_the_edges_gets_them_without_a_changed_page(site, hash_embedder):
    s, _ = site
    with Store(s.db_path) as st:
        built = _edges(st.con, "api")
        with st.transaction():  # as an index written before API edges existed
            st.con.execute("DELETE FROM edges WHERE type='api'")
            st.con.execute("DELETE FROM meta WHERE key='xref_rules'")
        again = index_folder(s, st, hash_embedder)
        assert again.files_indexed == 0 and again.api_edges == 1 and _edges(st.con, "api") == built
        kept = index_folder(s, st, hash_embedder)  # nothing changed since: kept, not rebuilt
        assert kept.api_edges == 1 and _edges(st.con, "api") == built
