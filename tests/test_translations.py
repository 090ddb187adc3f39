"""Translation gaps: counterpart pages across language trees (by path, by links, by meaning),
pages with no counterpart, drifted pairs, and an answer's citation in the asker's language.
Over a small bilingual tree (tests/fixtures/translations) indexed with the packaged embedder."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from dgrag.answer.translations import counterpart_section, heading_of, translation_gaps, tree_of
from dgrag.config import Settings
from dgrag.store import Store

TREE = Path(__file__).resolve().parent / "fixtures" / "translations"


@pytest.fixture(scope="module")
def bilingual(tmp_path_factory, embedder):
    from dgrag.ingest.pipeline import index_folder

    root = tmp_path_factory.mktemp("bilingual")
    shutil.copytree(TREE, root / "docs")
    s = Settings(db_path=root / "index.db", docs_root=root / "docs",
                 url_template="https://example.org/docs/{path}#L{line}")
    with Store(s.db_path) as st:
        index_folder(s, st, embedder)
    return s.db_path


def test_headings_give_the_api_and_its_version_mark():
    assert heading_of("## display.isFoldable<sup>20+</sup>") == ("display.isFoldable", "20+", "display.isFoldable")
    assert heading_of("### setWindowPrivacyMode20+") == ("setWindowPrivacyMode", "20+", "setWindowPrivacyMode")
    assert heading_of("## GestureMask枚举说明") == ("GestureMask枚举说明", "", "GestureMask")
    assert heading_of("## Modules to Import") == ("Modules to Import", "", "")   # prose, not an API
    assert heading_of("## 导入模块")[2] == ""
    assert heading_of("## BridgePlugin<sup>(deprecated)</sup>")[1] == ""           # not a version
    assert heading_of("plain text") is None
    assert tree_of("zh-cn/a/b.md") == ("zh-cn", "a/b.md") and tree_of("docs/a.md") is None


def test_pages_pair_by_path_links_and_meaning(bilingual):
    with Store(bilingual, readonly=True) as st:
        found = translation_gaps(st)
    assert found["trees"] == ["en", "zh-cn"]
    assert found["paired_by"] == {"path": 2, "links": 1, "meaning": 1}
    assert sorted(map(tuple, found["pair_list"])) == [
        ("en/api/window.md", "zh-cn/api/window-api.md", "links"),
        ("en/tips/performance.md", "zh-cn/tips/list-xingneng.md", "meaning")]
    assert {p["page"] for p in found["no_counterpart"]} == {"en/guide/faq.md", "zh-cn/guide/privacy-statement.md"}


def test_drifted_pairs_name_the_sections_and_marks_that_differ(bilingual):
    with Store(bilingual, readonly=True) as st:
        found = translation_gaps(st)
    drifted = {tuple(d["pages"]): d for d in found["drifted"]}
    assert set(drifted) == {("en/guide/intro.md", "zh-cn/guide/intro.md"),
                            ("en/api/window.md", "zh-cn/api/window-api.md")}
    intro = drifted[("en/guide/intro.md", "zh-cn/guide/intro.md")]
    assert [x["heading"] for x in intro["only_in"]["zh-cn"]] == ["display.isFoldable 20+"]
    assert intro["only_in"]["en"] == []
    assert intro["version_marks"] == [{"api": "getDisplaySize", "en": "9+", "zh-cn": "10+"}]
    assert intro["code_blocks"] == {"en": 1, "zh-cn": 2}
    window = drifted[("en/api/window.md", "zh-cn/api/window-api.md")]
    assert [x["api"] for x in window["only_in"]["zh-cn"]] == ["setWindowPrivacyMode"]
    assert found["sections_without_counterpart"] == 2


def test_a_section_has_its_counterpart_in_the_askers_language(bilingual):
    with Store(bilingual, readonly=True) as st:
        en = st.nodes.page_sections("en/api/window.md")
        zh = st.nodes.page_sections("zh-cn/api/window-api.md")
        # matched by the API it documents, not by position
        got = counterpart_section(st, "en/api/window.md", en[2][0], "zh", twin="zh-cn/api/window-api.md")
        assert got is not None and got[0] == zh[2][0] and "setWindowBrightness" in got[1]
        en_intro = st.nodes.page_sections("en/guide/intro.md")
        got = counterpart_section(st, "en/guide/intro.md", en_intro[0][0], "zh")
        assert got is not None and got[1].startswith("简介")
        assert counterpart_section(st, "en/guide/intro.md", en_intro[0][0], "en") is None   # already in English
        assert counterpart_section(st, "en/guide/faq.md", st.nodes.page_sections("en/guide/faq.md")[0][0], "zh") is None


def test_references_show_the_section_in_the_askers_language_first(bilingual):
    from dgrag.answer import reference_list
    from dgrag.answer.translations import with_counterparts

    with Store(bilingual, readonly=True) as st:
        en = st.nodes.page_sections("en/guide/setup.md")
        refs = [{"n": 1, "id": en[1][0], "type": "chunk", "breadcrumb": en[1][1], "source_url": en[1][2]},
                {"n": 2, "id": "code-x", "type": "code", "breadcrumb": "Setting Up", "source_url": ""}]
        with_counterparts(st, refs, "zh")
        zh = st.nodes.page_sections("zh-cn/guide/setup.md")
    assert refs[0]["counterpart"] == {"id": zh[1][0], "breadcrumb": zh[1][1], "source_url": zh[1][2]}
    assert "counterpart" not in refs[1]
    listed = reference_list(refs, [1], "zh")
    line = next(ln for ln in listed.splitlines() if ln.startswith("[1]"))
    # the Chinese section first, then the English one the answer was written from
    assert line.index(zh[1][2]) < line.index(en[1][2]) and "安装 SDK" in line
    assert "counterpart" not in with_counterparts(None, [{"id": "x", "type": "chunk"}], "zh")[0]  # no store
