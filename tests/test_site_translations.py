"""A mkdocs site translated as one config per language (`docs/<lang>/mkdocs.yml` with
`INHERIT: ../en/mkdocs.yml`, code examples in a `docs_src/` folder beside `docs/`): each
language's sections link into its own folder of the published site."""
from __future__ import annotations

import textwrap
from pathlib import Path

from dgrag.config import Settings
from dgrag.ingest.pipeline import index_folder
from dgrag.ingest.site import detect_site
from dgrag.store import Store

EN_CONFIG = """
    site_name: Fixture API
    site_url: https://example.org/
    theme:
      name: material
      language: en
    nav:
      - Home: index.md
      - Tutorial:
          - First Steps: tutorial/first-steps.md
    markdown_extensions:
      - toc:
          permalink: true
      - attr_list
      - pymdownx.blocks.admonition
      - pymdownx.blocks.tab:
          alternate_style: True
"""
PAGE_EN = """
    # First Steps { #first-steps }

    The simplest file could look like this:

    {* ../../docs_src/first_steps/tutorial001_py310.py hl[3] *}

    ## Run it { #run-it }

    /// tip

    Run the live server with `fixture dev main.py`.

    ///

    //// tab | Python 3.10+

    Create the app.

    ////
"""
PAGE_ZH = """
    # 第一步 { #first-steps }

    最简单的文件可能像这样：

    {* ../../docs_src/first_steps/tutorial001_py310.py hl[3] *}

    ## 运行 { #run-it }

    /// tip | 提示

    用 `fixture dev main.py` 运行实时服务器。

    ///
"""


def _site(root: Path, zh_config: str = "INHERIT: ../en/mkdocs.yml\ntheme:\n  language: zh\n",
          zh_pages: int = 0) -> Path:
    files = {"docs/en/mkdocs.yml": EN_CONFIG, "docs/zh/mkdocs.yml": zh_config,
             "docs/en/docs/index.md": "# Fixture API { #fixture-api }\n\nFast to code.\n",
             "docs/zh/docs/index.md": "# Fixture API { #fixture-api }\n\n编码快。\n",
             "docs/en/docs/tutorial/first-steps.md": PAGE_EN, "docs/zh/docs/tutorial/first-steps.md": PAGE_ZH,
             "docs_src/first_steps/tutorial001_py310.py": "from fixture import Fixture\n\napp = Fixture()\n"}
    files.update({f"docs/zh/docs/extra-{i}.md": f"# 额外 {i}\n\n文本。\n" for i in range(zh_pages)})
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return root


def test_each_translation_links_into_its_language_folder_of_the_site(tmp_path, hash_embedder):
    root = _site(tmp_path / "repo")
    s = Settings(db_path=tmp_path / "i.db", docs_root=root)
    with Store(s.db_path) as st:
        rep = index_folder(s, st, hash_embedder)
        rows = st.con.execute("SELECT type, source_path, breadcrumb, source_url, text FROM nodes "
                              "WHERE type IN ('chunk', 'code') ORDER BY rowid").fetchall()
    assert rep.site["generator"] == "mkdocs" and rep.dialect["left_raw"] == {}
    assert not any("other configs not used" in n for n in rep.site["notes"])
    urls = {(p.split("/")[1], crumb): url for kind, p, crumb, url, _ in rows if kind == "chunk"}
    assert urls == {
        ("en", "Fixture API"): "https://example.org/#fixture-api",
        ("en", "First Steps"): "https://example.org/tutorial/first-steps/#first-steps",
        ("en", "First Steps / Run it"): "https://example.org/tutorial/first-steps/#run-it",
        ("zh", "Fixture API"): "https://example.org/zh/#fixture-api",
        ("zh", "第一步"): "https://example.org/zh/tutorial/first-steps/#first-steps",
        ("zh", "第一步 / 运行"): "https://example.org/zh/tutorial/first-steps/#run-it"}
    code = {(p.split("/")[1], crumb): text for kind, p, crumb, _, text in rows if kind == "code"}
    assert code == {("en", "First Steps"): "from fixture import Fixture\n\napp = Fixture()",
                    ("zh", "第一步"): "from fixture import Fixture\n\napp = Fixture()"}


def test_the_inherited_config_stays_the_main_one_when_a_translation_has_more_pages(tmp_path):
    site = detect_site(_site(tmp_path / "repo", zh_pages=3))
    assert site.config == "docs/en/mkdocs.yml"
    assert [(p.content, p.url_base, p.language) for p in site.parts] == [
        ("docs/en/docs", "https://example.org/", "en"), ("docs/zh/docs", "https://example.org/zh/", "zh")]


def test_a_translation_with_its_own_site_url_keeps_it(tmp_path):
    own = "INHERIT: ../en/mkdocs.yml\nsite_url: https://zh.example.org/\ntheme:\n  language: zh\n"
    site = detect_site(_site(tmp_path / "repo", zh_config=own))
    assert [p.url_base for p in site.parts] == ["https://example.org/", "https://zh.example.org/"]
