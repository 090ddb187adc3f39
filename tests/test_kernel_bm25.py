import numpy as np
import pytest

from dgrag.kernels.bm25 import bm25_scores, fuse
from dgrag.kernels.tokens import whole_tokens as tokenize


def test_identifiers_whole_plus_parts():
    assert tokenize("router.pushUrl") == ["router.pushurl", "router", "pushurl"]
    assert tokenize("@State") == ["@state", "state"]
    assert tokenize("my_var") == ["my_var"]
    assert tokenize("Hello, World!") == ["hello", "world"]
    assert tokenize("end of sentence.") == ["end", "of", "sentence"]


def test_cjk_unigrams_and_bigrams():
    assert tokenize("路由跳转") == ["路", "由", "跳", "转", "路由", "由跳", "跳转"]
    assert tokenize("页") == ["页"]
    # compatibility ideographs U+F900.. and extension A U+3400 count as CJK
    assert tokenize("\uf900\u3400") == ["\uf900", "\u3400", "\uf900\u3400"]


def test_mixed_text_and_punctuation():
    toks = tokenize("使用router.pushUrl()跳转，见@State。")
    assert toks == ["使", "用", "使用", "router.pushurl", "router", "pushurl",
                    "跳", "转", "跳转", "见", "@state", "state"]   # "，" splits the CJK run
    assert tokenize("，。！？()[]") == []
    assert tokenize("") == []


def test_bm25_ranks_matching_doc_first():
    docs = ["使用 router.pushUrl 进行页面跳转", "状态管理 @State 装饰器", "图片 组件 Image",
            "列表 List 组件"]
    s = bm25_scores("页面跳转 pushUrl", docs)
    assert s.shape == (4,) and s.dtype == np.float64
    assert int(np.argmax(s)) == 0
    s = bm25_scores("@State", docs)
    assert int(np.argmax(s)) == 1


def test_bm25_guards():
    assert bm25_scores("query", []).shape == (0,)
    assert bm25_scores("", ["a doc"]).tolist() == [0.0]
    assert bm25_scores("。。", ["a doc", "b"]).tolist() == [0.0, 0.0]
    assert bm25_scores("query", ["", "！"]).tolist() == [0.0, 0.0]
    assert bm25_scores("doc", ["", "a doc", "x"]).shape == (3,)


def test_fuse():
    cos = np.array([0.2, 0.6, 0.4])
    bm = np.array([10.0, 0.0, 5.0])
    np.testing.assert_allclose(fuse(cos, bm), [0.3, 0.7, 0.5])
    np.testing.assert_allclose(fuse(cos, bm, alpha=0.5), [0.5, 0.5, 0.5])
    # a constant BM25 side (no query term anywhere) lifts every candidate alike: cosine ranks
    np.testing.assert_allclose(fuse(cos, np.zeros(3)), [0.3, 1.0, 0.65])
    with pytest.raises(ValueError):
        fuse(cos, bm[:2])
