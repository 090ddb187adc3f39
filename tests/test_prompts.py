"""The prompt data files: present in both languages, render with their placeholders, valid JSON examples."""
from __future__ import annotations

import json
import re
import string

import pytest

from dgrag.prompts import available_prompts, load_prompt, placeholders, render

EXPECTED = {
    "summary": {"kind", "breadcrumb", "text"},
    "caption": {"breadcrumb", "alt", "context"},
    "openie": {"breadcrumb", "text"},
    "answer": set(),
    "rewrite": {"history", "question"},
    "final_rerank": {"question", "candidates"},
}
LANGS = ("en", "zh")
CASES = [(n, lang) for n in EXPECTED for lang in LANGS]


def _fields(name: str) -> dict[str, str]:
    # values with braces must survive untouched: str.format does not re-read them
    return {f: f"<{f} value {{not a placeholder}}>" for f in EXPECTED[name]}


def test_every_prompt_ships_in_both_languages():
    have = set(available_prompts())
    assert {f"{n}_{lang}" for n, lang in CASES} <= have


@pytest.mark.parametrize("name,lang", CASES)
def test_placeholders_are_exactly_the_documented_ones(name, lang):
    assert placeholders(name, lang) == EXPECTED[name]
    # only plain named fields: no positional {} / {0}, no attribute or index access
    for _, field, spec, conv in string.Formatter().parse(load_prompt(name, lang)):
        if field is not None:
            assert re.fullmatch(r"[a-z_]+", field), field
            assert not spec and not conv


@pytest.mark.parametrize("name,lang", CASES)
def test_renders_with_its_placeholders(name, lang):
    fields = _fields(name)
    out = render(name, lang, **fields)
    for value in fields.values():
        assert value in out
    assert "{{" not in out and "}}" not in out
    # unknown extra fields are ignored
    assert render(name, lang, unused="x", **fields) == out


@pytest.mark.parametrize("name,lang", [c for c in CASES if EXPECTED[c[0]]])
def test_missing_field_is_a_clear_error(name, lang):
    with pytest.raises(KeyError, match=sorted(EXPECTED[name])[0]):
        render(name, lang)


def test_language_selection():
    assert load_prompt("summary", "zh") != load_prompt("summary", "en")
    assert load_prompt("summary", "zh-cn") == load_prompt("summary", "zh")
    assert load_prompt("summary", "en") == load_prompt("summary", "fr") == load_prompt("summary", "")
    assert re.search(r"[\u4e00-\u9fff]", load_prompt("answer", "zh"))
    assert not re.search(r"[\u4e00-\u9fff]", load_prompt("answer", "en"))


def test_unknown_prompt_raises_file_not_found():
    with pytest.raises(FileNotFoundError, match="nosuchprompt_en"):
        load_prompt("nosuchprompt", "en")
    with pytest.raises(FileNotFoundError):
        load_prompt("../pyproject", "en")


def _json_objects(text: str) -> list[object]:
    """Every top-level {...} in the text that parses as JSON."""
    dec, out, i = json.JSONDecoder(), [], 0
    while (i := text.find("{", i)) >= 0:
        try:
            obj, end = dec.raw_decode(text, i)
        except json.JSONDecodeError:
            i += 1
            continue
        out.append(obj)
        i = end
    return out


@pytest.mark.parametrize("lang", LANGS)
def test_openie_worked_example_is_valid_json(lang):
    out = render("openie", lang, breadcrumb="A / B", text="ArkUI-X extends ArkUI.")
    objs = [o for o in _json_objects(out) if isinstance(o, dict) and "entities" in o]
    examples = [o for o in objs if o["entities"]]
    assert examples, "a worked example with entities"
    ex = examples[0]
    assert set(ex) == {"entities", "triples"}
    names = set()
    for ent in ex["entities"]:
        assert isinstance(ent, list) and len(ent) == 2 and all(isinstance(x, str) and x for x in ent)
        names.add(ent[0])
    assert {"@State", "@Link", "@Prop"} <= names        # the ArkUI example teaches decorators
    assert ex["triples"]
    for tr in ex["triples"]:
        assert isinstance(tr, list) and len(tr) == 3
        assert tr[0] in names and tr[2] in names
    # the empty answer shown in the rules parses too
    assert {"entities": [], "triples": []} in objs


@pytest.mark.parametrize("lang", LANGS)
def test_final_rerank_example_is_valid_json(lang):
    out = render("final_rerank", lang, question="q", candidates="[0] a\n[1] b")
    rankings = [o for o in _json_objects(out) if isinstance(o, dict) and "ranking" in o]
    assert rankings and all(isinstance(i, int) for i in rankings[0]["ranking"])


@pytest.mark.parametrize("lang", LANGS)
def test_answer_prompt_asks_for_citations_and_markdown(lang):
    p = load_prompt("answer", lang)
    assert "[1]" in p
    assert "URL" in p
    assert "Markdown" in p
