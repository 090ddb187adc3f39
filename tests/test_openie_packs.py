"""The offline OpenIE's packs: chosen from what a corpus shows or forced, recorded in the index
file, shown by `dgrag stats`; a malformed pack file is a typed error; each pack's knowledge used."""
from __future__ import annotations

import json

import pytest

from dgrag.cli import main
from dgrag.config import Settings
from dgrag.enrich import heuristic_openie
from dgrag.enrich.openie_choice import choose_packs
from dgrag.enrich.openie_packs import lexicon, load_pack, pack_names, parse_pack
from dgrag.enrich.runner import run_step
from dgrag.errors import ConfigError, PackError
from dgrag.store import Store
from dgrag.workflows import index_docs

RUST_PAGE = """# Guessing Game

Run `cargo new guessing_game` and edit src/main.rs:

```rust
fn main() {
    println!("Guess the number!");
}
```

Then cargo run builds and runs it. The Rng trait defines the methods that random number generators implement.
"""
PROSE_PAGE = """# About

This book is written by two authors and kept in a repository; questions go to the forum.
"""


def _rust_book(root, pages=4):
    for i in range(pages):
        (root / f"ch{i}.md").write_text(RUST_PAGE.replace("Guessing Game", f"Guessing Game {i}"), encoding="utf-8")
    (root / "about.md").write_text(PROSE_PAGE, encoding="utf-8")


def test_every_shipped_pack_loads_and_base_comes_first():
    names = pack_names()
    assert names[0] == "base" and {"openharmony", "typescript", "python", "rust", "go"} <= set(names)
    for name in names:
        assert load_pack(name).name == name
    assert lexicon(("openharmony",)).packs == ("base", "openharmony", "typescript")   # what it requires


def test_a_corpus_with_rust_code_blocks_gets_the_rust_pack():
    pages = [(f"ch{i}.md", RUST_PAGE) for i in range(4)] + [("about.md", PROSE_PAGE)]
    choice = choose_packs(pages)
    assert choice.chosen == ("rust",) and choice.packs == ("base", "rust")
    assert choice.evidence["rust"] == 4 and choice.pages == 5 and not choice.forced
    # one page with a Rust block among many is not enough: at least max(2, 2% of pages) must show it
    few = [("ch0.md", RUST_PAGE)] + [(f"p{i}.md", PROSE_PAGE) for i in range(60)]
    assert choose_packs(few).chosen == ()
    # the site generator counts as half the pages needed: mdbook and one Rust page choose it
    assert choose_packs(few[:1] + few[1:3], generator="mdbook").chosen == ("rust",)


def test_a_forced_list_overrides_what_the_corpus_shows():
    pages = [(f"ch{i}.md", RUST_PAGE) for i in range(4)]
    forced = choose_packs(pages, forced="python, go")
    assert forced.forced and forced.chosen == ("python", "go") and forced.packs == ("base", "go", "python")
    assert choose_packs(pages, forced="base").packs == ("base",)
    with pytest.raises(PackError, match="unknown OpenIE pack 'cobol'"):
        choose_packs(pages, forced="rust,cobol")


@pytest.mark.parametrize("text, message", [
    ('name = "x"\n[words\n', "not valid TOML"),
    ('name = "x"\ncolour = "red"\n', "unknown key 'colour'"),
    ('name = "X Pack"\n', "'name' must be a lowercase word"),
    ('name = "x"\n[words]\ncommands = "cargo"\n', "words.commands: expected a list of non-empty strings"),
    ('name = "x"\n[words]\nverbs = ["run"]\n', "unknown key words.verbs"),
    ('name = "x"\n[detect]\ncode = ["rust", ""]\n', "detect.code: expected a list of non-empty strings"),
    ('name = "x"\n[words]\nboilerplate = ["(unclosed"]\n', "words.boilerplate: bad regular expression"),
    ('name = "x"\n[words]\nsignatures = ["fn (\\\\w+)"]\n', "needs the groups"),
])
def test_a_malformed_pack_is_a_typed_error_that_names_the_file_and_key(text, message):
    with pytest.raises(PackError, match="mine.toml: .*" + message.replace("(", r"\(")) as err:
        parse_pack(text, "mine.toml")
    assert isinstance(err.value, ConfigError)          # one line at the edge, as any setting's error


def test_the_openharmony_pack_gives_the_arkui_knowledge_and_base_alone_does_not():
    text = ("getTotalBytes\nSystem capability: SystemCapability.Web.Core\n"
            "Run hdc shell to check the device. The initial APIs of this module are supported since API version 8.")
    crumb = "Request / getTotalBytes"
    oh = heuristic_openie.extract(text, crumb, "en", None, lexicon(("openharmony",)))
    base = heuristic_openie.extract(text, crumb, "en", None, lexicon(()))
    assert ("getTotalBytes", "System capability", "SystemCapability.Web.Core") in oh[1]
    assert "hdc shell" in [e for e, _ in oh[0]] and "hdc shell" not in [e for e, _ in base[0]]
    assert "System capability" not in [t[1] for t in base[1]]
    assert not any("API version" in e for e, _ in oh[0])           # boilerplate masked
    # ArkUI's length units are words of the pack, not of the base
    units = "长度单位\n组件宽度的单位为vp，字体大小的单位为fp。"
    for packs, has_vp in (((), True), (("openharmony",), False)):
        names = [e for e, _ in heuristic_openie.extract(units, "长度单位", "zh", None, lexicon(packs))[0]]
        assert ("vp" in names) is has_vp


@pytest.mark.parametrize("pack, line, name, ret", [
    ("rust", "pub fn read_line(buf: &mut String) -> Result<usize>", "read_line", "Result<usize>"),
    ("python", "def create_app(config: Settings) -> Flask:", "create_app", "Flask"),
    ("go", "func NewReader(rd io.Reader) *Reader {", "NewReader", "*Reader"),
    ("typescript", "createStore(reducer: Reducer): Store", "createStore", "Store"),
])
def test_each_language_pack_reads_its_signature_lines(pack, line, name, ret):
    ents, triples = heuristic_openie.extract(f"{name}\n{line}\nReads it.", f"API / {name}", "en", None,
                                             lexicon((pack,)))
    assert (name, "returns", ret.lstrip("*")) in triples or (name, "returns", ret) in triples
    base = heuristic_openie.extract(f"{name}\n{line}\nReads it.", f"API / {name}", "en", None, lexicon(()))
    assert not any(r == "returns" for _, r, _ in base[1])


def test_commands_and_file_types_come_from_the_packs():
    text = "Build\nRun cargo build --release, then open src/lib.rs; uv run pytest checks app.py."
    rust = [e for e, _ in heuristic_openie.extract(text, "Build", "en", None, lexicon(("rust", "python")))[0]]
    assert {"cargo build --release", "src/lib.rs", "uv run", "app.py"} <= set(rust)
    base = [e for e, _ in heuristic_openie.extract(text, "Build", "en", None, lexicon(()))[0]]
    assert "cargo build --release" not in base and "uv run" not in base


def test_heading_attribute_lists_and_release_note_credits_do_not_reach_the_facts():
    ents, triples = heuristic_openie.extract(
        "Path Parameters { #path-parameters }\nDeclare item_id in the path.",
        "Tutorial { #tutorial } / Path Parameters { #path-parameters }", "en")
    assert not any("{" in x for t in triples for x in (t[0], t[2])) and ents[0][0] == "Path Parameters"
    raw = ("### Fixes\n\n* Fix `Form` fields. PR [#12](https://github.com/o/r/pull/12) by "
           "[@someuser](https://github.com/someuser).\n* Thanks to @other for the `Depends` fix.")
    text = "Fixes\nFix Form fields. PR #12 by @someuser.\nThanks to @other for the Depends fix."
    ents, triples = heuristic_openie.extract(text, "Release Notes / 0.115.0 / Fixes", "en", raw)
    names = [e for e, _ in ents]
    assert names[0] == "Release Notes 0.115.0"                 # the release, not its "Fixes" label
    assert "Form" in names and "Depends" in names
    assert not any(n.startswith("@") for n in names)
    assert ("Release Notes 0.115.0", "mentions", "Depends") in triples
    # a decorator stays one: "decorated by @State" is no credit outside release notes
    ents, _ = heuristic_openie.extract("State\nA variable decorated by @State is observed.", "Guide / State", "en")
    assert "@State" in [e for e, _ in ents]


def test_the_enrichment_records_the_packs_in_the_index_and_stats_shows_them(tmp_path, capsys):
    docs, db = tmp_path / "docs", tmp_path / "i.db"
    docs.mkdir()
    _rust_book(docs)
    settings = Settings(db_path=db, docs_root=docs, embedder="hash")
    with Store(db) as store:
        index_docs(settings, store, embed=False)
        report = run_step(store, settings, "openie", None)
        assert report.offline == report.total > 0
        recorded = json.loads(store.meta.get("openie_packs"))
        facts = [r[0] for r in store.con.execute("SELECT text FROM facts")]
    assert recorded["packs"] == ["base", "rust"] and recorded["evidence"]["rust"] == 4
    assert any("cargo run" in f for f in facts)    # the Rust pack's command, in prose
    assert main(["stats", "--db", str(db)]) == 0
    assert "offline OpenIE packs: base, rust (rust 4 pages; of 5 pages)" in capsys.readouterr().out

    # a forced list replaces the choice; the chunks done offline with the other packs are done again
    forced = Settings(db_path=db, docs_root=docs, embedder="hash", openie_packs="python")
    with Store(db) as store:
        again = run_step(store, forced, "openie", None)
        assert again.offline == report.total
        assert json.loads(store.meta.get("openie_packs"))["packs"] == ["base", "python"]
        facts = [r[0] for r in store.con.execute("SELECT text FROM facts")]
        unchanged = run_step(store, forced, "openie", None)
    assert not any("cargo run" in f for f in facts)
    assert unchanged.total == 0                                        # same choice: nothing to redo
