"""The docs-site layer: generators detected from their configs, dialects read by the parser's
plugins, includes read within their root, and each section's URL on the published site."""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from dgrag.config import Settings
from dgrag.ingest.dialects import raw_markers
from dgrag.ingest.includes import Includes
from dgrag.ingest.markdown import parse_page
from dgrag.ingest.pipeline import index_folder
from dgrag.ingest.site import detect_site
from dgrag.ingest.slugs import Slugger
from dgrag.store import Store


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return root


# ---- slug rules: the values each generator's own code gives --------------------------------
@pytest.mark.parametrize("rule, headings, anchors", [
    ("python-markdown", ["Hello World!", "Hello World!", "安装", "安装", "Café au lait"],
     ["hello-world", "hello-world_1", "_1", "_2", "cafe-au-lait"]),
    ("pymdownx", ["安装 VitePress", "Hello, World"], ["安装-vitepress", "hello-world"]),
    ("github", ["The `x` API: options & defaults!", "Example", "Example", "快速开始", "Ready 🚀"],
     ["the-x-api-options--defaults", "example", "example-1", "快速开始", "ready-"]),
    ("vitepress", ["2. Install", "配置（config）说明", "Example", "Example", "What's new?"],
     ["_2-install", "配置-config-说明", "example", "example-1", "what-s-new"]),
    ("mdbook", ["Hello, Cargo!", "Hello, Cargo!", "Rc<T>, the Reference Counted Smart Pointer"],
     ["hello-cargo", "hello-cargo-1", "rct-the-reference-counted-smart-pointer"]),
    ("docutils", ["Hello World!", "配置 config"], ["hello-world", "config"]),
    ("goldmark", ["FAQ & tips", "Ready? 🚀 Go", "Ready? 🚀 Go", "在 macOS 上安装", "!!!", "Café 2.0"],
     ["faq--tips", "ready--go", "ready--go-1", "在-macos-上安装", "heading", "café-20"]),
])
def test_slug_rules_number_duplicates_as_their_generator(rule, headings, anchors):
    s = Slugger(rule)
    assert [s.anchor(h) for h in headings] == anchors


def test_an_explicit_id_is_kept_and_reserves_its_slug():
    s = Slugger("github")
    assert s.anchor("Install", "install") == "install"
    assert s.anchor("Install") == "install-1"
    with pytest.raises(ValueError):
        Slugger("nope")


# ---- dialects: markers become structure, titles stay as prose -------------------------------
DIALECT_PAGE = """
---
id: setup
title: Setting Up
sidebar_label: Setup
---

import Tabs from '@theme/Tabs';
import TabItem from '@theme/TabItem';

Intro.

## Install {#install}

:::tip[Before you start]
Have Node 18.
:::

::: warning
Old browsers.
:::

!!! note "Keep it short"
    An admonition of Python-Markdown.

/// details | Why this works
Because of caching.
///

=== "Python 3.10+"

    ```python
    print("tab")
    ```

<Tabs>
  <TabItem value="npm" label="npm">

npm install thing

  </TabItem>
</Tabs>

## Reference { #reference }

::: package.module.Thing
    options:
      members: true

{% hint style="info" %}
A GitBook hint.
{% endhint %}
"""


def test_every_dialect_marker_leaves_breadcrumbs_prose_and_text():
    page = parse_page("docs/setup.mdx", textwrap.dedent(DIALECT_PAGE).lstrip("\n"))
    assert page.front["id"] == "setup" and page.title == "Setting Up"
    chunks = [n for n in page.nodes if n["type"] == "chunk"]
    assert [c["breadcrumb"] for c in chunks] == ["Setting Up", "Setting Up / Install", "Setting Up / Reference"]
    assert [c["meta"]["anchor"] for c in chunks[1:]] == ["install", "reference"]
    for n in page.nodes:
        assert raw_markers(f"{n['breadcrumb']}\n{n.get('prose') or ''}\n{n['text']}") == {}, n
    prose = chunks[1]["prose"]
    for kept in ("Before you start", "Warning", "Keep it short", "Why this works", "Python 3.10+", "npm",
                 "Have Node 18.", "npm install thing"):
        assert kept in prose
    assert "API reference: package.module.Thing" in chunks[2]["prose"] and "A GitBook hint." in chunks[2]["prose"]
    assert "print(\"tab\")" in [n["text"] for n in page.nodes if n["type"] == "code"][0]
    assert page.recognised["admonition"] == 4 and page.recognised["tab"] == 1
    assert page.recognised["MDX statement"] == 1 and page.recognised["generated reference"] == 1


def test_a_page_without_h1_is_headed_by_its_title_or_its_first_heading():
    fm = parse_page("a.md", "---\ntitle: Actions\n---\n\n## Redux FAQ: Actions\n\n### Why\n\ntext\n")
    assert [n["breadcrumb"] for n in fm.nodes] == ["Actions / Redux FAQ: Actions", "Actions / Redux FAQ: Actions / Why"]
    text = "## Hello, Cargo!\n\ntext\n\n### Creating\n\nmore\n\n## Summary\n\nend\n"
    bare = parse_page("b.md", text, head_first=True)  # a site's page (mdBook's chapters)
    assert [n["breadcrumb"] for n in bare.nodes] == ["Hello, Cargo!", "Hello, Cargo! / Creating",
                                                    "Hello, Cargo! / Summary"]
    plain = parse_page("b.md", text)  # a plain folder: as GitHub shows it, and as before
    assert [n["breadcrumb"] for n in plain.nodes] == ["Hello, Cargo!", "Hello, Cargo! / Creating", "Summary"]
    h1 = parse_page("c.md", "# Title\n\n## Part\n\ntext\n")  # as before the site layer
    assert [n["breadcrumb"] for n in h1.nodes] == ["Title", "Title / Part"]


MYST_PAGE = """
# Roles

(syntax/Roles_x)=
## Using roles

See {ref}`the targets <syntax/targets>`, {py:class}`~pkg.mod.Thing` and {math}`a^2`.

````{note} Careful
:class: tip

A **note** body with {sup}`1`.

```{warning}
A nested warning.
```

```python
print("in a note")
```
````

:::{admonition} Options stay out
:class: dropdown
:name: adm-target
Body of the admonition.
:::

```{code-block} python
:linenos:
x = 1
```

{#para-id .c}
A paragraph with a [span]{#span-id}.

:glob: Matches the entries
"""


def test_myst_roles_directive_bodies_options_and_attributes_are_read_as_myst_reads_them():
    ext = ("attrs_block", "attrs_inline", "colon_fence", "fieldlist")
    page = parse_page("docs/roles.md", textwrap.dedent(MYST_PAGE).lstrip("\n"), myst=True, slug_rule="docutils",
                      extensions=ext)
    chunk = next(n for n in page.nodes if n["breadcrumb"] == "Roles / Using roles")
    assert chunk["meta"]["anchor"] == "syntax-roles-x"  # docutils' make_id of the label (Sphinx 9 / MyST 5)
    prose = chunk["prose"]
    for shown in ("See the targets, Thing and a^2.", "Careful", "A note body with 1.", "Warning",
                  "A nested warning.", "Options stay out", "Body of the admonition.", "A paragraph with a span.",
                  "glob\nMatches the entries"):
        assert shown in prose, shown
    for markup in ("{ref}", "{sup}", ":class:", ":name:", ":linenos:", "```", "{#", "print(", ":glob:"):
        assert markup not in prose, markup
    for markup in (":class:", ":name:", "```{note}", "{warning}", ":::{admonition}"):
        assert markup not in chunk["text"], markup  # the section's text: what the page shows
    code = {n["text"]: n["meta"]["code_language"] for n in page.nodes if n["type"] == "code"}
    assert code == {'print("in a note")': "python", "x = 1": "python"}
    assert page.recognised["admonition"] == 3 and page.recognised["directive"] == 1
    plain = parse_page("docs/roles.md", "# R\n\n{#para-id}\nText [span]{#s}.\n", myst=True)  # attrs not enabled
    assert "{#para-id} Text [span]{#s}." in plain.nodes[0]["prose"]


def test_a_sphinx_site_without_html_baseurl_takes_its_opengraph_url_and_myst_extensions(tmp_path):
    root = _write(tmp_path / "repo", {
        "docs/conf.py": 'extensions = ["myst_parser"]\nmyst_enable_extensions = [\n    "attrs_inline",\n    '
                        '"deflist",\n]\nogp_site_url = "https://x.readthedocs.io/en/latest"\n',
        "docs/guide/intro.md": "# Intro\n"})
    site = detect_site(root)
    assert site.page_url("docs/guide/intro.md") == "https://x.readthedocs.io/en/latest/guide/intro.html"
    assert site.extensions == ("attrs_inline", "deflist")
    (root / "docs/conf.py").write_text('extensions = ["myst_parser"]\nhtml_baseurl = "https://h.org/d/"\n'
                                       'ogp_site_url = "https://other.org/"\n')
    assert detect_site(root).page_url("docs/guide/intro.md") == "https://h.org/d/guide/intro.html"


# ---- includes: read within the root, refused outside, reported when missing ------------------
def test_includes_read_in_place_with_their_selection_and_line_map(tmp_path):
    root = _write(tmp_path / "repo", {
        "src/main.rs": "fn main() {\n    // ANCHOR: here\n    let x = 5;\n    // ANCHOR_END: here\n}\n",
        "snippets/part.md": "Included *prose*.\n",
        "docs_src/app.py": "from fastapi import FastAPI\n\napp = FastAPI()\n",
    })
    page = ("# T\n\n```rust\n{{#include ../src/main.rs:here}}\n```\n\n--8<-- \"snippets/part.md\"\n\n"
            "{* ../docs_src/app.py hl[3] *}\n\n{{#include ../src/main.rs:1:1}}\n")
    inc = Includes(root, root)
    text, line_map, rep = inc.expand("book/page.md", page)
    assert "    let x = 5;" in text and "ANCHOR" not in text
    assert "Included *prose*." in text and "```python\nfrom fastapi import FastAPI" in text
    assert text.rstrip().endswith("fn main() {")
    assert rep.read == {"src/main.rs", "snippets/part.md", "docs_src/app.py"} and not rep.missing
    assert len(line_map) == len(text.split("\n"))
    assert page.split("\n")[line_map[text.split("\n").index("    let x = 5;")]] == "{{#include ../src/main.rs:here}}"


def test_an_include_outside_the_root_is_refused_and_a_missing_one_reported(tmp_path):
    (tmp_path / "secret.txt").write_text("TOP SECRET\n")
    root = _write(tmp_path / "repo", {"docs/a.md": "x\n"})
    text, _, rep = Includes(root, root).expand(
        "docs/a.md", "# A\n\n{{#include ../../secret.txt}}\n\n--8<-- \"nope.md\"\n\n<!--@include: ../../secret.txt-->\n")
    assert "TOP SECRET" not in text and "{{#include" not in text and "@include" not in text
    assert rep.refused == ["../../secret.txt", "../../secret.txt"] and rep.missing == ["nope.md"]


def test_myst_include_directives_are_read_with_their_options_outside_code_examples(tmp_path):
    (tmp_path / "secret.md").write_text("TOP SECRET\n")
    root = _write(tmp_path / "repo", {"CHANGELOG.md": "# Changelog\n\n## 1.0\n\nFirst.\n\n"
                                                      "See [the guide](docs/guide.md), ![logo](img/x.png).\n",
                                      "docs/part.txt": "Hallo you!\nline two\n"})
    page = ("# P\n\n```{include} ../CHANGELOG.md\n:heading-offset: 1\n:relative-docs: docs/\n:relative-images:\n```\n\n"
            ":::{include} part.txt\n:start-after: Hallo\n:end-before: !\n:::\n\n"
            "```{include} part.txt\n:literal:\n:start-line: 1\n```\n\n"
            "````md\n```{include} part.txt\n```\n````\n\n```{include} ../../secret.md\n```\n")
    text, line_map, rep = Includes(root, root, myst=True).expand("docs/p.md", page)
    assert "## Changelog\n\n### 1.0\n\nFirst." in text and "\n you\n" in text
    assert "See [the guide](guide.md), ![logo](../img/x.png)." in text  # :relative-docs: / :relative-images:
    assert "```text\nline two\n```" in text and "````md\n```{include} part.txt\n```\n````" in text
    assert "TOP SECRET" not in text and rep.refused == ["../../secret.md"]
    assert rep.read == {"CHANGELOG.md", "docs/part.txt"} and page.split("\n")[line_map[text.split("\n").index("### 1.0")]] \
        == "```{include} ../CHANGELOG.md"
    assert Includes(root, root).expand("docs/p.md", page)[0] == page  # not a MyST page: a code block


# ---- whole sites: detection, URLs, reports, a changed include ---------------------------------
MKDOCS = {
    "mkdocs.yml": """
        site_name: Demo
        site_url: https://example.org/mk/
        nav:
          - Home: index.md
          - First steps: tutorial/first-steps.md
        markdown_extensions:
          - toc:
              permalink: true
          - attr_list
          - admonition
          - pymdownx.snippets
    """,
    "docs/index.md": "# Home\n\nWelcome.\n\n## Install { #install-it }\n\nRun it.\n",
    "docs/tutorial/first-steps.md": """
        # First Steps { #first-steps }

        ## Run it { #run-it }

        ```python
        --8<-- "examples/main.py"
        ```

        !!! tip
            Use the reload flag.

        ## Example

        one

        ## Example

        two

        ## 安装

        三
    """,
    "docs/drafty.md": "---\ndraft: true\n---\n# Not yet\n",
    "examples/main.py": "print('hello from the example')\n",
    "README.md": "# The repository's README, not a page of the site\n",
}


def test_a_mkdocs_site_indexed_from_its_repository_folder(tmp_path, hash_embedder):
    root = _write(tmp_path / "repo", MKDOCS)
    s = Settings(db_path=tmp_path / "i.db", docs_root=root)
    with Store(s.db_path) as st:
        rep = index_folder(s, st, hash_embedder)
        rows = st.con.execute("SELECT type, breadcrumb, source_url, text, prose FROM nodes "
                              "WHERE source_path='docs/tutorial/first-steps.md' ORDER BY rowid").fetchall()
        described = st.describe()["site"]
    assert rep.site["generator"] == "mkdocs" and described["generator"] == "mkdocs"
    assert rep.files_seen == 3 and rep.dialect["pages_outside_site"] == 1   # README.md is not the site's
    assert rep.dialect["drafts"] == ["docs/drafty.md"] and rep.dialect["includes_read"] == 1
    assert rep.dialect["left_raw"] == {}
    urls = {crumb: url for kind, crumb, url, _, _ in rows if kind == "chunk"}
    base = "https://example.org/mk/tutorial/first-steps/"
    assert urls == {"First Steps": base + "#first-steps", "First Steps / Run it": base + "#run-it",
                    "First Steps / Example": base + "#example_1", "First Steps / 安装": base + "#_1"}
    code = [t for kind, _, _, t, _ in rows if kind == "code"]
    assert code == ["print('hello from the example')"]


ANNOTATED = {
    "mkdocs.yml": "site_name: A\ntheme:\n  name: material\n  features:\n  - content.code.annotate\n",
    "docs/index.md": """
        # Models

        ```python
        {! ../src/app.py !}
        ```

        1. The import.
        2. The engine, once per app.
    """,
    "src/app.py": "from sqlmodel import SQLModel  # (1)!\nengine = create_engine(url)  # (2)!\nx = 1  # one (3) of many\n",
}


def test_mkdocs_material_code_annotations_are_markers_not_code(tmp_path, hash_embedder):
    # with `content.code.annotate` every fence's `# (1)!` is a button on the page: out of the
    # code and out of its section's text (where the code is read from in a compact file)
    root = _write(tmp_path / "repo", ANNOTATED)
    s = Settings(db_path=tmp_path / "i.db", docs_root=root)
    with Store(s.db_path) as st:
        rep = index_folder(s, st, hash_embedder)
        code, = st.con.execute("SELECT text FROM nodes WHERE type='code'").fetchone()
        chunk, = st.con.execute("SELECT text FROM nodes WHERE type='chunk'").fetchone()
    assert code == "from sqlmodel import SQLModel\nengine = create_engine(url)\nx = 1  # one (3) of many"
    assert code in chunk and "(1)!" not in chunk and rep.dialect["recognised"]["code annotation"] == 2
    (root / "mkdocs.yml").write_text("site_name: A\ntheme:\n  name: material\n")  # the feature off: code
    assert "# (1)!" in parse_page("index.md", "```python\nx = 1  # (1)!\n```\n").nodes[-1]["text"]
    with Store(s.db_path) as st:
        index_folder(s, st, hash_embedder)
        assert "(1)!" in st.con.execute("SELECT text FROM nodes WHERE type='code'").fetchone()[0]


def test_a_changed_include_reindexes_the_page_that_includes_it(tmp_path, hash_embedder):
    root = _write(tmp_path / "repo", MKDOCS)
    s = Settings(db_path=tmp_path / "i.db", docs_root=root)
    with Store(s.db_path) as st:
        index_folder(s, st, hash_embedder)
        again = index_folder(s, st, hash_embedder)
        assert again.files_indexed == 0 and again.files_unchanged == 3  # the draft too: skipped, unchanged
        (root / "examples/main.py").write_text("print('changed')\n")
        third = index_folder(s, st, hash_embedder)
        code = st.con.execute("SELECT text FROM nodes WHERE type='code'").fetchall()
    assert third.files_indexed == 1 and code == [("print('changed')",)]


def test_plain_folder_keeps_every_page_and_the_url_template(tmp_path):
    root = _write(tmp_path / "docs", {"a.md": "# A\n\n## B\n", "sub/c.md": "# C\n"})
    site = detect_site(root)
    assert site.generator == "plain" and site.parts == [] and site.page_url("a.md") is None
    s = Settings(db_path=tmp_path / "i.db", docs_root=root, url_template="https://h/{path}#L{line}|{anchor}")
    with Store(s.db_path) as st:
        rep = index_folder(s, st)
        urls = [r[0] for r in st.con.execute("SELECT source_url FROM nodes WHERE type='chunk' ORDER BY rowid")]
    assert rep.files_seen == 2 and urls[:2] == ["https://h/a.md#L1|a", "https://h/a.md#L3|b"]
    assert json.loads(json.dumps(rep.site))["generator"] == "plain"


# ---- each section's URL, as the generator itself publishes it ---------------------------------
SITES = Path(__file__).parent / "fixtures" / "sites"


@pytest.mark.parametrize("name", sorted(p.parent.name for p in SITES.glob("*/expected_urls.json")))
def test_section_urls_equal_the_ones_the_generator_built(name, tmp_path):
    """expected_urls.json was read off each generator's own build of the fixture
    (scripts/record_site_anchors.sh): CJK headings, duplicates, digits, emoji, explicit ids."""
    expected = json.loads((SITES / name / "expected_urls.json").read_text(encoding="utf-8"))
    s = Settings(db_path=tmp_path / "i.db", docs_root=SITES / name)
    with Store(s.db_path) as st:
        rep = index_folder(s, st)
        rows = st.con.execute("SELECT type, source_path, source_url, meta FROM nodes ORDER BY rowid").fetchall()
    assert rep.site["generator"] == expected["generator"].split()[0].lower().replace("-myst", "")
    assert rep.dialect["includes_refused"] == [] and rep.dialect["includes_missing"] == []
    assert sorted(expected["pages"]) == sorted({r[1] for r in rows if r[0] == "file"})
    for path, page in expected["pages"].items():
        meta = {t: json.loads(m) for t, p, _, m in rows if p == path and t == "file"}
        assert meta["file"]["url"] == page["url"], path
        want = [h["id"] for h in page["headings"] if h["id"] != "_top"]
        h1_listed = any(h["level"] == 1 for h in page["headings"] if h["id"] != "_top")
        chunks = [(u, json.loads(m)) for t, p, u, m in rows if t == "chunk" and p == path]
        got = [m["anchor"] for _, m in chunks if m.get("anchor") and (h1_listed or m.get("level") != 1)]
        assert got == want, path
        if page["url"].startswith("https://"):  # a known host: the section's link is its published URL
            assert all(u == f"{page['url']}#{m['anchor']}" for u, m in chunks if m.get("anchor")), path


def test_links_written_as_site_routes_become_jump_edges(tmp_path):
    root = _write(tmp_path / "vp", {
        "docs/.vitepress/config.mts": "export default { base: '/x/', cleanUrls: true, sitemap: { hostname: 'https://h.io' } }\n",
        "docs/guide/start.md": "# Start\n\nSee [deploying](./deploy#netlify) and [the config](/reference/config).\n",
        "docs/guide/deploy.md": "# Deploy\n\n## Netlify\n\nPush.\n",
        "docs/reference/config.md": "# Config\n\n## base\n\nThe base.\n",
    })
    s = Settings(db_path=tmp_path / "i.db", docs_root=root)
    with Store(s.db_path) as st:
        rep = index_folder(s, st)
        jumps = st.con.execute("SELECT b.breadcrumb FROM edges e JOIN nodes a ON a.rowid=e.src "
                               "JOIN nodes b ON b.rowid=e.dst WHERE e.type='jump' ORDER BY 1").fetchall()
        url = st.con.execute("SELECT source_url FROM nodes WHERE breadcrumb='Deploy / Netlify'").fetchone()[0]
    # chunk -> the linked page, and for `./deploy#netlify` also -> the section the anchor names
    assert rep.jump_edges == 3 and [j[0] for j in jumps] == ["Config", "Deploy", "Deploy / Netlify"]
    assert url == "https://h.io/x/guide/deploy#netlify"


def test_a_vitepress_code_import_is_read_but_not_inside_a_fence(tmp_path):
    root = _write(tmp_path / "repo", {"docs/snippets/init.sh": "npx vitepress init\n"})
    page = "# T\n\n<<< @/snippets/init.sh\n\n````md\n<<< @/filepath\n````\n"
    text, _, rep = Includes(root, root, bases=["docs"]).expand("docs/guide/t.md", page)
    assert "```bash\nnpx vitepress init\n```" in text and "<<< @/filepath" in text and not rep.missing


@pytest.mark.parametrize("name", sorted(p.parent.name for p in SITES.glob("*/expected_urls.json")))
def test_no_raw_marker_in_entity_names_fact_texts_or_embedded_texts(name, tmp_path):
    """The offline semantic layer of each generator's fixture site: what it names, and what each
    node's vector embeds, is the text, not the markup."""
    s = Settings(db_path=tmp_path / "i.db", docs_root=SITES / name, embedder="hash")
    for text in layer_texts(s):
        for shown in AS_PUBLISHED.get(name, ()):
            text = text.replace(shown, "")
        assert raw_markers(text) == {}, text


def layer_texts(s: Settings, embedded_types: tuple[str, ...] = ("file", "chunk", "table", "entity")) -> list[str]:
    """The folder indexed with its offline semantic layer: every entity name, fact, breadcrumb
    and embedded text (of `embedded_types`)."""
    from dgrag.embed import embed_text
    from dgrag.workflows import offline_layer

    with Store(s.db_path) as st:
        index_folder(s, st)
        offline_layer(s, st)
        names = [r[0] for r in st.con.execute("SELECT entity_name FROM nodes WHERE type='entity'")]
        facts = [r[0] for r in st.con.execute("SELECT text FROM facts")]
        crumbs = [r[0] for r in st.con.execute("SELECT breadcrumb FROM nodes")]
        nodes = st.nodes.by_rowids(st.nodes.of_type(list(embedded_types)))
    embedded = [embed_text(n, 4000) for n in nodes]
    assert names and facts and len(embedded) > 5
    return names + facts + crumbs + embedded


# text the published page itself shows: a marker quoted as inline code, braces Starlight keeps
AS_PUBLISHED = {"mkdocs": ("via --8<--",), "vitepress": ("via <!--@include: -->",), "starlight": ("{#my-id}",)}


# per generator: a page of its fixture site, its include syntax for a target, a file it reads
INCLUDE_SYNTAX = {
    "mkdocs": ("docs/guide/first-steps.md", '--8<-- "{}"\n', "snippets/example.py"),
    "vitepress": ("docs/guide/getting-started.md", "<!--@include: {}-->\n", "./parts/snippet.md"),
    "mdbook": ("src/chapter_1.md", "```rust\n{{{{#include {}}}}}\n```\n", "../listings/ex1/src/main.rs"),
    "sphinx-myst": ("docs/guide.md", "```{{literalinclude}} {}\n:language: python\n```\n", "../code/example.py"),
    "docusaurus": ("docs/guides/setup.mdx", "import Part{n} from '!!raw-loader!{}';\n\n<CodeBlock>{{Part{n}}}</CodeBlock>\n",
                   "./example.js"),
}


def _with_includes(name: str, tmp_path: Path) -> tuple[Path, str, str, Path]:
    """The fixture site in a repository folder, one of its pages given three includes in its
    generator's own syntax: a file of the repository, one outside it and one that is not there.
    Returns (root, page, the outside target as written, the file read in)."""
    import os
    import shutil

    root = tmp_path / "repo"
    shutil.copytree(SITES / name, root)
    (tmp_path / "secret.txt").write_text("TOP SECRET\n")
    page, syntax, inside = INCLUDE_SYNTAX[name]
    if name == "docusaurus":
        (root / "docs/guides/example.js").write_text("export const answer = 42;\n")
    base = root if name == "mkdocs" else (root / page).parent  # snippets resolve from the repository
    outside = os.path.relpath(tmp_path / "secret.txt", base)
    missing = inside.replace("example", "nope").replace("snippet", "nope").replace("main", "nope")
    lines = [syntax.format(t, n=i) for i, t in enumerate((inside, outside, missing))]
    with (root / page).open("a", encoding="utf-8") as f:
        f.write("\n## Included here\n\n" + "\n".join(lines))
    return root, page, outside, (base / inside).resolve()


def _index_texts(s: Settings):
    with Store(s.db_path) as st:
        rep = index_folder(s, st)
        texts = "\n".join(f"{t}\n{p or ''}" for t, p in st.con.execute("SELECT text, prose FROM nodes"))
    return rep, texts


@pytest.mark.parametrize("name", sorted(INCLUDE_SYNTAX))
def test_each_generators_includes_are_read_refused_outside_the_root_and_reported_missing(name, tmp_path):
    """Read in, refused and reported (its text nowhere in the index), reported missing."""
    root, page, outside, read = _with_includes(name, tmp_path)
    rep, texts = _index_texts(Settings(db_path=tmp_path / "i.db", docs_root=root))
    assert rep.site["generator"] != "plain"
    assert rep.dialect["includes_refused"] == [f"{page}: {outside}"]
    assert rep.dialect["includes_missing"] and all(m.startswith(f"{page}: ") and "nope" in m
                                                   for m in rep.dialect["includes_missing"])
    assert "TOP SECRET" not in texts
    first = read.read_text(encoding="utf-8").splitlines()[-1 if name == "vitepress" else 0]
    assert first in texts and rep.dialect["includes_read"] >= 1


@pytest.mark.parametrize("name", sorted(INCLUDE_SYNTAX))
def test_each_generators_page_is_indexed_again_when_a_file_it_includes_changes(name, tmp_path):
    root, page, _, read = _with_includes(name, tmp_path)
    s = Settings(db_path=tmp_path / "i.db", docs_root=root)
    _index_texts(s)
    assert _index_texts(s)[0].files_indexed == 0
    read.write_text(read.read_text(encoding="utf-8") + "\nchanged_after_indexing = 1\n", encoding="utf-8")
    rep, texts = _index_texts(s)
    assert rep.files_indexed >= 1 and "changed_after_indexing = 1" in texts


def test_an_include_bomb_is_bounded_and_reported(tmp_path):
    line = "{{#include b.md}}\n" * 10
    root = _write(tmp_path / "repo", {"a.md": line, "b.md": line.replace("b.md", "c.md"),
                                      "c.md": line.replace("b.md", "d.md"), "d.md": "x" * 5000 + "\n"})
    text, _, rep = Includes(root, root, max_bytes=20_000).expand("page.md", line)
    assert len(text) <= 80_000 + 1000 and any("include limit" in m for m in rep.missing)


def test_malformed_configs_and_includes_are_reported_never_fatal(tmp_path):
    root = _write(tmp_path / "repo", {"mkdocs.yml": "site_name: [unclosed\n", "docs/a.md": "# A\n\n{{#include ../../../etc/passwd}}\n"})
    (root / "docs" / "conf.py").symlink_to(tmp_path / "nowhere.py")  # a broken link named like a config
    site = detect_site(root)
    assert site.generator == "plain" and any("not read" in n for n in site.notes)
    s = Settings(db_path=tmp_path / "i.db", docs_root=root)
    with Store(s.db_path) as st:
        rep = index_folder(s, st)
    assert rep.files_indexed == 1 and rep.dialect["includes_refused"] == ["docs/a.md: ../../../etc/passwd"]
    assert Includes(root, root).expand("a.md", "{{#include x\0y.rs}}\n")[2].missing == ["x\0y.rs"]  # no ValueError


def test_a_locale_without_lang_keeps_its_own_code_and_globstar_excludes(tmp_path):
    root = _write(tmp_path / "sl", {
        "astro.config.mjs": "starlight({ site: 'https://s.io', locales: { root: { label: 'English', lang: 'en' }, "
                            "fr: { label: 'Français' }, de: { lang: 'de' } } })\n",
        "src/content/docs/a.md": "# A\n", "src/content/docs/fr/a.md": "# A\n", "src/content/docs/de/a.md": "# A\n"})
    site = detect_site(root)
    assert [(p.content.rsplit("/", 1)[-1], p.language) for p in site.parts] == [("docs", "en"), ("fr", "fr"), ("de", "de")]
    vp = _write(tmp_path / "vp", {"docs/.vitepress/config.mts": "export default { srcExclude: ['**/README.md'] }\n",
                                  "docs/README.md": "# R\n", "docs/guide/README.md": "# R\n", "docs/guide/a.md": "# A\n"})
    from dgrag.ingest.pipeline import site_pages
    assert site_pages(vp, detect_site(vp))[0] == ["docs/guide/a.md"]


def test_a_fastapi_line_selection_is_clamped_to_the_file(tmp_path):
    root = _write(tmp_path / "repo", {"src/app.py": "a = 1\nb = 2\nc = 3\n"})
    text, _, rep = Includes(root, root).expand("docs/p.md", "{* ../src/app.py ln[2:10000000000] *}\n")
    assert text == "```python\nb = 2\nc = 3\n```\n" and rep.read == {"src/app.py"}


# ---- a mkdocs-material site of FastAPI's family (SQLModel, Typer): examples read in, blocks nested --
def test_the_mkdocs_fixtures_nested_blocks_and_included_examples_are_read_as_code(tmp_path):
    """`/// details` holding a `//// tab` closes at its own `///` (pymdownx matches the count);
    the superfences fence `{ .python .annotate }` is a python code block; mdx_include's
    `{!path[ln:5-6]!}` reads those lines; nothing is left raw."""
    s = Settings(db_path=tmp_path / "i.db", docs_root=SITES / "mkdocs")
    with Store(s.db_path) as st:
        rep = index_folder(s, st)
        rows = st.con.execute("SELECT type, breadcrumb, text, prose, meta, summary FROM nodes "
                              "WHERE source_path='docs/guide/first-steps.md' ORDER BY rowid").fetchall()
    # the one marker left is snippets/part.md quoting `--8<--` as inline code, as the published page does
    assert rep.dialect["left_raw"] == {"include directive": 1} and rep.dialect["includes_missing"] == []
    code = [(json.loads(m)["code_language"], t) for k, _, t, _, m, _ in rows if k == "code"]
    selected = "def main():\n    print(\"hello from the snippet\")"
    assert ("python", selected) in code
    assert ("python", 'if __name__ == "__main__":\n    main()') in code  # `{!> path [ln:9-10] !}`
    tabs = next((t, p) for k, b, t, p, _, _ in rows if k == "chunk" and b.endswith("Tabs and snippets"))
    assert "///" not in tabs[0] and "Full file preview" in tabs[1] and "Python 3.10+" in tabs[1]
    for kind, _, text, _, _, summary in rows:
        shown = f"{text}\n{summary or ''}".replace("`--8<--`", "").replace("via --8<--", "")
        assert raw_markers(shown) == {}, text


@pytest.mark.parametrize("spec, lines", [("5-6", ["5", "6"]), ("2,8-", ["2", "8", "9", "10"]),
                                         ("9-40", ["9", "10"]), ("1.3-2.1", ["1", "2"]), ("x", [])])
def test_mdx_include_line_ranges_pick_those_lines_within_the_file(tmp_path, spec, lines):
    root = _write(tmp_path / "repo", {"docs_src/a.py": "\n".join(str(i) for i in range(1, 11)) + "\n"})
    page = f"```py\n{{!./docs_src/a.py[ln:{spec}]!}}\n```\n"
    text, _, rep = Includes(root, root, bases=[""]).expand("docs/p.md", page)
    assert text == "\n".join(["```py", *lines, "```", ""]) and not rep.missing


def test_an_empty_h1_takes_the_navs_title_and_its_published_anchor():
    """SQLModel's home page: `#` alone (its H1 hidden by CSS); Python-Markdown's toc ids it `_1`."""
    page = parse_page("docs/index.md", "#\n\nIntro.\n\n## Example\n\ntext\n", slug_rule="python-markdown",
                      fallback_title="SQLModel", head_first=True)
    chunks = [n for n in page.nodes if n["type"] == "chunk"]
    assert page.title == "SQLModel" and [c["breadcrumb"] for c in chunks] == ["SQLModel", "SQLModel / Example"]
    assert [c["meta"]["anchor"] for c in chunks] == ["_1", "example"]


def test_a_site_absolute_image_of_a_mkdocs_page_is_read_from_its_docs_folder(tmp_path):
    """`/img/a.png` and `https://<site_url>/img/a.png` (SQLModel's README-friendly home page) are
    docs/img/a.png."""
    png = b"\x89PNG\r\n\x1a\n" + b"\0" * 32
    root = _write(tmp_path / "repo", {"mkdocs.yml": "site_name: X\nsite_url: https://x.org/\n",
                                      "docs/features.md": '# F\n\n<img class="shadow" src="/img/a.png">\n\n'
                                                          '<img src="https://x.org/img/a.png#only-light">\n'})
    (root / "docs/img").mkdir()
    (root / "docs/img/a.png").write_bytes(png)
    s = Settings(db_path=tmp_path / "i.db", docs_root=root)
    with Store(s.db_path) as st:
        rep = index_folder(s, st)
    assert not [p for p in rep.problems if "a.png" in p and ("missing" in p or "remote" in p)], rep.problems


def test_an_image_a_template_fills_in_is_neither_read_nor_reported():
    """SQLModel's home page lists its sponsors through mkdocs macros: `src="{{ sponsor.img }}"`."""
    page = parse_page("docs/index.md", '# X\n\n<a href="{{ sponsor.url }}"><img src="{{ sponsor.img }}"></a>\n\n'
                      '![logo](img/logo.png)\n')
    assert [i.path for i in page.images] == ["docs/img/logo.png"] and page.problems == []


FASTAPI_SHAPED = {  # one config per language, the examples outside the docs (FastAPI's layout)
    "docs/en/mkdocs.yml": """
        INHERIT: ./mkdocs.env.yml
        site_name: Demo
        site_url: https://demo.example/
        theme:
          name: material
          language: en
        nav:
          - index.md
          - release-notes.md
        markdown_extensions:
          toc:
            permalink: true
          attr_list:
          pymdownx.blocks.admonition:
          pymdownx.blocks.tab:
          mdx_include:
    """,
    "docs/en/mkdocs.env.yml": "markdown_extensions:\n  pymdownx.highlight:\n    linenums: !ENV [LINENUMS, false]\n",
    "docs/en/docs/index.md": """
        # Demo { #demo }

        ## First Steps { #first-steps }

        {* ../../docs_src/first_steps/tutorial001_py310.py hl[3] *}

        /// tip

        Run it with `fastapi dev`.

        ///

        /// details | 👀 Full file preview

        //// tab | Python 3.10+

        ```Python hl_lines="3"
        {!> ../../docs_src/first_steps/tutorial001_py310.py!}
        ```

        ////

        ///

        ## Reference

        ::: demo.Demo
            options:
              members: true
    """,
    "docs/en/docs/release-notes.md": "# Release Notes\n\n## 0.115.0 { #0-115-0 }\n\n### Features\n\n* Added a thing.\n",
    "docs/es/mkdocs.yml": "INHERIT: ../en/mkdocs.yml\n",
    "docs/es/docs/index.md": """
        # Demo { #demo }

        ## Primeros pasos { #first-steps }

        {* ../../docs_src/first_steps/tutorial001_py310.py hl[3] *}
    """,
    "docs_src/first_steps/tutorial001_py310.py": "from demo import Demo\n\napp = Demo()\n",
}


def test_a_fastapi_shaped_site_one_config_per_language_examples_outside_the_docs(tmp_path, hash_embedder):
    """`docs/es/mkdocs.yml` only inherits the English config: its pages are Spanish and published
    under /es/; the examples in docs_src are read from each language's pages as code."""
    root = _write(tmp_path / "repo", FASTAPI_SHAPED)
    s = Settings(db_path=tmp_path / "i.db", docs_root=root)
    with Store(s.db_path) as st:
        rep = index_folder(s, st, hash_embedder)
        rows = st.con.execute("SELECT type, breadcrumb, source_url, language, text, meta FROM nodes "
                              "ORDER BY rowid").fetchall()
    parts = [(p["content"], p["url"], p["language"]) for p in rep.site["parts"]]
    assert parts == [("docs/en/docs", "https://demo.example/", "en"), ("docs/es/docs", "https://demo.example/es/", "es")]
    assert rep.dialect["left_raw"] == {} and rep.dialect["includes_missing"] == []
    urls = {(crumb, lang): url for kind, crumb, url, lang, _, _ in rows if kind == "chunk"}
    assert urls[("Demo / First Steps", "en")] == "https://demo.example/#first-steps"
    assert urls[("Demo / Primeros pasos", "es")] == "https://demo.example/es/#first-steps"
    assert urls[("Release Notes / 0.115.0 / Features", "en")] == "https://demo.example/release-notes/#features"
    code = [(lang, json.loads(m)["code_language"]) for kind, _, _, lang, t, m in rows
            if kind == "code" and "app = Demo()" in t]
    assert sorted(code) == [("en", "python"), ("en", "python"), ("es", "python")]
    assert rep.dialect["reference_stubs"] == ["docs/en/docs/index.md"]  # mkdocstrings' `::: demo.Demo`
    assert rep.dialect["recognised"]["tab"] == 1 and rep.dialect["recognised"]["admonition"] == 2
    moved = detect_site(root, site_url="https://docs.demo.example/")
    assert [p.url_base for p in moved.parts] == ["https://docs.demo.example/", "https://docs.demo.example/es/"]


def test_a_hugo_sites_mounts_filename_languages_code_shortcodes_and_ref_links(tmp_path, hash_embedder):
    """Hugo read from its config: content mounted by [[module.mounts]], a translation named
    `page.fr.md` beside its page, a code shortcode as a code block of its language, a link to
    `{{< ref >}}` a jump edge, a block attribute line markup, `include` and `readfile` shortcodes
    read in place (a snippet's text without its front matter; a file as code); a `config.toml`
    without Hugo's keys and content is not Hugo's."""
    root = _write(tmp_path / "site", {
        "hugo.toml": """
            baseURL = "https://h.example/"
            defaultContentLanguage = "en"
            [languages.en]
            [languages.fr]
            [[module.mounts]]
              source = "pages"
              target = "content"
            [markup.goldmark.parser.attribute]
              block = true
            """,
        "pages/guide/Deploy It.md": """
            +++
            title = "Deploy"
            +++

            ## Build {#build-step}

            {{< highlight bash >}}
            hugo --minify
            {{< /highlight >}}

            Then see [the setup]({{< ref "guide/setup.md" >}}).
            {.lead #next}

            {{< code-toggle config=build />}}

            ## Options

            {{< code-toggle file=hugo >}}
            minify = true
            {{< /code-toggle >}}

            ## Audio

            Call it as {{</* audio src="a.mp3" */>}} in a page:

            ```md
            {{</* audio src="a.mp3" /*/>}}
            ```
            """,
        "pages/guide/Deploy It.fr.md": "---\ntitle: Déployer\n---\n\n## Construire\n\nLancez hugo.\n",
        "pages/guide/setup.md": "---\ntitle: Setup\n---\n\n## Steps\n\n{{% include \"/_common/steps.md\" %}}\n\n"
                                "{{< readfile file=\"main.go\" code=\"true\" lang=\"go\" >}}\n",
        "pages/guide/main.go": "package main\n",
        "pages/_common/_index.md": "---\ncascade:\n  build:\n    render: never\n    list: never\n---\n",
        "pages/_common/steps.md": "---\ntitle: snippet\n---\n\nRun hugo server.\n",
        "tools/config.toml": "name = 'a linter'\n",
    })
    site = detect_site(root)
    assert site.generator == "hugo" and [p.content for p in site.parts] == ["pages"]
    assert site.page_url("pages/guide/Deploy It.fr.md") == "https://h.example/fr/guide/deploy-it/"
    assert site.language_of("pages/guide/Deploy It.fr.md") == "fr" and site.language_of("pages/guide/setup.md") == "en"
    assert detect_site(root / "tools").generator == "plain"
    s = Settings(db_path=tmp_path / "i.db", docs_root=root)
    with Store(s.db_path) as st:
        index_folder(s, st, hash_embedder)
        code = st.con.execute("SELECT text, meta FROM nodes WHERE type='code'").fetchall()
        urls = dict(st.con.execute("SELECT breadcrumb, source_url FROM nodes WHERE type='chunk'").fetchall())
        jumps = st.con.execute("SELECT b.breadcrumb FROM edges e JOIN nodes b ON b.rowid=e.dst "
                               "WHERE e.type='jump'").fetchall()
        steps = st.con.execute("SELECT text FROM nodes WHERE breadcrumb='Setup / Steps'").fetchone()[0]
        build = st.con.execute("SELECT prose FROM nodes WHERE breadcrumb='Deploy / Build'").fetchone()[0]
        audio = st.con.execute("SELECT text, prose FROM nodes WHERE breadcrumb='Deploy / Audio'").fetchone()
        pages = {r[0] for r in st.con.execute("SELECT source_path FROM nodes WHERE type='file'")}
    # a self-closing code shortcode has no body: the heading after it stays a heading; an escaped
    # shortcode reads as the call the page shows
    assert sorted((t, json.loads(m)["code_language"]) for t, m in code) == [("hugo --minify", "bash"),
                                                                            ("minify = true", "toml"),
                                                                            ("package main", "go"),
                                                                            ('{{< audio src="a.mp3" />}}', "md")]
    assert urls["Deploy / Options"] == "https://h.example/guide/deploy-it/#options"
    assert all('Call it as {{< audio src="a.mp3" >}} in a page:' in t for t in audio) and "/*" not in audio[0]
    assert "Run hugo server." in steps and "title: snippet" not in steps and "{{" not in steps
    assert "Then see the setup." in build and "{.lead" not in build  # goldmark's block attributes: markup
    assert not any("_common" in p for p in pages)  # a folder never rendered is included, never a page
    assert urls["Deploy / Build"] == "https://h.example/guide/deploy-it/#build-step"
    assert urls["Déployer / Construire"] == "https://h.example/fr/guide/deploy-it/#construire"
    assert ("Setup",) in jumps


def test_hugo_ugly_urls_and_a_config_toml_that_other_tools_write(tmp_path):
    """`uglyURLs`: a section is `docs.html`, a bundle `docs/name.html` (the values Hugo 0.111.3
    built for the same files); a `config.toml` with a theme and a content folder but none of
    Hugo's own keys (Zola's) is not Hugo, and never wins over another generator's config."""
    root = _write(tmp_path / "ugly", {"hugo.toml": 'baseURL = "https://ex.org/"\nuglyURLs = true\n'
                                                  '[permalinks]\nblog = "/:section/:year/:slug/"\n'})
    site = detect_site(root)
    assert any("[permalinks] not applied (blog)" in n for n in site.notes)  # said, not guessed
    routes = {p: site.page_url(p, {}) for p in ("content/docs/_index.md", "content/docs/Plain/index.md",
                                                "content/docs/page.md", "content/_index.md")}
    assert routes == {"content/docs/_index.md": "https://ex.org/docs.html",
                      "content/docs/Plain/index.md": "https://ex.org/docs/plain.html",
                      "content/docs/page.md": "https://ex.org/docs/page.html", "content/_index.md": "https://ex.org/"}
    zola = _write(tmp_path / "zola", {"config.toml": 'base_url = "https://z.org"\ntheme = "after-dark"\n',
                                      "content/a.md": "# A\n", "templates/x.html": ""})
    assert detect_site(zola).generator == "plain"
    both = _write(tmp_path / "both", {"mkdocs.yml": "site_name: x\n", "docs/index.md": "# Home\n",
                                      "config.yaml": "baseURL: https://h.org/\ntheme: dark\n",
                                      "content/a.md": "# A\n", "content/b.md": "# B\n", "content/c.md": "# C\n"})
    assert detect_site(both).generator == "mkdocs"


@pytest.mark.parametrize("config, text", [
    ("mkdocs.yml", "site_name: x\ndocs_dir: ../outside\n"),
    ("book.toml", "[book]\nsrc = \"../outside\"\n"),
    (".gitbook.yaml", "root: ../outside/\n"),
])
def test_a_config_naming_a_folder_above_the_docs_root_is_refused(config, text, tmp_path):
    """Nothing outside the folder indexed is read, its SUMMARY.md included: the config is
    reported and the folder read as plain Markdown."""
    _write(tmp_path, {"outside/SUMMARY.md": "- [Secret](secret.md)\n", "outside/secret.md": "# Secret\n",
                      f"repo/{config}": text, "repo/README.md": "# Home\n"})
    site = detect_site(tmp_path / "repo")
    assert site.generator == "plain" and "outside the docs root" in site.notes[0]


@pytest.mark.parametrize("attr_list", [True, False])
def test_mkdocs_attr_list_attributes_after_a_link_or_image_are_markup(attr_list, tmp_path):
    """Python-Markdown's attr_list, as mkdocs sites write it after a link (`{.internal-link
    target=_blank}`): with the extension on it is no text of the section; without it, it is text."""
    exts = "markdown_extensions:\n  - attr_list\n" if attr_list else ""
    root = _write(tmp_path / "site", {
        "mkdocs.yml": f"site_name: x\nsite_url: https://x.dev/\n{exts}",
        "docs/index.md": "# Home\n\nRead the [Tutorial](tutorial.md){.internal-link target=_blank} first, "
                         "then ![the flow](flow.png){ width=300 }.\n",
        "docs/tutorial.md": "# Tutorial\n\nSteps.\n",
    })
    s = Settings(db_path=tmp_path / "i.db", docs_root=root)
    with Store(s.db_path) as st:
        index_folder(s, st)
        prose = st.con.execute("SELECT prose FROM nodes WHERE breadcrumb='Home' AND type='chunk'").fetchone()[0]
        jumps = st.con.execute("SELECT count(*) FROM edges WHERE type='jump'").fetchone()[0]
    assert ("{.internal-link" in prose) is not attr_list and "Read the Tutorial" in prose and jumps >= 1
