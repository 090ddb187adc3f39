"""Behaviour of the offline OpenIE heuristic on short excerpts of the ArkUI-X docs (en + zh)."""
from __future__ import annotations

import glob
import os
import re
from pathlib import Path

import pytest

from dgrag.enrich import heuristic_openie
from dgrag.enrich.heuristic_openie import MAX_ENTITIES, MAX_NAME_CHARS, MAX_TRIPLES, normalize_entity
from dgrag.enrich.openie_packs import lexicon

# the texts are ArkUI-X's: the OpenHarmony pack gives the behaviour these tests were written for
OPENHARMONY = lexicon(("openharmony",))


def extract(text, crumb, lang, raw=None):
    return heuristic_openie.extract(text, crumb, lang, raw, OPENHARMONY)

# ---- excerpts copied from /work/shared/corpus/arkui-x-docs, as `filter` text (heading first) ----

EN_ARKUI = (
    "ArkUI\n"
    "ArkUI is a declarative UI development framework for building distributed applications. It provides "
    "simple and natural UI syntax, diverse array of UI components, multi-dimensional status management, and "
    "real-time UI preview tools, helping you improve application development efficiency and achieve vivid and "
    "smooth user experience across devices. For details, see ArkUI Overview."
)
EN_ARKUI_CRUMB = "Before You Start / Basic Concepts / ArkUI"

ZH_ARKUI = (
    "ArkUI\n"
    "ArkUI是一套构建分布式应用的声明式UI开发框架。它具备简洁自然的UI信息语法、丰富的UI组件、多维的状态管理，"
    "以及实时界面预览工具，帮助您提升应用开发效率，并能在多种设备上实现生动而流畅的用户体验。详情可参考ArkUI框架介绍"
)
ZH_ARKUI_CRUMB = "开发准备 / 基本概念 / ArkUI"

EN_SYNC = (
    "Rules of Use\n"
    "$$ supports variables of simple types and variables decorated by @State, @Link, or @Prop.\n"
    "$$ supports the components listed below.\n"
    "When the variable bound to $$ changes, the UI is re-rendered synchronously."
)
EN_SYNC_CRUMB = "$$ Syntax: Two-Way Synchronization of Built-in Components / Rules of Use"
EN_SYNC_RAW = (
    "## Rules of Use\n\n"
    "- $$ supports variables of simple types and variables decorated by **\\@State**, **\\@Link**, or **\\@Prop**.\n\n"
    "- $$ supports the components listed below.\n\n"
    "  | Component | Supported Parameter/Attribute| Initial API Version|\n"
    "  | --------- | --------------- | ----------- |\n"
    "  | [Checkbox](../reference/arkui-ts/ts-basic-components-checkbox.md) | select | 10 |\n\n"
    "- When the variable bound to $$ changes, the UI is re-rendered synchronously.\n"
)

ZH_SYNC = (
    "使用规则\n"
    "当前$$支持基础类型变量，以及@State、@Link和@Prop装饰的变量。\n"
    "$$绑定的变量变化时，会触发UI的同步刷新。"
)
ZH_SYNC_CRUMB = "$$语法：内置组件双向同步 / 使用规则"

ZH_API = (
    "abilityAccessCtrl.createAtManager\n"
    "createAtManager(): AtManager\n"
    "访问控制管理：获取访问控制模块对象。\n"
    "支持平台： Android、iOS\n"
    "系统能力： SystemCapability.Security.AccessToken\n"
    "返回值：\n"
    "示例："
)
ZH_API_CRUMB = "@ohos.abilityAccessCtrl (程序访问控制管理) / abilityAccessCtrl.createAtManager"

EN_PLATFORM = (
    "Processing Non-cross-platform APIs\n"
    "Non-cross-platform APIs do not support cross-platform calls. If you use them in your cross-platform "
    "project, the IDE will report an error during compilation. In the following example, the "
    "non-cross-platform wifiManager.isWifiActive() is called to check whether Wi-Fi is enabled.\n"
    "In this case, you can write the involved API to a .ts file and add // @ts-ignore or // @ts-nocheck above "
    "the API to exclude it from linting. Run this logic on the OpenHarmony platform only; use the bridge "
    "mechanism for processing on Android and iOS platforms. The sample code is as follows:"
)
EN_PLATFORM_CRUMB = "Platform Differentiation / Use Cases and Capabilities / Processing Non-cross-platform APIs"

EN_ACE = (
    "Command Line Tool: ACE Tools\n"
    "By default, ACE Tools is released with the ArkUI-X SDK. For details about how to obtain the ArkUI-X SDK, "
    "see ArkUI-X SDK. You are advised to use DevEco Studio to download the ArkUI-X SDK."
)
EN_ACE_CRUMB = "Before You Start / Development Tools / Command Line Tool: ACE Tools"

ZH_CHECK = (
    "环境检查\n"
    "执行 ace check 命令可以检查ArkUI-X应用开发环境依赖配置情况。对于必选项，需要检查通过，否则无法继续接下来的操作。\n"
    "环境配置完成后，即可使用ACE Tools进行跨平台应用开发调试。"
)
ZH_CHECK_CRUMB = "配置开发环境 / 环境检查"
ZH_CHECK_RAW = (
    "## 环境检查\n\n"
    "   执行 `ace check` 命令可以检查ArkUI-X应用开发环境依赖配置情况。对于必选项，需要检查通过，否则无法继续接下来的操作。\n\n"
    "   ```shell\n   ace check\n   ```\n"
    "   环境配置完成后，即可使用[ACE Tools](../quick-start/start-with-ace-tools.md#创建应用)进行跨平台应用开发调试。\n"
)

EN_SM2 = (
    "Signing and Signature Verification\n"
    "The Elliptic Curve Digital Signature Algorithm (ECDSA) is a digital signature algorithm that uses the ECC. "
    "Compared with the ordinary Discrete Logarithm Problem (DLP) and Integer Factorization Problem (IFP), the ECC "
    "provides a higher unit bit strength than other public-key cryptographic systems.\n"
    "SM2\n"
    "SM2 is a digital signature algorithm based on the ECC."
)
EN_SM2_CRUMB = "Crypto Framework Overview / Basic Concepts / Signing and Signature Verification"

ZH_BRIDGE = (
    "Platform Bridge\n"
    "平台桥接(@arkui-x.bridge)用于客户端（ArkUI）和平台（Android或iOS）之间传递消息，主要用于ArkUI与平台双向传递消息、"
    "ArkTS调用平台API、平台调用ArkTS的方法。"
)
ZH_BRIDGE_CRUMB = "术语 / P / Platform Bridge"

ALL = [
    (EN_ARKUI, EN_ARKUI_CRUMB, "en", None), (ZH_ARKUI, ZH_ARKUI_CRUMB, "zh", None),
    (EN_SYNC, EN_SYNC_CRUMB, "en", EN_SYNC_RAW), (ZH_SYNC, ZH_SYNC_CRUMB, "zh", None),
    (ZH_API, ZH_API_CRUMB, "zh", None), (EN_PLATFORM, EN_PLATFORM_CRUMB, "en", None),
    (EN_ACE, EN_ACE_CRUMB, "en", None), (ZH_CHECK, ZH_CHECK_CRUMB, "zh", ZH_CHECK_RAW),
    (EN_SM2, EN_SM2_CRUMB, "en", None), (ZH_BRIDGE, ZH_BRIDGE_CRUMB, "zh", None),
]


def names(ents):
    return [n for n, _ in ents]


def keys(ents):
    return {normalize_entity(n) for n, _ in ents}


# ---- normalisation ------------------------------------------------------------------------

def test_normalize_full_width_case_and_whitespace():
    assert normalize_entity("ＡｒｋＵＩ－Ｘ") == "arkui-x"
    assert normalize_entity("ArkUI-X") == normalize_entity("arkui-x") == "arkui-x"
    assert normalize_entity("  DevEco \t  Studio\n") == "deveco studio"
    assert normalize_entity("ＵＩＡｂｉｌｉｔｙ") == "uiability"


def test_normalize_strips_quotes_backticks_and_punctuation():
    assert normalize_entity("`router.pushUrl()`") == "router.pushurl"
    assert normalize_entity("router.pushUrl") == "router.pushurl"
    assert normalize_entity("「状态管理」") == "状态管理"
    assert normalize_entity("“ArkTS”，") == "arkts"
    assert normalize_entity("**@State**") == "@state"
    assert normalize_entity("(module.json5)") == "module.json5"
    assert normalize_entity("\\@Component") == "@component"


def test_normalize_keeps_cjk_and_meaningful_symbols():
    assert normalize_entity("声明式UI开发框架") == "声明式ui开发框架"
    assert normalize_entity("C++") == "c++"
    assert normalize_entity("$$") == "$$"
    assert normalize_entity("Promise<void>") == "promise<void>"
    assert normalize_entity("") == ""


# ---- candidates ---------------------------------------------------------------------------

@pytest.mark.parametrize("text,crumb,lang,raw", [
    (EN_SYNC, EN_SYNC_CRUMB, "en", EN_SYNC_RAW), (EN_SYNC, EN_SYNC_CRUMB, "en", None),
    (ZH_SYNC, ZH_SYNC_CRUMB, "zh", None),
])
def test_decorators_become_entities(text, crumb, lang, raw):
    ents, triples = extract(text, crumb, lang, raw)
    assert {"@state", "@link", "@prop"} <= keys(ents)
    assert "$$" in keys(ents)
    mentions = "mentions" if lang == "en" else "提及"
    topic = ents[0][0]
    assert (topic, mentions, "@State") in triples


def test_api_names_signature_and_reference_fields_zh():
    ents, triples = extract(ZH_API, ZH_API_CRUMB, "zh")
    k = keys(ents)
    assert {"abilityaccessctrl.createatmanager", "createatmanager", "atmanager",
            "systemcapability.security.accesstoken", "android", "ios"} <= k
    topic = ents[0][0]
    assert topic == "abilityAccessCtrl.createAtManager"
    assert ("createAtManager", "返回", "AtManager") in triples
    assert (topic, "支持平台", "Android") in triples and (topic, "支持平台", "iOS") in triples
    assert (topic, "系统能力", "SystemCapability.Security.AccessToken") in triples
    assert (topic, "属于", "@ohos.abilityAccessCtrl") in triples
    # boilerplate labels are never entities
    assert not k & {"返回值", "示例", "支持平台", "系统能力"}


def test_dotted_api_calls_and_directives_en():
    ents, _ = extract(EN_PLATFORM, EN_PLATFORM_CRUMB, "en")
    k = keys(ents)
    assert {"wifimanager.iswifiactive", "@ts-ignore", "@ts-nocheck", "ide", "openharmony", "android", "ios"} <= k


def test_inline_code_span_command_from_raw_markdown():
    ents, triples = extract(ZH_CHECK, ZH_CHECK_CRUMB, "zh", ZH_CHECK_RAW)
    assert "ace check" in keys(ents)
    assert {"arkui-x", "ace tools"} <= keys(ents)
    # the fenced block of raw_markdown is not prose: no entity from it only
    assert ("环境检查", "提及", "ace check") in triples


def test_command_line_without_backticks():
    text = ("Environment Check\nRun the ace check command to check the dependency configuration of the "
            "ArkUI-X application development environment.")
    ents, _ = extract(text, "Configuring the Development Environment / Environment Check", "en")
    assert "ace check" in keys(ents)


def test_multiword_product_names_and_relation_phrase():
    ents, triples = extract(EN_ACE, EN_ACE_CRUMB, "en")
    assert {"ace tools", "arkui-x sdk", "deveco studio"} <= keys(ents)
    assert ("ACE Tools", "is released with the", "ArkUI-X SDK") in triples


def test_cjk_phrases_next_to_technical_tokens():
    ents, _ = extract(ZH_ARKUI, ZH_ARKUI_CRUMB, "zh")
    k = keys(ents)
    assert "arkui框架" in k and "ui组件" in k
    assert "状态管理" in k


# ---- definitions ----------------------------------------------------------------------------

def test_definitional_triples_en():
    ents, triples = extract(EN_ARKUI, EN_ARKUI_CRUMB, "en")
    assert ("ArkUI", "is a", "declarative UI development framework") in triples
    ents, triples = extract(EN_SM2, EN_SM2_CRUMB, "en")
    topic = ents[0][0]
    assert topic == "Signing and Signature Verification"
    assert ("SM2", "is a", "digital signature algorithm") in triples
    assert ("SM2", "defined in", topic) in triples
    assert ("Discrete Logarithm Problem", "also known as", "DLP") in triples


def test_definitional_triples_zh():
    ents, triples = extract(ZH_ARKUI, ZH_ARKUI_CRUMB, "zh")
    assert ("ArkUI", "是", "声明式UI开发框架") in triples
    ents, triples = extract(ZH_BRIDGE, ZH_BRIDGE_CRUMB, "zh")
    assert ("平台桥接", "定义于", "Platform Bridge") in triples
    assert ("平台桥接", "又称", "@arkui-x.bridge") in triples


def test_label_definition_and_quoted_terms_zh():
    text = "基本概念\n「状态管理」：ArkUI提供的多维的状态管理机制。\n“双向同步”指变量与组件内部状态保持一致。"
    ents, triples = extract(text, "开发准备 / 基本概念", "zh")
    k = keys(ents)
    assert "状态管理" in k and "双向同步" in k
    assert ("开发准备", "提及", "双向同步") in triples
    assert any(h == "状态管理" and r == "定义于" for h, r, _ in triples)


def test_topic_is_the_nearest_specific_heading():
    ents, triples = extract(EN_SYNC, EN_SYNC_CRUMB, "en")
    # "Rules of Use" is generic: the page heading is the topic
    assert ents[0][0].startswith("$$ Syntax")
    ents, _ = extract("getTotalBytes18+\ngetTotalBytes(): number\n获取待下载文件的总长度。",
                      "@ohos.web.webview (Webview) / WebDownloadItem18+ / getTotalBytes18+", "zh")
    assert ents[0][0] == "getTotalBytes"          # the <sup>18+</sup> version mark is dropped
    assert "webdownloaditem" in keys(ents)


def test_alias_from_heading():
    text = "@ohos.buffer (Buffer)\nA Buffer object represents a byte sequence of a fixed length. It is used to store binary data."
    ents, triples = extract(text, "@ohos.buffer (Buffer)", "en")
    assert ents[0][0] == "@ohos.buffer"
    assert ("@ohos.buffer", "also known as", "Buffer") in triples


# ---- descriptions, consistency, junk ---------------------------------------------------------

def test_description_is_the_first_sentence_with_the_entity():
    ents, _ = extract(EN_SYNC, EN_SYNC_CRUMB, "en")
    desc = dict(ents)
    assert desc["@State"] == "$$ supports variables of simple types and variables decorated by @State, @Link, or @Prop."
    ents, _ = extract(EN_PLATFORM, EN_PLATFORM_CRUMB, "en")
    assert dict(ents)["@ts-ignore"].startswith("In this case, you can write the involved API")


def test_long_sentence_description_is_trimmed():
    long = "Overview\n" + "The framework " + "really " * 60 + "relies on UIAbility to run. Next sentence."
    ents, _ = extract(long, "Guide / Overview", "en")
    d = dict(ents)["UIAbility"]
    assert len(d) <= 165 and "UIAbility" in d


@pytest.mark.parametrize("text,crumb,lang,raw", ALL)
def test_output_is_consistent(text, crumb, lang, raw):
    ents, triples = extract(text, crumb, lang, raw)
    assert ents and triples
    ks = [normalize_entity(n) for n, _ in ents]
    assert len(ks) == len(set(ks)), "entities are deduplicated by their key"
    names_ = set(names(ents))
    for h, r, t in triples:
        assert h in names_ and t in names_, (h, r, t)
        assert normalize_entity(h) != normalize_entity(t)
        assert r.strip() == r and r
    assert len({(normalize_entity(h), r.casefold(), normalize_entity(t)) for h, r, t in triples}) == len(triples)
    for n, d in ents:
        k = normalize_entity(n)
        assert len(k) >= 2
        assert not re.fullmatch(r"[\d.\s+]+", k), n
        assert not (len(k) == 1 and re.match(r"[\u4e00-\u9fff]", k))
        assert d and len(d) <= 165


@pytest.mark.parametrize("text,crumb,lang,raw", ALL)
def test_no_stop_words_or_generic_labels(text, crumb, lang, raw):
    ents, _ = extract(text, crumb, lang, raw)
    bad = {"the", "this", "it", "example", "note", "parameters", "示例", "说明", "参数", "返回值", "我们", "可以", "的"}
    assert not keys(ents) & bad
    for n, _ in ents[1:]:               # the topic may be a long heading
        if " " in n or re.search(r"[\u4e00-\u9fff]", n):
            assert len(normalize_entity(n)) <= MAX_NAME_CHARS, n


def test_language_sets_relation_labels():
    _, en = extract(EN_ACE, EN_ACE_CRUMB, "en")
    _, zh = extract(EN_ACE, EN_ACE_CRUMB, "zh")
    assert any(r == "mentions" for _, r, _ in en) and not any(r == "提及" for _, r, _ in en)
    assert any(r == "提及" for _, r, _ in zh) and any(r == "属于" for _, r, _ in zh)


# ---- caps and determinism ---------------------------------------------------------------------

def _big_chunk() -> str:
    sents = [f"The Widget{i}Manager class calls fetchItem{i}() before rendering." for i in range(40)]
    sents += ["Decorate the field with @State, @Link or @Prop.", "Plain Words Appear Here Often."]
    return "Overview\n" + " ".join(sents)


def test_caps_prefer_specific_entities():
    ents, triples = extract(_big_chunk(), "Big Guide / Overview", "en")
    assert len(ents) == MAX_ENTITIES
    assert len(triples) <= MAX_TRIPLES
    assert ents[0][0] == "Big Guide"                    # the topic is always kept, first
    k = keys(ents)
    assert {"@state", "@link", "@prop"} <= k             # decorators outrank CamelCase words
    assert "fetchitem0" in k                              # API calls outrank CamelCase words
    assert not {"plain", "words", "plain words appear here often"} & k


def test_entities_ordered_topic_first_then_by_appearance():
    ents, _ = extract(EN_ACE, EN_ACE_CRUMB, "en")
    body = EN_ACE.split("\n", 1)[1]
    rest = [n for n in names(ents)[1:] if n in body]
    assert rest == sorted(rest, key=body.find)


@pytest.mark.parametrize("text,crumb,lang,raw", ALL + [(_big_chunk(), "Big Guide / Overview", "en", None)])
def test_deterministic(text, crumb, lang, raw):
    first = extract(text, crumb, lang, raw)
    for _ in range(3):
        assert extract(text, crumb, lang, raw) == first


def test_empty_and_heading_only_input():
    assert extract("", "", "en") == ([], [])
    ents, triples = extract("ArkUI-X", "ArkUI-X", "en")
    assert names(ents) == ["ArkUI-X"] and triples == []


# ---- coverage on a slice of the real corpus (skipped when the corpus is not mounted) ------------

CORPUS = str(Path(__file__).resolve().parent.parent / "data" / "arkui-x-docs")  # shipped with the repo


def _sections(path: str):
    """Crude heading split of one page into (breadcrumb, filter-like text, prose length)."""
    stack, out, fence = [], [], False
    title, paras, buf = os.path.basename(path), [], []

    def clean(s):
        s = re.sub(r"!\[[^\]]*\]\([^)]*\)", "", s)
        s = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", s)
        s = re.sub(r"<[^>]+>", "", s)
        return s.replace("**", "").replace("`", "").replace("\\@", "@").strip()

    def flush():
        if buf:
            paras.append(" ".join(buf))
            buf.clear()

    def emit():
        flush()
        crumb = " / ".join(t for _, t in stack) or title
        body = "\n".join(paras)
        out.append((crumb, "\n".join([stack[-1][1]] + paras) if stack else body, len(body)))

    for ln in open(path, encoding="utf-8").read().splitlines():
        st = ln.strip()
        if st.startswith(("```", "~~~")):
            flush()
            fence = not fence
            continue
        if fence:
            continue
        m = re.match(r"^(#{1,6})\s+(.*)$", st)
        if m:
            emit()
            paras.clear()
            while stack and stack[-1][0] >= len(m.group(1)):
                stack.pop()
            stack.append((len(m.group(1)), clean(m.group(2))))
            continue
        if not st or st.startswith("|"):
            flush()
            continue
        st = re.sub(r"^(>\s*)+|^(?:[-*+]|\d+[.)])\s+", "", st)
        if clean(st):
            buf.append(clean(st))
    emit()
    return out


@pytest.mark.skipif(not os.path.isdir(CORPUS), reason="data/arkui-x-docs is not present")
@pytest.mark.parametrize("lang_dir,lang", [("en", "en"), ("zh-cn", "zh")])
def test_coverage_on_quick_start_pages(lang_dir, lang):
    files = sorted(glob.glob(f"{CORPUS}/{lang_dir}/application-dev/quick-start/*.md"))
    n = ok = 0
    for f in files:
        for crumb, text, prose in _sections(f):
            if prose < 40:
                continue
            ents, triples = extract(text, crumb, lang)
            n += 1
            ok += bool(ents) and bool(triples)
    assert n > 50
    assert ok / n >= 0.8, f"{ok}/{n}"


def test_the_pipeline_steps_leave_their_inputs_alone():
    """The definition reader returns what it found and leaves the caller's mentions as they were;
    a field value may still be a mention found before it ("System capability: SystemCapability.X")."""
    from dgrag.enrich.heuristic_openie import REL_EN, STEPS, collect_mentions, new_state, read_signatures
    from dgrag.enrich.openie_definitions import read_definitions

    text = "getTotalBytes\nSystem capability: SystemCapability.Web.Core"
    st = new_state(text, "Request / getTotalBytes", "en", None, OPENHARMONY)
    read_signatures(st)
    collect_mentions(st)
    before = list(st.mentions)
    found = read_definitions(OPENHARMONY, st.text, st.topic, REL_EN, tuple(st.mentions), st.sents, st.body_start, st.sig_spans)
    assert st.mentions == before
    # once as the mention found before, once as the listed part of the value (deduplicated at the end)
    assert [(t[2], t[3], t[4]) for t in found.triples] == [
        ("getTotalBytes", "System capability", "SystemCapability.Web.Core")] * 2
    assert [s.__name__ for s in STEPS][:3] == ["read_signatures", "mask_boilerplate", "collect_mentions"]
