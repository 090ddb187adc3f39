"""The API card read from real reference sections (ArkUI-X in English and Chinese, its native and
Android pages, Redux's list-style arguments), the follow-up to the reference of an API an answer
names, and their Markdown; no node id in either."""
from __future__ import annotations

import json
import re
import shutil

import pytest
from conftest import CORPUS

from dgrag.answer import api_card
from dgrag.answer.components import api_markdown, followups
from dgrag.config import Settings
from dgrag.core import Reference
from dgrag.store import Store

pytestmark = pytest.mark.skipif(not CORPUS.is_dir(), reason="data/arkui-x-docs is not present")
PREFS = "application-dev/reference/apis/js-apis-data-preferences.md"
NODE_ID = re.compile(r"(chunk|code|table|image|file|entity)-[0-9a-f]{16}")


def section(path: str, heading: str, nth: int = 0) -> tuple[str, str]:
    """(a section's Markdown as the chunker cuts it: its heading to the next of its level or
    higher, the page's opening), from the shipped ArkUI-X corpus."""
    lines = (CORPUS / path).read_text(encoding="utf-8").splitlines()
    starts = [i for i, line in enumerate(lines) if line.strip() == heading]
    i = starts[nth]
    level = len(heading) - len(heading.lstrip("#"))
    end = next((k for k in range(i + 1, len(lines)) if re.match(rf"#{{1,{level}}}\s", lines[k])), len(lines))
    return "\n".join(lines[i:end]), "\n".join(lines[:20])


def card(path: str, heading: str, nth: int = 0) -> dict | None:
    text, intro = section(path, heading, nth)
    return api_card.parse(text, api_card.module_since(intro))


def test_a_function_with_parameters_error_codes_and_its_version_in_english():
    assert card("en/" + PREFS, "## data_preferences.getPreferences<sup>10+</sup>") == {
        "name": "data_preferences.getPreferences",
        "signature": "getPreferences(context: Context, options: Options, callback: AsyncCallback<Preferences>): void",
        "params": [
            {"name": "context", "type": "Context", "required": True,
             "description": "Application context. For details about the application context of the stage model, "
                            "see Context."},
            {"name": "options", "type": "Options", "required": True,
             "description": "Configuration options of the Preferences instance."},
            {"name": "callback", "type": "AsyncCallback<Preferences>", "required": True,
             "description": "Callback invoked to return the result. If the operation is successful, err is undefined "
                            "and the Preferences instance obtained is returned. Otherwise, err is an error object."}],
        "returns": "", "errors": [{"code": "15501001", "message": "Only supported in stage mode."},
                                  {"code": "15501002", "message": "The data group id is not valid."}],
        "since": "10"}


def test_the_same_in_chinese_with_its_return_value():
    got = card("zh-cn/" + PREFS, "## data_preferences.getPreferencesSync<sup>10+</sup>")
    assert got == {
        "name": "data_preferences.getPreferencesSync",
        "signature": "getPreferencesSync(context: Context, options: Options): Preferences",
        "params": [{"name": "context", "type": "Context", "required": True,
                    "description": "应用上下文。 Stage模型的应用Context定义见Context。"},
                   {"name": "options", "type": "Options", "required": True,
                    "description": "与Preferences实例相关的配置选项。"}],
        "returns": "Preferences: 返回Preferences实例。",
        "errors": [{"code": "15501001", "message": "Only supported in stage mode."},
                   {"code": "15501002", "message": "The data group id is not valid."}],
        "since": "10"}


def test_without_a_superscript_the_module_gives_the_version():
    en = card("en/" + PREFS, "## data_preferences.getPreferences", nth=1)  # the promise form
    assert en["returns"] == "Promise<Preferences>: Promise used to return the Preferences instance obtained."
    assert en["since"] == "9" and en["errors"] == [] and [p["name"] for p in en["params"]] == ["context", "name"]
    zh = card("zh-cn/" + PREFS, "## data_preferences.getPreferences", nth=1)
    assert zh["returns"] == "Promise<Preferences>: Promise对象，返回Preferences实例。" and zh["since"] == "9"


def test_native_android_and_component_pages():
    native = card("en/application-dev/reference/native-apis/_plugin_utils.md", "### ARKUI_X_Plugin_RunAsyncTask()")
    assert native == {"name": "ARKUI_X_Plugin_RunAsyncTask",
                      "signature": "void ARKUI_X_Plugin_RunAsyncTask(ARKUI_X_Plugin_Task task, "
                                   "ARKUI_X_Plugin_Thread_Mode mode);",
                      "params": [{"name": "task", "type": "", "required": None, "description": "Task to be dispatched."},
                                 {"name": "mode", "type": "", "required": None, "description": "Thread type."}],
                      "returns": "No return value.", "errors": [], "since": "10"}
    zh = card("zh-cn/application-dev/reference/native-apis/_plugin_utils.md", "### ARKUI_X_Plugin_RunAsyncTask()")
    assert zh["returns"] == "无返回值。" and zh["since"] == "10" and zh["params"][1]["description"] == "表示指定的线程类型。"
    java = card("en/application-dev/reference/arkui-for-android/BridgePlugin.md", "### onMessage")
    assert java["signature"] == "Object onMessage(Object data);" and java["returns"] == \
        "Object: Response message from the platform to the ArkUI side."
    assert java["params"] == [{"name": "data", "type": "Object", "required": True,
                               "description": "Message sent from the ArkUI side."}]
    picker = card("zh-cn/application-dev/reference/arkui-ts/ts-basic-components-datepicker.md", "## 接口")
    assert picker["name"] == "DatePicker" and picker["since"] == "8"  # "该组件从API Version 8开始支持"
    assert picker["signature"] == "DatePicker(options?: {start?: Date, end?: Date, selected?: Date})"
    assert picker["params"][0] == {"name": "start", "type": "Date", "required": False,
                                   "description": "指定选择器的起始日期。 默认值：Date('1970-1-1')"}


def test_an_interface_reads_its_fields_and_a_topic_is_no_api():
    touch = card("zh-cn/application-dev/reference/arkui-ts/ts-universal-events-touch.md", "## TouchEvent对象说明")
    assert touch["name"] == "TouchEvent" and touch["since"] == "7"
    assert touch["params"][1] == {"name": "touches", "type": "Array<TouchObject>", "required": None,
                                  "description": "全部手指信息。"}
    assert card("en/" + PREFS, "## Options<sup>10+</sup>")["params"][0]["name"] == "name"
    assert card("en/" + PREFS, "## Constants") is None  # a table under a topic's title
    assert card("en/" + PREFS, "## Modules to Import") is None
    assert card("en/application-dev/reference/errorcodes/errorcode-preferences.md",
                "## 15501002 The dataGroupId parameter in Options is invalid.") is None
    assert card("en/application-dev/quick-start/start-with-ace-tools.md", "## How to Use") is None


def test_list_style_arguments_and_a_heading_that_is_the_call():
    text = ("# `createStore(reducer, preloadedState?, enhancer?)`\n\nCreates a Redux store.\n\n## Arguments\n\n"
            "1. `reducer` _(Function)_: A root reducer function.\n\n"
            "2. [`preloadedState`] _(any)_: The initial state.\n\n#### Returns\n\n"
            "([_`Store`_](Store.md)): An object that holds the complete state of your app.\n")
    assert api_card.parse(text) == {
        "name": "createStore", "signature": "createStore(reducer, preloadedState?, enhancer?)",
        "params": [{"name": "reducer", "type": "Function", "required": None, "description": "A root reducer function."},
                   {"name": "preloadedState", "type": "any", "required": False, "description": "The initial state."}],
        "returns": "(Store): An object that holds the complete state of your app.", "errors": [], "since": ""}


def test_a_signature_loses_markdowns_escapes():
    text = ("### fling<sup>9+</sup>\n\nfling(from: Point, to: Point, stepLen: number, speed: number): Promise\\<void>\n\n"
            "**Parameters**\n\n| Name | Type | Mandatory | Description |\n| --- | --- | --- | --- |\n"
            "| from | Point | Yes | Coordinates of the start point. |\n")  # ArkUI-X's js-apis-uitest.md
    got = api_card.parse(text)
    assert got["signature"] == "fling(from: Point, to: Point, stepLen: number, speed: number): Promise<void>"
    assert got["name"] == "fling" and got["since"] == "9" and got["params"][0]["required"] is True


def test_the_names_an_answer_mentions():
    text = ("Call **getPreferences** with `data_preferences.Options`, e.g. the **Preferences** instance; "
            "see https://x.org/a.md and IMessageListener.onMessageResponse. flush() then ```ts\nskipMe()\n```")
    assert api_card.identifiers(text) == ["getPreferences", "data_preferences.Options", "Preferences",
                                          "IMessageListener.onMessageResponse", "flush"]


def test_the_card_in_markdown_in_both_languages():
    c = {"type": "api", **card("zh-cn/" + PREFS, "## data_preferences.getPreferencesSync<sup>10+</sup>"), "n": 2,
         "title": "@ohos.data.preferences (用户首选项)", "section": "… › getPreferencesSync", "url": "https://x.org/p#L237"}
    zh = api_markdown(c, "zh")
    assert zh.startswith("**`data_preferences.getPreferencesSync`** · 起始版本 10\n\n```\ngetPreferencesSync(")
    assert "| 参数 | 类型 | 必填 | 说明 |" in zh and "| options | Options | 是 | 与Preferences实例相关的配置选项。 |" in zh
    assert "**返回值**: Preferences: 返回Preferences实例。" in zh and "| 15501002 | The data group id is not valid. |" in zh
    assert zh.endswith("[2] [… › getPreferencesSync](https://x.org/p#L237)")
    en = api_markdown({**c, "params": [{"name": "a", "type": "string | number", "required": None,
                                        "description": ""}]}, "en")
    assert "| Parameter | Type | Description |" in en and "| a | string \\| number |  |" in en  # none says "required"
    assert "· Since 10" in en and "**Returns**" in en and "| Error code | Message |" in en


@pytest.fixture(scope="module")
def prefs_store(tmp_path_factory, hash_embedder):
    """The preferences reference in both languages and a guide, indexed (hash embedder)."""
    from dgrag.ingest.pipeline import index_folder

    root = tmp_path_factory.mktemp("api-card")
    for lang in ("en", "zh-cn"):
        for page in (PREFS, "application-dev/quick-start/start-with-ace-tools.md"):
            (root / "docs" / lang / page).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(CORPUS / lang / page, root / "docs" / lang / page)
    s = Settings(db_path=root / "index.db", docs_root=root / "docs", embedder="hash",
                 url_template="https://github.com/arkui-x/docs/blob/master/{path}#L{line}")
    with Store(s.db_path) as st:
        index_folder(s, st, hash_embedder)
    with Store(s.db_path, readonly=True) as st:
        yield st


def _ref(st, path: str, ending: str, kind: str = "chunk", nth: int = 0) -> Reference:
    rows = [r for r in st.nodes.page_sections(path) if r[1].endswith(ending)]
    node = st.nodes.by_id(rows[nth][0])
    if kind != "chunk":
        node = next(c for c in st.nodes.contained(node["id"]) if c["type"] == kind)
    return Reference(id=node["id"], type=node["type"], score=1.0, breadcrumb=node["breadcrumb"],
                     source_url=node["source_url"], source_path=node["source_path"], text=node["text"],
                     language=node["language"])


def test_a_table_of_a_section_leads_to_its_card_through_the_store(prefs_store):
    table = _ref(prefs_store, "zh-cn/" + PREFS, "getPreferencesSync10+", kind="table")
    found, sid = api_card.pick(prefs_store, [(3, table)], cited=[3])
    assert found["name"] == "data_preferences.getPreferencesSync" and found["n"] == 3 and found["since"] == "10"
    assert found["url"] == "https://github.com/arkui-x/docs/blob/master/zh-cn/" + PREFS + "#L237"
    assert found["section"] == "@ohos.data.preferences (用户首选项) › data_preferences.getPreferencesSync10+"
    assert sid.startswith("chunk-") and not NODE_ID.search(json.dumps(found, ensure_ascii=False))
    guide = _ref(prefs_store, "en/application-dev/quick-start/start-with-ace-tools.md", "How to Use")
    assert api_card.pick(prefs_store, [(1, guide)], cited=[1]) is None


def test_an_api_the_answer_names_becomes_a_follow_up_in_the_askers_language(prefs_store):
    got = api_card.named_apis(prefs_store, "先调用 **getPreferencesSync**，再看 `deletePreferences`。", "zh", set())
    assert [(g["why"], g["query"], g["section"]) for g in got] == [
        ("api_reference", "getPreferencesSync", "@ohos.data.preferences (用户首选项) › data_preferences.getPreferencesSync10+"),
        ("api_reference", "deletePreferences", "@ohos.data.preferences (用户首选项) › data_preferences.deletePreferences")]
    assert api_card.named_apis(prefs_store, "Nothing named here.", "en", set()) == []


def test_after_a_reference_section_its_apis_lead_after_a_guide_its_next_step(prefs_store):
    ref = _ref(prefs_store, "en/" + PREFS, "data_preferences.getPreferences10+")
    items = followups(prefs_store, [(1, ref)], [1], "Then call **removePreferencesFromCache**.", "en")
    assert [i["why"] for i in items] == ["api_reference", "other_language", "next"]
    assert items[0]["section"].endswith("data_preferences.removePreferencesFromCache")
    guide = _ref(prefs_store, "en/application-dev/quick-start/start-with-ace-tools.md", "How to Use")
    items = followups(prefs_store, [(1, guide)], [1], "Then call **removePreferencesFromCache**.", "en")
    assert [i["why"] for i in items] == ["next", "api_reference", "other_language"]
    assert not NODE_ID.search(json.dumps(items, ensure_ascii=False))


def test_a_follow_up_never_repeats_the_api_cards_section(prefs_store):
    lead = _ref(prefs_store, "en/" + PREFS, "data_preferences.getPreferences10+")
    after = _ref(prefs_store, "en/" + PREFS, "data_preferences.getPreferences10+", nth=1)  # the next section
    assert "next" in [i["why"] for i in followups(prefs_store, [(1, lead)], [1], "", "en")]
    items = followups(prefs_store, [(1, lead)], [1], "", "en", shown={after.id})
    assert "next" not in [i["why"] for i in items] and items  # the card shows it already
