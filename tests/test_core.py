"""The core types: what a route's positions mean, and the seed's JSON built in one place."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from dgrag.core import Reference, RetrievalResult, Route


def test_a_route_resolves_its_positions_in_its_own_table():
    li = SimpleNamespace(rowids=np.array([10, 20, 30, 40]), fact_rowids=np.array([7, 8, 9]))
    nodes = Route("chunk", np.array([3, 0]), np.array([0.9, 0.5], np.float32))
    facts = Route("fact", np.array([2, 1]), np.array([0.8, 0.7], np.float32))
    assert nodes.rowids(li) == [40, 10] and facts.rowids(li) == [9, 8]
    assert facts.rowids(li, 1) == [9]
    # the score starts as the cosine; top() orders by the score, ties kept in order
    r = Route("file", np.array([1, 2, 3]), np.array([0.2, 0.9, 0.9], np.float32))
    assert r.score.dtype == np.float64 and r.top(2).positions.tolist() == [2, 3] and r.size == 3
    with pytest.raises(AttributeError):
        r.kind = "chunk"  # frozen


def test_the_seed_json_comes_from_one_place():
    chunk = Reference("c1", "chunk", 0.5, "Page / Intro", "https://x/p.md#L1", "p.md", 1, 3, "en", "", "prose",
                      corpus_idx=7, graph_path_rowids=("4", "9"))
    image = Reference("i1", "image", 0.25, "Page", None, "p.md", image={"sha": "abc", "width": 2, "height": 3,
                                                                         "alt": "a", "page": "p.md"})
    res = RetrievalResult("q", "diffusion", {"chunks": [chunk], "images": [image]}, "ctx", {"rag_total": 0.1})
    out = res.to_api()
    assert [r["id"] for r in out["chunks"]] == ["c1"] and out["codes"] == out["tables"] == []
    assert out["chunks"][0]["corpus_idx"] == 7 and out["chunks"][0]["graph_path_rowids"] == ["4", "9"]
    assert "code_language" not in out["chunks"][0] and "image_url" not in out["chunks"][0]
    assert out["images"][0]["image_url"] == "/images/abc" and out["images"][0]["width"] == 2
    assert out["context"] == out["rag_context"] == "ctx" and "trace" not in out
    assert (out["rag_chunks_count"], out["rag_codes_count"], out["rag_images_count"]) == (1, 0, 1)
    assert res.all_references() == [chunk, image] and res.chunks == (chunk,)
