import math

import numpy as np
import pytest

from dgrag.kernels.bm25 import bm25_scores, fuse
from dgrag.kernels.lexical import build_lexical


def test_bm25_ranks_matching_doc_first():
    docs = ["使用 router.pushUrl 进行页面跳转", "状态管理 @State 装饰器", "图片 组件 Image",
            "列表 List 组件"]
    s = bm25_scores("页面跳转 pushUrl", docs)
    assert s.shape == (4,) and s.dtype == np.float64
    assert int(np.argmax(s)) == 0 and np.count_nonzero(s) == 1
    s = bm25_scores("@State", docs)
    assert int(np.argmax(s)) == 1


def test_the_candidates_bm25_is_the_corpus_bm25_over_them():
    docs = ["pushUrl pushUrl", "back", "pushUrl back back back"]
    assert bm25_scores("pushUrl back", docs).tolist() == build_lexical(docs).scores("pushUrl back").tolist()
    # by hand: "back" in docs 1, 2 of 3 (df 2), doc lengths 6, 1, 6 (pushUrl: pushurl, push, url)
    idf, avg = math.log1p((3 - 2 + 0.5) / (2 + 0.5)), 13 / 3
    w = idf * 1 * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 1 / avg))
    assert bm25_scores("back", docs)[1] == pytest.approx(w)


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
