"""Release notes known for what they are (retrieve/shape.py, the ranking's `release` feature): a
changelog names every feature once per release and matches any question by its words; it ranks
below the page that answers unless the question asks about a version or a change."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import crafted_retriever

from dgrag.config import RetrievalConfig
from dgrag.retrieve.ranking import FEATURES
from dgrag.retrieve.shape import asks_about_releases, release_sections

CHANGELOG = ("# Release Notes\n\n## Latest Changes\n\n* Docs fixes.\n\n"
             + "".join(f"## 0.{n}.0\n\n### Features\n\n* Response headers can be set per route in release 0.{n}.\n\n"
                       f"### Fixes\n\n* Response headers fixed for streaming.\n\n" for n in (110, 111, 112)))
PAGES = {
    "release-notes.md": CHANGELOG,
    "headers.md": "# Response headers\n\n## Set a header\n\nReturn a Response object and set its headers dict to "
                  "send custom response headers, for a streaming response too.\n",
}
ZERO = {f"rank_w_{f}": 0.0 for f in FEATURES if f != "base"}


def _crumbs(*pages: list[str]) -> tuple[list[list[str]], np.ndarray]:
    crumbs, at = [], []
    for i, page in enumerate(pages):
        for c in page:
            crumbs.append(c.split(" / "))
            at.append(i)
    return crumbs, np.array(at)


def test_a_page_of_release_notes_is_known_by_its_version_headings():
    changelog = ["Changelog", "Changelog / 4.0.0 - 2024-08-05", "Changelog / 4.0.0 - 2024-08-05 / Fixes",
                 "Changelog / v3.1.0", "Changelog / [3.0.0] - 2023-01-02", "Changelog / 3.0.0 (2023/01/02) / Added"]
    migration = ["Migrating", "Migrating / 2.0", "Migrating / 3.0 - RTK Query", "Migrating / Store setup",
                 "Migrating / Store setup / Reducers"]
    two = ["Notes", "Notes / 1.0.0", "Notes / 1.1.0"]  # two releases: not enough to tell
    versioned = ["Guide", "Guide / 1.0", "Guide / 1.1", "Guide / 1.2", "Guide / A", "Guide / B", "Guide / C",
                 "Guide / D", "Guide / E"]  # version headings, most sections not under one
    crumbs, pages = _crumbs(changelog, migration, two, versioned)
    got = release_sections(crumbs, pages)
    assert got.tolist() == [True] * 6 + [False] * (5 + 3 + 9)


@pytest.mark.parametrize("question, asks", [
    ("What changed in 0.115.0?", True), ("Which version added lifespan events?", True),
    ("Is on_event deprecated?", True), ("升级到新版本后启动报错", True), ("FastAPI with Pydantic v2", True),
    ("How do I declare a path parameter?", False), ("如何配置路由", False), ("set response headers", False),
    ("error 2.5 seconds timeout", True),  # a decimal reads as a version: release notes stay eligible
    ("create a brand-new engine in each test", False), ("如何新增一个路由", False),  # "new" is no release word
])
def test_a_question_about_versions_or_changes(question, asks):
    assert asks_about_releases(question) is asks


@pytest.fixture(scope="module")
def site(tmp_path_factory, hash_embedder):
    return crafted_retriever(tmp_path_factory.mktemp("releases"), PAGES, hash_embedder)


def test_release_notes_rank_below_the_page_that_answers_unless_asked_about_a_release(site):
    question = "response headers fixed for streaming"
    words = [c["breadcrumb"] for c in site.retrieve(question, {**ZERO, "rank_w_lexical": 1.0})["chunks"]]
    assert words[0].startswith("Release Notes")  # three releases name the words: the changelog wins by them
    known = [c["breadcrumb"] for c in site.retrieve(question, {**ZERO, "rank_w_lexical": 1.0,
                                                               "rank_w_release": 1.0})["chunks"]]
    assert known[0] == "Response headers / Set a header"
    asked = [c["breadcrumb"] for c in site.retrieve("response headers fixed for streaming in release 0.111",
                                                    {**ZERO, "rank_w_lexical": 1.0, "rank_w_release": 1.0})["chunks"]]
    assert asked[0].startswith("Release Notes / 0.11")


def test_release_is_a_text_feature_kept_by_the_no_graph_ablation():
    assert RetrievalConfig().rank_w_release > 0
    assert RetrievalConfig(graph_features=False).rank_w_release == RetrievalConfig().rank_w_release


def test_the_index_report_names_the_pages_of_release_notes(tmp_path):
    from dgrag.config import Settings
    from dgrag.ingest.pipeline import index_folder
    from dgrag.store import Store

    for name, text in PAGES.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    s = Settings(db_path=tmp_path / "i.db", docs_root=tmp_path)
    with Store(s.db_path) as st:
        rep = index_folder(s, st)
    assert rep.dialect["release_notes"] == ["release-notes.md"]
