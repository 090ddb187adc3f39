"""A GitBook space synced from Git: `.gitbook.yaml` (root, first page, table of contents),
SUMMARY.md's pages and sidebar titles, page URLs (a folder's README.md is the folder, the first
page the site's root), the anchor element GitBook writes into a heading, and its blocks
(`{% hint %}`, `{% tabs %}`, `{% code %}`, `{% openapi %}`, HTML tables) read as text.

GitBook is a hosted service with no build to run here: the expected URLs follow its documented
rules (https://gitbook.com/docs, "Content configuration") and the files Git Sync writes."""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

from dgrag.config import Settings
from dgrag.ingest.dialects import raw_markers
from dgrag.ingest.pipeline import index_folder
from dgrag.ingest.site import detect_site
from dgrag.store import Store
from test_sites import layer_texts

SPACE = {
    ".gitbook.yaml": """
        root: ./docs/
        structure:
          readme: intro.md
          summary: SUMMARY.md
        redirects:
          old/setup: guide/setup.md
    """,
    "README.md": "# The repository's own README\n\nNot a page of the space.\n",
    "docs/SUMMARY.md": """
        # Table of contents

        ## Getting started <a href="#getting-started" id="getting-started"></a>

        * [Welcome](intro.md)
        * [Guide](guide/README.md)
          * [Set up the editor](guide/setup.md "Setup")
        * [快速开始](zh/quickstart.md)
    """,
    "docs/intro.md": """
        ---
        description: What the SDK is.
        ---

        # Welcome

        Start with the [setup](guide/setup.md#install-the-package).
    """,
    "docs/guide/README.md": "# Guide\n\nThe guide's overview.\n",
    "docs/guide/setup.md": """
        # Set up the editor

        ## Install the package <a href="#install-the-package" id="install-the-package"></a>

        {% tabs %}
        {% tab title="npm" %}
        Run the installer with npm.
        {% endtab %}

        {% tab title="yarn" %}
        Run the installer with yarn.
        {% endtab %}
        {% endtabs %}

        ## Renamed heading <a href="#old-name" id="old-name"></a>

        {% hint style="warning" %}
        Keep the client secret on the server.
        {% endhint %}

        ## Options

        {% code title="config.js" overflow="wrap" %}
        ```javascript
        const config = { uid: "demo-user" };
        ```
        {% endcode %}

        ## Options

        <table><thead><tr><th>Parameter</th><th>Meaning</th></tr></thead><tbody><tr><td>uid</td><td>the user</td></tr><tr><td>container</td><td>the element</td></tr></tbody></table>

        ## Brand styles API

        {% openapi src="../.gitbook/assets/brand.yaml" path="/v1/template/brand" method="post" %}
        [brand.yaml](../.gitbook/assets/brand.yaml)
        {% endopenapi %}

        ## Catalog API

        {% openapi-operation spec="catalog" path="/v1/catalog" method="get" %}
        [OpenAPI catalog](https://example.com/catalog.yaml)
        {% endopenapi-operation %}

        ## Outside

        {% openapi src="../../../outside.yaml" path="/v1/x" method="get" %}
        [outside.yaml](../../../outside.yaml)
        {% endopenapi %}
    """,
    "docs/.gitbook/assets/brand.yaml": """
        openapi: 3.0.0
        paths:
          /v1/template/brand:
            post:
              summary: Restyle templates
              description: Changes the style of every module of a template at once.
              parameters:
                - $ref: '#/components/parameters/Collection'
              requestBody:
                content:
                  application/json:
                    schema:
                      $ref: '#/components/schemas/Brand'
              responses:
                '200':
                  description: The restyled template
                '401':
                  description: Missing or wrong API key
        components:
          parameters:
            Collection:
              name: collection
              in: query
              required: true
              description: Which collection the template belongs to
              schema:
                type: string
          schemas:
            Brand:
              type: object
              required: [styles]
              properties:
                styles:
                  type: object
                  properties:
                    button:
                      type: object
                      description: How every button looks
                template:
                  type: object
                  description: The template to restyle
    """,
    "docs/zh/quickstart.md": "# 快速开始\n\n## 安装\n\n运行安装命令。\n\n## 安装\n\n再次安装。\n",
    "docs/unlisted.md": "# Unlisted\n\nGitBook does not publish a page its SUMMARY.md leaves out.\n",
}


def _space(root: Path) -> Path:
    for rel, text in SPACE.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return root


def test_the_gitbook_yaml_names_the_root_the_first_page_and_the_table_of_contents(tmp_path):
    site = detect_site(_space(tmp_path / "repo"), site_url="https://docs.example.com/sdk")
    assert site.generator == "gitbook" and site.config == ".gitbook.yaml"
    assert site.parts[0].pages == ["docs/intro.md", "docs/guide/README.md", "docs/guide/setup.md",
                                   "docs/zh/quickstart.md"]
    assert site.nav_of("docs/guide/setup.md") == (3, "Setup")  # the link's title is the sidebar's
    assert not site.publishes("docs/unlisted.md") and not site.publishes("README.md")
    assert [site.page_url(p) for p in site.parts[0].pages] == [
        "https://docs.example.com/sdk/", "https://docs.example.com/sdk/guide",
        "https://docs.example.com/sdk/guide/setup", "https://docs.example.com/sdk/zh/quickstart"]
    assert "1 redirects not applied" in site.notes[0]


def test_a_gitbook_space_indexed_from_its_repository_folder(tmp_path):
    root = _space(tmp_path / "repo")
    s = Settings(db_path=tmp_path / "i.db", docs_root=root, site_url="https://docs.example.com/sdk",
                 embedder="hash")
    with Store(s.db_path) as st:
        rep = index_folder(s, st)
        rows = st.con.execute("SELECT type, source_path, breadcrumb, source_url, prose, meta FROM nodes "
                              "ORDER BY rowid").fetchall()
    assert rep.site["generator"] == "gitbook" and rep.files_seen == 4
    # one operation read from its spec; one GitBook holds by name and one outside the root stay stubs
    assert rep.dialect["reference_stubs"] == ["docs/guide/setup.md"]
    assert rep.dialect["includes_refused"] == ["docs/guide/setup.md: ../../../outside.yaml"] and rep.dialect["includes_missing"] == []
    urls = [(p, u) for t, p, _, u, _, _ in rows if t == "chunk"]
    texts = st_texts(s.db_path)
    chunks = {(p, b): (u, prose) for t, p, b, u, prose, _ in rows if t == "chunk"}
    base = "https://docs.example.com/sdk/guide/setup"
    assert [u for p, u in urls if p == "docs/guide/setup.md"] == [
        f"{base}#set-up-the-editor", f"{base}#install-the-package", f"{base}#old-name",
        f"{base}#options", f"{base}#options-1", f"{base}#brand-styles-api", f"{base}#catalog-api", f"{base}#outside"]
    zh = "https://docs.example.com/sdk/zh/quickstart"
    assert [u for p, u in urls if p == "docs/zh/quickstart.md"] == [
        f"{zh}#快速开始", f"{zh}#安装", f"{zh}#安装-1"]
    install = chunks[("docs/guide/setup.md", "Set up the editor / Install the package")][1]
    assert "npm" in install and "yarn" in install and "Run the installer with yarn." in install
    assert "Keep the client secret on the server." in chunks[("docs/guide/setup.md",
                                                              "Set up the editor / Renamed heading")][1]
    brand = "\n".join(t for b, t in texts if b.startswith("Set up the editor / Brand styles API"))
    for shown in ("**POST /v1/template/brand**: Restyle templates", "Changes the style of every module",
                  "styles.button", "How every button looks", "Which collection the template belongs to",
                  "Missing or wrong API key"):
        assert shown in brand
    assert "API operation: GET /v1/catalog" in chunks[("docs/guide/setup.md", "Set up the editor / Catalog API")][1]
    assert "API operation: GET /v1/x" in chunks[("docs/guide/setup.md", "Set up the editor / Outside")][1]
    tables = [json.loads(m) for t, *_, m in rows if t == "table"]
    assert tables[0]["header"] == ["Parameter", "Meaning"] and tables[0]["rows"] == 3  # the first row's cells only
    assert [t["header"] for t in tables[1:]] == [["name", "in", "type", "required", "description"],
                                                 ["field", "type", "required", "description"], ["status", "description"]]
    code = [(b, json.loads(m)) for t, _, b, _, _, m in rows if t == "code"]
    assert code and code[0][1]["code_language"] == "javascript"


def st_texts(db: Path) -> list[tuple[str, str]]:
    """(breadcrumb, text) of every chunk and table, a table's text read back from its chunk."""
    with Store(db) as st:
        nodes = st.nodes.by_rowids(st.nodes.of_type(["chunk", "table"]))
    return [(n["breadcrumb"], n["text"]) for n in nodes]


def test_no_gitbook_marker_in_breadcrumbs_entities_facts_or_embedded_texts(tmp_path):
    s = Settings(db_path=tmp_path / "i.db", docs_root=_space(tmp_path / "repo"), embedder="hash")
    for text in layer_texts(s, ("file", "chunk", "entity")):  # an HTML table embeds its HTML
        assert raw_markers(text) == {} and "<a " not in text and "{%" not in text, text


def test_a_changed_spec_indexes_its_page_again(tmp_path):
    root = _space(tmp_path / "repo")
    s = Settings(db_path=tmp_path / "i.db", docs_root=root, embedder="hash")
    spec = root / "docs/.gitbook/assets/brand.yaml"
    with Store(s.db_path) as st:
        index_folder(s, st)
        assert index_folder(s, st).files_indexed == 0
        spec.write_text(spec.read_text(encoding="utf-8").replace("Restyle templates", "Restyle every template"),
                        encoding="utf-8")
        again = index_folder(s, st)
        text = "\n".join(r[0] for r in st.con.execute("SELECT text FROM nodes WHERE source_path='docs/guide/setup.md'"))
    assert again.files_indexed == 1 and "Restyle every template" in text


def test_a_gitbook_yaml_pasted_with_zero_width_spaces_is_read(tmp_path):
    root = _space(tmp_path / "repo")
    (root / "docs/SUMMARY.md").rename(root / "docs/toc.md")
    (root / ".gitbook.yaml").write_text("root: ./docs/\n\u200bstructure:\n  readme: intro.md\n  summary: toc.md\u200b\n",
                                         encoding="utf-8")
    site = detect_site(root)
    assert site.parts[0].pages[:2] == ["docs/intro.md", "docs/guide/README.md"] and site.page_url("docs/intro.md") == "/"
