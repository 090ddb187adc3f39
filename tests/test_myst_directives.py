"""MyST directives on a Sphinx site's pages: a body is Markdown only for the directives MyST
reads as Markdown (admonitions, tabs, cards, figures' captions, domain directives); any other
keeps its body as code. Includes inside a tab are read; `/x.md` starts at the source folder."""
from __future__ import annotations

from pathlib import Path

from dgrag.ingest.includes import Includes
from dgrag.ingest.markdown import parse_page

PAGE = """# Plots

## Making one

```{plot}
# make a plot
import matplotlib.pyplot as plt
plt.plot([1, 2])
```

```{doctest}
>>> 1 + 1
2
```

````{tab-set}
```{tab-item} Python
Call **it** here.
```
````

```{figure} img/arch.png
The architecture, end to end.
```

```{py:function} spam(eggs)
Spam the **eggs** as {abbr}`JSON (JavaScript Object Notation)`.
```
"""


def test_only_markdown_bodied_directives_are_parsed_as_markdown():
    page = parse_page("docs/plots.md", PAGE, myst=True, slug_rule="docutils")
    crumbs = [n["breadcrumb"] for n in page.nodes if n["type"] == "chunk"]
    assert crumbs == ["Plots", "Plots / Making one"]  # "# make a plot" in a plot's body is no heading
    chunk = next(n for n in page.nodes if n["breadcrumb"] == "Plots / Making one")
    for shown in ("Call it here.", "The architecture, end to end.", "Spam the eggs as JSON."):
        assert shown in chunk["prose"], shown
    assert "img/arch.png" not in chunk["prose"]  # a figure's argument is its picture, not a title
    code = {n["text"]: n["meta"]["code_language"] for n in page.nodes if n["type"] == "code"}
    assert code == {"# make a plot\nimport matplotlib.pyplot as plt\nplt.plot([1, 2])": "python",
                    ">>> 1 + 1\n2": "python"}  # code to run: code, out of the prose
    assert "make a plot" not in chunk["prose"] and ">>>" not in chunk["prose"]


def _repo(root: Path) -> Path:
    for rel, text in {"docs/conf.py": "extensions = ['myst_parser']\n", "docs/shared/part.md": "Shared words.\n",
                      "shared/part.md": "The repository's, not the source folder's.\n",
                      "docs/snippet.md": "A fence: ```js\nx\n```\n"}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def test_an_include_in_a_tab_is_read_and_an_absolute_one_starts_at_the_source_folder(tmp_path):
    root = _repo(tmp_path / "repo")
    page = ("# P\n\n````{tab-item} One\n```{include} shared/part.md\n```\n````\n\n"
            "```{include} /shared/part.md\n```\n\n```{include} snippet.md\n:literal:\n```\n")
    text, _, rep = Includes(root, root, ["", "docs"], myst=True).expand("docs/p.md", page)
    assert text.count("Shared words.") == 2 and "repository's" not in text
    assert rep.missing == [] and rep.read == {"docs/shared/part.md", "docs/snippet.md"}
    assert "````markdown\nA fence: ```js\nx\n```\n````" in text  # a literal include keeps its own backticks
