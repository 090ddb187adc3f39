"""Write docs/configuration.md from dgrag/config/: every setting and retrieval parameter, with
its environment variable, type, default and description.

    python scripts/config_doc.py           # (re)write docs/configuration.md
    python scripts/config_doc.py --check   # exit 1 if the file differs from the code, or a field has no description

Names, types and defaults come from the dataclasses themselves (`Settings`, `RetrievalConfig`), so
they cannot drift from the code; bounds come from the config package's own limits. Descriptions are
the config package's comments, as its readers see them: the comment lines directly above a field and the
comment at the end of its line (or a field's `metadata={"doc": ...}`). A comment line starting
`## ` opens a section of the page; a new field joins the section it is written in. A section
written `## name: what it holds` (RetrievalConfig's stage groups: recall, rerank, walk, rank,
ppr, final) is headed by its name, with what it holds as the line below.
"""
from __future__ import annotations

import argparse
import ast
import dataclasses
import difflib
import inspect
import io
import re
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from dgrag import config  # noqa: E402

OUT = ROOT / "docs" / "configuration.md"
# Variables other than DGRAG_* that from_env reads for a field (tests/test_docs.py checks each
# one by setting it, so a name listed here that the code stops reading fails there)
ALSO_READ = {"llm_api_key": ("OPENAI_API_KEY",), "server_host": ("GRADIO_SERVER_NAME",),
             "server_port": ("GRADIO_SERVER_PORT", "PORT")}


@dataclass
class Row:
    name: str
    section: str
    env: tuple[str, ...]
    type: str
    default: Any
    default_source: str  # the default as the config package writes it, when that is not a plain literal
    description: str
    bounds: str = ""


def _comments(source: str) -> dict[int, str]:
    """Line number -> the text of the comment on that line (without '#')."""
    out = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            out[tok.start[0]] = tok.string[1:].strip()
    return out


def _fields_in_source(source: str, class_name: str) -> list[tuple[str, str, str, str]]:
    """(name, section, description, default source) of each field of a class, in order."""
    lines = source.splitlines()
    comments = _comments(source)
    cls = next(n for n in ast.parse(source).body if isinstance(n, ast.ClassDef) and n.name == class_name)
    section, out = "", []
    previous_end = cls.body[0].end_lineno if isinstance(cls.body[0], ast.Expr) else cls.lineno
    for node in cls.body:
        if not isinstance(node, ast.AnnAssign):
            previous_end = node.end_lineno
            continue
        above = []
        for n in range(previous_end + 1, node.lineno):  # the comment lines between two fields
            text = lines[n - 1].strip()
            if text.startswith("## "):
                section, above = text[3:].strip(), []
            elif text.startswith("#"):
                above.append(comments.get(n, ""))
            else:  # a blank line ends a comment's hold on the field below it
                above = []
        trailing = [comments[n] for n in range(node.lineno, node.end_lineno + 1) if n in comments]
        literal = node.value is None or isinstance(node.value, ast.Constant) or (  # field(...) shows its value
            isinstance(node.value, ast.Call) and getattr(node.value.func, "id", "") == "field")
        default_source = "" if literal else ast.get_source_segment(source, node.value) or ""
        out.append((node.target.id, section, " ".join(above + trailing).strip(), default_source))
        previous_end = node.end_lineno
    return out


def _choices(f: dataclasses.Field, description: str) -> str:
    """The words of a text parameter's description that `RetrievalConfig.merged` accepts as its
    value: asked of the code, so a choice the comment names but the code refuses is left out."""
    accepted = []
    for word in dict.fromkeys([str(f.default)] + re.findall(r"[a-z][a-z0-9-]*", description)):
        try:
            config.RetrievalConfig().merged({f.name: word})
        except config.ConfigError:
            continue
        accepted.append(f"`{word}`")
    return ", ".join(accepted)


def _bounds(f: dataclasses.Field, description: str) -> str:
    """What `RetrievalConfig.merged` accepts: a text parameter's choices, a number's range."""
    if f.type == "str":
        return _choices(f, description)
    if f.type == "bool":
        return "`true`, `false`"
    if f.name == "ppr_push_eps":
        return f"≥ {config.MIN_PPR_PUSH_EPS:g}"
    if f.name == "ppr_damping":
        return "0 ≤ x < 1"
    top = config.upper_bound(f.name)
    return f"0 … {top:g}" if top is not None else "≥ 0"


def rows(cls: type, prefix: str, source: str | None = None) -> list[Row]:
    if source is None or f"class {cls.__name__}" not in source:  # each class from its own module's file
        source = Path(inspect.getsourcefile(cls)).read_text(encoding="utf-8")
    found = {name: rest for name, *rest in _fields_in_source(source, cls.__name__)}
    out = []
    for f in dataclasses.fields(cls):
        if f.name == "retrieval":  # the nested RetrievalConfig: its own table
            continue
        section, description, default_source = found[f.name]
        description = " ".join(filter(None, [f.metadata.get("doc", ""), description]))  # field(metadata={"doc": ...})
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        out.append(Row(f.name, section, (prefix + f.name.upper(),) + ALSO_READ.get(f.name, ()), str(f.type),
                       default, default_source, description,
                       _bounds(f, description) if cls is config.RetrievalConfig else ""))
    return out


def undocumented(source: str | None = None) -> list[str]:
    """Fields whose description is empty: each needs a comment in dgrag/config/."""
    return [r.name for cls, prefix in ((config.Settings, "DGRAG_"), (config.RetrievalConfig, "DGRAG_RETRIEVAL_"))
            for r in rows(cls, prefix, source) if not r.description]


def render_default(value: Any, source: str = "") -> str:
    if value is None:
        text = "unset"
    elif isinstance(value, bool):
        text = "`true`" if value else "`false`"
    elif isinstance(value, Path):
        try:
            text = f"`{value.relative_to(config.PROJECT_ROOT).as_posix()}`"
        except ValueError:
            text = f"`{value}`"
        return text  # a path is shown where it lands, not as the expression that builds it
    elif value == "":
        text = '`""`'
    else:
        text = f"`{value}`"
    return f"{text} (`{source}`)" if source else text


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _table(items: list[Row], with_bounds: bool) -> list[str]:
    head = "| name | environment variable | type | default |" + (" accepted |" if with_bounds else "") + " description |"
    out = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in items:
        env = ", ".join(f"`{e}`" for e in r.env)
        cells = [f"`{r.name}`", env, f"`{r.type}`", render_default(r.default, r.default_source)]
        if with_bounds:
            cells.append(r.bounds)
        cells.append(r.description)
        out.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return out


GROUP = re.compile(r"([a-z]+): (.+)")  # `## rank: the chunk ranking ...`: a group's name, what it holds


def groups(items: list[Row]) -> list[str]:
    """The sections of `items` in their order of appearance."""
    return list(dict.fromkeys(r.section for r in items))


def _sections(items: list[Row], with_bounds: bool) -> list[str]:
    out: list[str] = []
    for section in groups(items):
        group = GROUP.fullmatch(section)
        head = [f"### {group[1]}", "", group[2][0].upper() + group[2][1:] + "."] if group else [f"### {section or 'Other'}"]
        out += ["", *head, ""] + _table([r for r in items if r.section == section], with_bounds)
    return out


INTRO = """# Configuration

<!-- Generated by `python scripts/config_doc.py` from dgrag/config/ (__init__.py, retrieval.py); do not edit by hand.
     tests/test_docs.py and `python scripts/config_doc.py --check` fail when it drifts. -->

Generated from `dgrag/config/` (`python scripts/config_doc.py`): the names, types and defaults
are the code's own, the descriptions are its comments.

**How a setting is read.** One `Settings` object holds the configuration. Each value is its
default, unless the environment sets `DGRAG_<NAME>`, unless a command-line flag sets it (every
`dgrag` flag names its variable in `dgrag COMMAND --help`). Booleans read `1`/`true`/`yes`/`on`
and `0`/`false`/`no`/`off`. A value that cannot be read as its type is a one-line error (exit
status 2). Whether an LLM is configured is decided in one place, `Settings.llm_configured`: a
base URL and a model.

**Retrieval parameters** (`RetrievalConfig`, `settings.retrieval`) are set with
`DGRAG_RETRIEVAL_<NAME>`, with `dgrag query / chat / eval --config JSON`, or per request with
`retrieval_config` in a REST body (see [api.md](api.md)). A request may not send more keys than
there are parameters, and each value must lie in the range in the "accepted" column (else 422
naming the parameter).
"""
RENAMED_NOTE = """
They are grouped by the stage that reads them, in the order a question passes through: `recall`
(stage 1), `rerank` (stage 2), `walk` (stage 3: the method and the diffusion), `rank` (the chunk
ranking), `ppr` (HippoRAG 2's walk) and `final` (stage 4).

**Former names** (deprecated, still accepted in a request, `--config` and `DGRAG_RETRIEVAL_*`):
the stage-3 method is called the diffusion everywhere, so its parameters, once `spread_*`, are
`diffusion_*`, `spread_trust_walk_k` is `diffusion_trust_k`, and the ranking weight `rank_w_walk`
is `rank_w_diffusion`; `rank_ppr_trust` is `rank_ppr_agreement`. A request that gives one
parameter under both names is refused.

**Removed** with the trust rule, the chunk ranking before the weighted one: `rank_mode`,
`diffusion_evidence_weight`, `diffusion_graph_fusion`, `diffusion_fusion_k`,
`diffusion_trust_floor` and `diffusion_trust_full`. An old config naming one is still read when
it gives the value the default used (`rank_mode` `evidence`, the others their former defaults
0.5, 2, 5, 0.34 and 0.66), with which the results are today's; any other value is refused with
the reason. The rule that gives PPR places in the ranking is one share, `rank_ppr_agreement`.
"""


def render() -> str:
    lines = [INTRO.rstrip("\n"), "", "## Settings"]
    lines += _sections(rows(config.Settings, "DGRAG_"), with_bounds=False)
    lines += ["", "## Retrieval parameters", RENAMED_NOTE.rstrip("\n")]
    lines += _sections(rows(config.RetrievalConfig, "DGRAG_RETRIEVAL_"), with_bounds=True)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="fail if docs/configuration.md differs from the code")
    args = ap.parse_args(argv)
    missing = undocumented()
    if missing:
        print("no description (add a comment above or beside the field in dgrag/config/): "
              + ", ".join(missing), file=sys.stderr)
        return 1
    text = render()
    if args.check:
        current = OUT.read_text(encoding="utf-8") if OUT.exists() else ""
        if current != text:
            sys.stderr.writelines(difflib.unified_diff(current.splitlines(True), text.splitlines(True),
                                                       str(OUT), "generated"))
            print(f"{OUT} is out of date: run python scripts/config_doc.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
