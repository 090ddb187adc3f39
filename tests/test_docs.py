"""The documentation says what the code does: docs/configuration.md is generated from dgrag/config/
and lists every field; the README stays short, its first screen says what dgrag is and how to
start, its links and pictures exist, and every command in its code blocks is run here (or, for
the test suite itself, by CI); its figures are docs/benchmarks.md's; the architecture page lists
every migration and only store/ runs SQL; a section that the code or the docs name exists; the
guide names every command's flags and the docs only variables the code reads."""
from __future__ import annotations

import dataclasses
import importlib.util
import itertools
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from dgrag import config
from dgrag.config import RetrievalConfig, Settings

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
CONFIG_DOC = DOCS / "configuration.md"
# written on another branch (the MCP / OpenAI-compatible clients); the links to it are checked
# once it exists
PENDING: set = set()  # doc pages a link may name before they exist


def _config_doc():
    spec = importlib.util.spec_from_file_location("config_doc", ROOT / "scripts" / "config_doc.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["config_doc"] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


# ---- docs/configuration.md ---------------------------------------------------------------------
def test_the_configuration_page_is_what_the_generator_writes_from_the_code():
    assert CONFIG_DOC.read_text(encoding="utf-8") == _config_doc().render(), \
        "docs/configuration.md is out of date: run python scripts/config_doc.py"


def test_every_field_has_a_description():
    assert _config_doc().undocumented() == []


def test_a_field_without_a_comment_is_reported_undocumented():
    gen = _config_doc()
    source = (ROOT / "dgrag" / "config" / "__init__.py").read_text(encoding="utf-8")
    bare = source.replace('    chat_max_images: int = 3  # images sent to the model with one answer, at most\n',
                          '    chat_max_images: int = 3\n')
    assert bare != source, "the test's field line changed: pick another field"
    assert gen.undocumented(bare) == ["chat_max_images"]


def test_the_check_fails_on_a_stale_page_and_passes_on_a_fresh_one(tmp_path, monkeypatch, capsys):
    gen = _config_doc()
    monkeypatch.setattr(gen, "OUT", tmp_path / "configuration.md")
    (tmp_path / "configuration.md").write_text(gen.render().replace("`DGRAG_DB_PATH`", "`DGRAG_DB`"))
    assert gen.main(["--check"]) == 1
    assert "out of date" in capsys.readouterr().err
    assert gen.main([]) == 0 and gen.main(["--check"]) == 0


def _rows(text: str) -> dict[str, list[str]]:
    """Table rows of the page, by the field name in their first cell."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"\| `(\w+)` \| (.*) \|$", line)
        if m:
            out[m.group(1)] = [c.strip() for c in re.split(r"(?<!\\)\|", m.group(2))]
    return out


def _read_default(cell: str, field_type: str):
    """A default cell read back into a value, independently of the generator's rendering."""
    text = re.sub(r" \(`[^`]*`\)$", "", cell).strip()
    if text == "unset":
        return None
    text = text.strip("`")
    if field_type == "bool":
        return {"true": True, "false": False}[text]
    if field_type == "int":
        return int(text)
    if field_type == "float":
        return float(text)
    if "Path" in field_type:
        return (config.PROJECT_ROOT / text).resolve()
    return "" if text == '""' else text


def _all_fields():
    yield from ((f, Settings) for f in dataclasses.fields(Settings) if f.name != "retrieval")
    yield from ((f, RetrievalConfig) for f in dataclasses.fields(RetrievalConfig))


def test_every_field_has_a_row_with_its_variable_type_and_the_codes_default():
    rows = _rows(CONFIG_DOC.read_text(encoding="utf-8"))
    defaults = {**dataclasses.asdict(Settings()), **dataclasses.asdict(RetrievalConfig())}
    for f, cls in _all_fields():
        assert f.name in rows, f"{f.name} has no row in docs/configuration.md"
        env, typ, default = rows[f.name][:3]
        prefix = "DGRAG_RETRIEVAL_" if cls is RetrievalConfig else "DGRAG_"
        assert env.split(", ")[0] == f"`{prefix}{f.name.upper()}`"
        assert typ.replace("\\|", "|") == f"`{f.type}`"
        want = defaults[f.name]
        got = _read_default(default, str(f.type))
        assert got == (want.resolve() if isinstance(want, Path) else want), f.name


def _sample(f: dataclasses.Field, description: str) -> str:
    """A value for the field's variable that differs from its default and is accepted."""
    if f.type == "bool":
        return "false" if f.default else "true"
    if f.type in ("int", "float"):
        return str(f.default + 1) if f.type == "int" else str(f.default / 2 or 0.5)
    if "Path" in str(f.type):
        return "/tmp/dgrag-doc-check"
    if f.name in {g.name for g in dataclasses.fields(RetrievalConfig)}:  # checked values: a documented choice
        for word in re.findall(r"[a-z][a-z0-9-]*", description):
            if word != f.default:
                try:
                    RetrievalConfig().merged({f.name: word})
                    return word
                except config.ConfigError:
                    continue
        raise AssertionError(f"the description of {f.name} names no other value the code accepts")
    for word in ["doc-check", *re.findall(r'"([a-z][a-z0-9-]*)"', description)]:  # checked settings: a quoted choice
        if word != f.default:
            try:
                Settings.from_env({}, **{f.name: word})
                return word
            except config.ConfigError:
                continue
    raise AssertionError(f"the description of {f.name} names no other value the code accepts")


def test_each_documented_variable_sets_its_field():
    rows = _rows(CONFIG_DOC.read_text(encoding="utf-8"))
    for f, cls in _all_fields():
        env_cell, description = rows[f.name][0], rows[f.name][-1]
        value = _sample(f, description)
        for var in re.findall(r"`(\w+)`", env_cell):
            s = Settings.from_env({var: value})
            got = getattr(s.retrieval if cls is RetrievalConfig else s, f.name)
            assert got != getattr(Settings() if cls is Settings else RetrievalConfig(), f.name), (var, value)


# ---- README: short, linked, pictured -----------------------------------------------------------
def test_the_readme_is_read_in_five_minutes():
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 200


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def _links(text: str):
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if not re.match(r"[a-z]+:", target):
            yield target


def _headings(page: Path) -> list[str]:
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.S | re.M)
    return re.findall(r"^#+ (.+)$", text, flags=re.M)


def broken_links(page: Path, text: str | None = None) -> list[str]:
    """The page's relative links whose file, or whose heading anchor, does not exist."""
    out = []
    text = page.read_text(encoding="utf-8") if text is None else text
    for target in _links(text):
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if dest in PENDING and not dest.exists():
            continue
        if not dest.exists():
            out.append(f"{page.name}: {target} does not exist")
        elif anchor and dest.suffix == ".md" and anchor not in {_slug(h) for h in _headings(dest)}:
            out.append(f"{page.name}: no heading #{anchor} in {dest.name}")
    return out


LINKED_PAGES = [README, *sorted(DOCS.glob("*.md")), ROOT / "bench" / "sites" / "README.md"]


@pytest.mark.parametrize("page", LINKED_PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_links_lead_to_files_and_headings_that_exist(page):
    assert broken_links(page) == []


def test_a_link_to_a_heading_that_moved_fails():
    text = "[a](docs/benchmarks.md#the-demos-first-start) [b](docs/benchmarks.md#this-round-2026-12-03)\n" \
           "[c](docs/no-such-page.md) [d](#start-here)"
    assert broken_links(README, text) == [
        "README.md: no heading #this-round-2026-12-03 in benchmarks.md",
        "README.md: docs/no-such-page.md does not exist", "README.md: no heading #start-here in README.md"]


def test_the_readmes_pictures_are_committed_and_small():
    pictures = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", README.read_text(encoding="utf-8"))
    assert len(pictures) >= 2
    for picture in pictures:
        path = ROOT / picture
        assert path.exists() and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", picture
        assert path.stat().st_size < 150_000, f"{picture} is {path.stat().st_size} bytes"


# ---- README: every command in its code blocks runs ---------------------------------------------
def readme_commands(text: str) -> list[list[str]]:
    """The commands of the README's bash blocks, as argument lists: continuation lines joined,
    comments dropped."""
    out = []
    for block in re.findall(r"^```(?:bash|sh|shell)\n(.*?)^```", text, flags=re.S | re.M):
        for line in block.replace("\\\n", " ").splitlines():
            argv = shlex.split(line, comments=True)
            if argv:
                out.append(argv)
    return out


def test_commands_are_read_from_bash_blocks_with_continuations_and_comments():
    text = "```bash\nfoo --a 'x y' \\\n    --b 1   # why\n\n# only a comment\n```\n```text\nnot me\n```\n"
    assert readme_commands(text) == [["foo", "--a", "x y", "--b", "1"]]


def _ci_runs(command: list[str]) -> bool:
    """Does .ci/run (what CI executes) run this command on a line of its own?"""
    lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    return any(shlex.split(line, comments=True) == command for line in lines)


def _split_env(argv: list[str]) -> tuple[dict[str, str], list[str]]:
    env = {}
    while argv and re.match(r"[A-Z_][A-Z0-9_]*=", argv[0]):
        name, _, value = argv[0].partition("=")
        env[name] = value
        argv = argv[1:]
    return env, argv


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serves(argv: list[str], env: dict[str, str]) -> None:
    """Start a command that serves the app, wait until /health has the index loaded, stop it."""
    port = _free_port()
    env = {**env, "DGRAG_SERVER_PORT": str(port)}
    proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        deadline = time.time() + 300
        while True:
            assert proc.poll() is None, f"{shlex.join(argv)} exited: {proc.stderr.read()[-2000:]}"
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as resp:
                    import json

                    health = json.load(resp)
                if health.get("index_loaded"):
                    break
            except OSError:
                pass
            assert time.time() < deadline, f"{shlex.join(argv)}: no healthy answer in 300 s"
            time.sleep(0.5)
        assert health["status"] == "ok"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


@pytest.fixture
def readme_places(tmp_path, fixture_index, openai_server):
    """What the README's placeholders stand for here: the fixture pages, files in tmp_path, a
    loopback OpenAI-protocol server for both the LLM and the embeddings server."""
    shutil.copytree(ROOT / "tests" / "fixtures" / "docs", tmp_path / "docs")
    shutil.copy(fixture_index[0].db_path, tmp_path / "demo.db")
    bin_dir = Path(sys.executable).parent
    return {"path/to/your-docs": str(tmp_path / "docs"), "my.db": str(tmp_path / "my.db"),
            "served.db": str(tmp_path / "served.db"), "http://localhost:8000/v1": openai_server.url + "/v1",
            "http://localhost:8080/v1": openai_server.url + "/v1", ".venv/bin/": str(bin_dir) + "/"}


def _placed(argv: list[str], places: dict[str, str]) -> list[str]:
    out = []
    for arg in argv:
        for placeholder, here in places.items():
            arg = re.sub(r"(?<![\w.])" + re.escape(placeholder) + r"(?![\w])", here, arg) \
                if placeholder[0].isalnum() else arg.replace(placeholder, here)
        out.append(arg)
    return out


def _check(command: list[str], places: dict[str, str], base: dict[str, str], demo_db: Path) -> None:
    """Run one README command as a reader would, with the placeholders filled in."""
    env, argv = _split_env(_placed(command, places))
    env = {**base, **env}
    shown = shlex.join(command)
    if command == ["bash", "scripts/test.sh"]:  # the suite itself: CI runs it
        assert _ci_runs(command), f"{shown}: .ci/run does not run it"
    elif command[:2] == ["bash", "scripts/start.sh"]:  # installs into .venv, then serves the demo
        # the demo's own first build takes half an hour (check_install.sh runs it): here it serves an indexed copy
        _serves(argv, {**env, "DGRAG_DB_PATH": str(demo_db)})
    elif argv[0].endswith("/dgrag") and argv[1:2] == ["serve"]:
        _serves(argv, env)
    elif argv[0].endswith("/dgrag"):
        proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, f"{shown}: exit {proc.returncode}\n{proc.stderr[-3000:]}"
        if argv[1:2] == ["query"]:
            assert "ArkUI-X" in proc.stdout, f"{shown}: {proc.stdout[-2000:]}"
    else:
        pytest.fail(f"the README's command {shown} is run by no test: add a check for it here")


def _clean_env() -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("DGRAG_")}
    base.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", GRADIO_ANALYTICS_ENABLED="False",
                PATH=f"{Path(sys.executable).parent}{os.pathsep}{base.get('PATH', '')}")
    return base


def test_a_command_no_test_runs_fails_and_ci_is_read_for_what_it_runs(tmp_path):
    with pytest.raises(pytest.fail.Exception, match="run by no test"):
        _check(["curl", "-s", "localhost:7860/health"], {}, _clean_env(), tmp_path / "none.db")
    assert _ci_runs(["bash", "scripts/test.sh"]) and not _ci_runs(["bash", "scripts/start.sh"])
    with pytest.raises(AssertionError, match="exit 2"):
        _check([".venv/bin/dgrag", "index", "--no-such-flag"], {".venv/bin/": str(Path(sys.executable).parent) + "/"},
               _clean_env(), tmp_path / "none.db")


def test_every_readme_command_runs(readme_places, tmp_path):
    commands = readme_commands(README.read_text(encoding="utf-8"))
    assert len(commands) >= 8
    base = _clean_env()
    for command in commands:  # in the README's order: the index is built before it is queried
        _check(command, readme_places, base, tmp_path / "demo.db")


# ---- the docs say what the code is -------------------------------------------------------------
ARCHITECTURE = DOCS / "architecture.md"
BENCHMARKS = DOCS / "benchmarks.md"
MIGRATIONS = ROOT / "dgrag" / "store" / "migrations"


def unlisted_migrations(names: list[str], architecture: str) -> list[str]:
    """Migration files whose number the architecture page's Migrations paragraph does not name."""
    m = re.search(r"\*\*Migrations\.\*\*(.*?)(?=\n- \*\*|\n## |\Z)", architecture, flags=re.S)
    listed = set(re.findall(r"\b(\d{4})\b", m.group(1) if m else ""))
    return [n for n in sorted(names) if n[:4] not in listed]


def test_every_migration_is_listed_in_the_architecture_page():
    names = [p.name for p in MIGRATIONS.glob("*.sql")]
    assert len(names) >= 8
    assert unlisted_migrations(names, ARCHITECTURE.read_text(encoding="utf-8")) == []


def test_a_migration_left_out_of_the_architecture_page_fails():
    text = ARCHITECTURE.read_text(encoding="utf-8")
    assert unlisted_migrations(["0001_index.sql", "0099_new.sql"], text) == ["0099_new.sql"]
    assert unlisted_migrations(["0001_index.sql"], text.replace("**Migrations.**", "**Schema.**")) == ["0001_index.sql"]


def sql_outside_the_store(files: dict[str, str]) -> list[str]:
    """Modules outside dgrag/store/ that run SQL themselves (architecture.md: only store/ does)."""
    return [name for name, text in files.items()
            if not name.startswith("dgrag/store/") and re.search(r"\.execute(many|script)?\(", text)]


def test_only_the_store_speaks_sql():
    files = {p.relative_to(ROOT).as_posix(): p.read_text(encoding="utf-8") for p in (ROOT / "dgrag").rglob("*.py")}
    assert sql_outside_the_store(files) == []
    assert sql_outside_the_store({"dgrag/web/x.py": 'st.con.execute("PRAGMA quick_check")',
                                  "dgrag/store/nodes.py": 'con.execute("SELECT 1")'}) == ["dgrag/web/x.py"]


# ---- a section named in the code or the docs exists ---------------------------------------------
_DOC_PAGES = "|".join(re.escape(p.name) for p in sorted(DOCS.glob("*.md")))
_DOC = rf"(README(?:\.md)?|docs/[a-z_]+\.md|{_DOC_PAGES})"
_QUOTED_REF = re.compile(rf"(?<![\"'/\w.]){_DOC}`?(?:'s)?,?\s*(?:\(|section\s+)?"
                         r"[\"“]([A-Za-z][^\"”]{1,79})[\"”]")
_BARE_REF = re.compile(rf"\({_DOC},\s*([A-Za-z][^)\"“]*)\)")


def section_refs(text: str) -> list[tuple[str, str]]:
    """(document, section) pairs a text names: `(README, "Tests")`, `docs/benchmarks.md, "Index
    cost"`, comment lines joined first (a name may be cut by a line break)."""
    flat = re.sub(r"\s*\n\s*(?:#+ ?|//+ ?|\* )?", " ", text)
    return [(m.group(1), m.group(2).strip()) for pattern in (_QUOTED_REF, _BARE_REF) for m in pattern.finditer(flat)]


def missing_sections(refs: list[tuple[str, str]]) -> list[str]:
    out = []
    for doc, name in refs:
        page = README if doc.startswith("README") else DOCS / doc.removeprefix("docs/")
        if not page.exists():
            out.append(f"{doc}: no such page")
            continue
        headings = [h.replace("`", "").strip().lower() for h in _headings(page)]
        if not any(h.startswith(name.replace("`", "").lower()) for h in headings):
            out.append(f'{doc}, "{name}": no such section')
    return out


def _sources() -> list[Path]:
    paths = [*(ROOT / "dgrag").rglob("*.py"), *(ROOT / "bench").rglob("*.py"), *(ROOT / "scripts").glob("*.py"),
             ROOT / "app.py", *(ROOT / "tests").glob("*.py"), *LINKED_PAGES]
    return [p for p in paths if p != Path(__file__).resolve()]


def test_every_section_the_code_and_docs_name_exists():
    refs = {p.relative_to(ROOT).as_posix(): section_refs(p.read_text(encoding="utf-8")) for p in _sources()}
    assert sum(len(r) for r in refs.values()) >= 10  # the pattern still finds the references
    assert {name: missing_sections(r) for name, r in refs.items() if missing_sections(r)} == {}


def test_a_section_that_moved_out_of_the_readme_fails():
    code = ('    # tokens and changed no ranking (README, "Indexing throughput").\n'
            '    # measured (docs/benchmarks.md, "The BLAS\n    # engine"); see the README, "Tests"\n'
            "# the fact route matches (README, offline OpenIE)\n")
    refs = section_refs(code)
    assert refs == [("README", "Indexing throughput"), ("docs/benchmarks.md", "The BLAS engine"),
                    ("README", "Tests"), ("README", "offline OpenIE")]
    assert missing_sections(refs) == ['README, "Indexing throughput": no such section',
                                      'README, "offline OpenIE": no such section']
    assert section_refs('x = ROOT / "README.md", "other"') == []  # a file name, not a reference


# ---- the README's first screen -----------------------------------------------------------------
START_COMMANDS = ("bash scripts/start.sh", "bash scripts/test.sh")


def first_screen_problems(text: str, lines: int = 25) -> list[str]:
    """What the first screen after the Spaces front matter lacks: the title, a short paragraph
    saying what dgrag is, and the two commands to start, in a bash block."""
    body = text.split("\n---\n", 1)[1] if text.startswith("---\n") else text
    screen = body.strip("\n").splitlines()[:lines]
    out = []
    if not screen or not screen[0].startswith("# dgrag"):
        out.append("the first line is not the title")
    para = list(itertools.takewhile(str.strip, screen[2:])) if len(screen) > 2 else []
    if not 2 <= len(para) <= 4 or not re.search(r"\bdocs?\b|documentation", " ".join(para), flags=re.I):
        out.append("no paragraph of 2-4 lines saying what dgrag is")
    commands = [" ".join(argv) for argv in readme_commands("\n".join(screen) + "\n")]
    out += [f"{c} is not on the first screen" for c in START_COMMANDS if c not in commands]
    return out


def test_the_readmes_first_screen_says_what_dgrag_is_and_how_to_start():
    assert first_screen_problems(README.read_text(encoding="utf-8")) == []


def test_a_first_screen_with_the_commands_further_down_fails():
    text = README.read_text(encoding="utf-8")
    title_end = text.index("\n\n", text.index("# dgrag")) + 2
    pushed = text[:title_end] + "How it works.\n\n" + "More about it.\n" * 30 + "\n" + text[title_end:]
    assert first_screen_problems(pushed) == ["no paragraph of 2-4 lines saying what dgrag is",
                                             "bash scripts/start.sh is not on the first screen",
                                             "bash scripts/test.sh is not on the first screen"]


# ---- figures in both the README and docs/benchmarks.md agree ------------------------------------
def _table(text: str, header: str) -> list[dict[str, str]]:
    """The rows of every Markdown table whose header row starts with `header`, as dicts."""
    rows, cols = [], None
    for line in text.splitlines():
        if not line.startswith("|"):
            cols = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cols is None:
            cols = cells if line.startswith(header) else []
        elif cols and not set(line) <= set("|-: "):
            rows.append(dict(zip(cols, cells)))
    return rows


def _bare(cell: str) -> str:
    return cell.replace("**", "").strip()


def retrieval_disagreements(readme: str, benchmarks: str) -> list[str]:
    """README retrieval rows (`dense → default` per column) against docs/benchmarks.md's rows per
    method, for the same configuration and split."""
    bench = {(r["configuration"], r["split"], r["method"]): r
             for r in _table(benchmarks, "| configuration | split | n | method |")}
    out = []
    for row in _table(readme, "| configuration | split | n | R@1"):
        key = (row["configuration"], row["split"])
        dense, default = bench.get((*key, "dense")), bench.get((*key, "diffusion"))
        if not dense or not default:
            out.append(f"{key}: not in docs/benchmarks.md")
            continue
        if row["n"] != default["n"]:
            out.append(f"{key}: n {row['n']} against {default['n']}")
        for col, cell in row.items():
            if "→" in cell:
                pair = [_bare(c) for c in cell.split("→")]
                if pair != [dense.get(col, ""), default.get(col, "")]:
                    out.append(f"{key} {col}: {' → '.join(pair)} against {dense.get(col)} → {default.get(col)}")
            elif col.startswith("no graph "):  # "no graph R@1 / R@2 / ...": the no-graph row's cells
                bare = bench.get((*key, "no graph"), {})
                want = " / ".join(bare.get(c, "") or "–" for c in col[len("no graph "):].split(" / "))
                if cell != want:
                    out.append(f"{key} {col}: {cell} against {want}")
            elif col.startswith("vs dense"):
                theirs = next((v for c, v in default.items() if c.startswith("vs dense")), "")
                if cell != theirs:
                    out.append(f"{key} {col}: {cell} against {theirs}")
    return out


def test_the_readmes_retrieval_table_is_docs_benchmarks():
    readme, bench = README.read_text(encoding="utf-8"), BENCHMARKS.read_text(encoding="utf-8")
    assert len(_table(readme, "| configuration | split | n | R@1")) >= 8
    assert retrieval_disagreements(readme, bench) == []


def test_a_readme_figure_that_differs_from_docs_benchmarks_fails():
    readme, bench = README.read_text(encoding="utf-8"), BENCHMARKS.read_text(encoding="utf-8")
    changed = readme.replace("| 37.4 → **41.9** |", "| 37.4 → **42.9** |", 1)
    assert changed != readme
    assert retrieval_disagreements(changed, bench) == [
        "('MuSiQue, offline', 'test') R@1: 37.4 → 42.9 against 37.4 → 41.9"]
    changed = readme.replace("| 66.8 / 88.9 / 50.7 / 82.5 / 81.4 |", "| 66.8 / 89.9 / 50.7 / 82.5 / 81.4 |", 1)
    assert changed != readme
    assert retrieval_disagreements(changed, bench) == [
        "('ArkUI-X, structural', 'test') no graph R@1 / R@2 / S@1 / S@5 / both@5: 66.8 / 89.9 / 50.7 / 82.5 / 81.4 "
        "against 66.8 / 88.9 / 50.7 / 82.5 / 81.4"]


_NUMBER = re.compile(r"(?<![\d.,])\d[\d,]*(?:\.\d+)?(?![\d])")


def unstated_figures(readme: str, benchmarks: str) -> list[str]:
    """Numbers of the README's Figures table that docs/benchmarks.md does not state."""
    stated = {n.rstrip(",") for n in _NUMBER.findall(benchmarks)}
    out = []
    for row in _table(readme, "| what | figure |"):
        figure = re.sub(r"\]\([^)]*\)", "]", row["figure"])  # link targets are not figures
        out += [f"{row['what']}: {n}" for n in _NUMBER.findall(figure) if n.rstrip(",") not in stated]
    return out


def test_the_readmes_figures_are_stated_in_docs_benchmarks():
    readme, bench = README.read_text(encoding="utf-8"), BENCHMARKS.read_text(encoding="utf-8")
    assert len(_table(readme, "| what | figure |")) >= 5
    assert unstated_figures(readme, bench) == []
    assert unstated_figures(readme.replace("**3.8 min**", "**3.6 min**"), bench) == [
        "the whole demo corpus (402 pages, 2,237,504 tokens embedded): 3.6"]


def test_docs_benchmarks_is_the_current_figures_not_dated_rounds():
    text = BENCHMARKS.read_text(encoding="utf-8")
    assert not re.findall(r"(?i)this round|the round before|previous round|\b20\d\d-\d\d-\d\d\b", text)
    for heading in re.findall(r"^## (.+)$", text, flags=re.M):  # each measurement says how to reproduce it
        section = text.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
        assert "Reproduce:" in section or "python -m" in section, heading


# ---- the guide names every command and flag ---------------------------------------------------
def undocumented_flags(guide: str) -> list[str]:
    """`dgrag COMMAND --flag` pairs that the guide's "The command line" section does not name."""
    import argparse

    from dgrag.cli.parser import build_parser

    section = guide.split("\n## The command line\n", 1)[-1].split("\n## ", 1)[0]
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    out = []
    for name, parser in sub.choices.items():
        if not re.search(rf"^- `{re.escape(name)}\b", section, flags=re.M):
            out.append(name)
        out += [f"{name} {flag}" for a in parser._actions for flag in a.option_strings
                if flag.startswith("--") and flag != "--help" and not re.search(rf"`[^`]*{flag}\b", section)]
    return out


def test_the_guide_names_every_command_and_flag():
    guide = (DOCS / "guide.md").read_text(encoding="utf-8")
    assert undocumented_flags(guide) == []
    assert "snapshot --float32" in undocumented_flags(guide.replace("--float32", "--f32"))


def unknown_variables(text: str, known: set[str]) -> list[str]:
    """`DGRAG_*` variables a page names that no setting and no code reads."""
    return sorted({v for v in re.findall(r"DGRAG_[A-Z0-9_]*[A-Z0-9]\b", text) if v not in known})


def test_every_variable_the_docs_name_is_read():
    code = "\n".join(p.read_text(encoding="utf-8") for p in [*(ROOT / "dgrag").rglob("*.py"), ROOT / "app.py"])
    known = set(re.findall(r"DGRAG_[A-Z0-9_]+", CONFIG_DOC.read_text(encoding="utf-8") + code))
    for page in LINKED_PAGES:
        assert unknown_variables(page.read_text(encoding="utf-8"), known) == [], page.name
    assert unknown_variables("set `DGRAG_DB_PATH` or `DGRAG_INDEX_FILE`", known) == ["DGRAG_INDEX_FILE"]
