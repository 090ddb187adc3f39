import re

from dgrag.core import estimate_tokens, language_of
from dgrag.kernels.tokens import CJK, IDEOGRAPH, IDEOGRAPHS, named_terms, tokenize


def test_identifiers_whole_plus_camel_and_snake_parts():
    assert tokenize("router.pushUrl") == ["router.pushurl", "router", "pushurl", "push", "url"]
    assert tokenize("@State") == ["@state", "state"]
    assert tokenize("max_file_bytes") == ["max_file_bytes", "max", "file", "bytes"]
    assert tokenize("HTTPServer") == ["httpserver", "http", "server"]
    assert tokenize("error 2303198") == ["error", "2303198"]


def test_stop_words_dropped_and_cjk_bigrams():
    assert tokenize("How do I use the router?") == ["router"]
    assert tokenize("路由跳转") == ["路由", "由跳", "跳转"]
    assert tokenize("页") == ["页"]
    assert tokenize("使用router跳转") == ["使用", "router", "跳转"]


def test_punctuation_splits_and_sentence_dots_are_not_members():
    assert tokenize("Hello, World!") == ["hello", "world"]
    assert tokenize("end of sentence.") == ["end", "sentence"]
    assert tokenize("使用router.pushUrl()跳转，见@State。") == [
        "使用", "router.pushurl", "router", "pushurl", "push", "url", "跳转", "见", "@state", "state"]
    assert tokenize("，。！？()[]") == [] and tokenize("") == []


def test_cjk_is_defined_once_ideographs_within_the_wider_set():
    for ch in ("\u3400", "\u4e00", "\u9fff", "\uf900"):  # extension A, unified, compatibility
        assert IDEOGRAPH.fullmatch(ch) and re.fullmatch(f"[{CJK}]", ch)
    assert not IDEOGRAPH.match("\u4dc0")  # a Yijing hexagram is a symbol, not text
    assert not IDEOGRAPH.match("か") and re.fullmatch(f"[{CJK}]", "か")  # kana: CJK, not an ideograph
    assert tokenize("\uf900\u3400") == ["\uf900\u3400"] and IDEOGRAPHS.startswith("\u3400")


def test_the_text_rules_read_the_same_definition():
    assert language_of("页面") == "zh" and language_of("\u3400") == "zh" and language_of("page") == "en"
    assert estimate_tokens("路由跳转") >= 4  # one ideograph, at least one token


def test_named_terms_are_the_names_a_question_uses():
    # code-shaped words, and a capitalised word past a sentence's start; the opening word is no name
    assert named_terms("How does Flutter's Navigator.push pass arguments?") == ["flutter", "navigator", "push"]
    assert named_terms("How do I make a sourdough starter? Then bake it.") == []
    assert named_terms("Bread rises where the Kraus House stands?\nOven heat") == ["kraus", "house"]
    assert named_terms("Where is @State and my_module.onCreate in the iOS SDK?") == [
        "state", "module", "oncreate", "ios", "sdk"]  # `my` is a stop word
    # in a Chinese question every Latin word is a name; numbers and single letters are not
    assert named_terms("Flutter 的 GetX 怎么做路由管理？") == ["flutter", "getx"]
    assert named_terms("ArkUI-X 报 15501002，传 30MB 的 ArrayBuffer 失败") == ["arkui", "arraybuffer"]
    assert named_terms("arkui-x_windows_x64_1.0.0.0_Release.zip 是什么") == ["arkui", "windows", "x64", "release", "zip"]
