import numpy as np
import pytest
from scipy.sparse import csr_matrix

from dgrag.kernels.graph_arrays import (EDGE_TYPE_CODES as E, NODE_TYPE_CODES as N, GraphArrays,
                                        build_graph_arrays, edge_cost, page_of, to_scipy, without_edges)


def test_codes():
    assert N == {"file": 0, "chunk": 1, "code": 2, "table": 3, "image": 4, "entity": 5}
    assert E == {"contains": 0, "jump": 1, "passage": 2, "semantic": 3, "synonymy": 4, "other": 5, "api": 6}


def test_edge_cost_formulas():
    et = np.array([E["synonymy"], E["synonymy"], E["semantic"], E["semantic"], E["passage"],
                   E["contains"], E["jump"], E["other"]], dtype=np.uint8)
    w = np.array([0.7, 1.5, 0.25, 0.01, 0.9, 1.0, 1.0, 3.0], dtype=np.float32)
    c = edge_cost(et, w)
    assert c.dtype == np.float32
    np.testing.assert_allclose(c, [0.3, 0.01, 2.0, 5.0, 0.2, 0.3, 0.5, 0.5], rtol=1e-6)


def _small() -> GraphArrays:
    # 0 -- 1 semantic (cost 1.0), 0 -- 2 passage (0.2), 0 -- 3 synonymy w .95 (0.05),
    # 1 -- 2 contains (0.3), a self-loop on 3, and a parallel jump edge 0 -- 2 (0.5).
    src = [0, 0, 0, 1, 3, 2]
    dst = [1, 2, 3, 2, 3, 0]
    et = [E["semantic"], E["passage"], E["synonymy"], E["contains"], E["jump"], E["jump"]]
    w = [0.5, 1.0, 0.95, 1.0, 1.0, 2.0]
    nt = [N["entity"], N["chunk"], N["chunk"], N["entity"]]
    return build_graph_arrays(4, src, dst, et, w, nt)


def test_build_layout_and_dtypes():
    ga = _small()
    assert ga.indptr.dtype == np.int64 and ga.indices.dtype == np.int32
    assert ga.cost.dtype == np.float32 and ga.weight.dtype == np.float32
    assert ga.etype.dtype == np.uint8 and ga.node_type.dtype == np.uint8
    assert ga.n_nodes == 4
    assert ga.indptr.tolist() == [0, 3, 5, 7, 8]
    # Row 0 cheapest first: 3 (0.05), 2 (0.2, the passage edge wins over the parallel jump), 1 (1.0)
    assert ga.indices[0:3].tolist() == [3, 2, 1]
    np.testing.assert_allclose(ga.cost[0:3], [0.05, 0.2, 1.0], rtol=1e-6)
    assert ga.etype[0:3].tolist() == [E["synonymy"], E["passage"], E["semantic"]]
    assert ga.indices[3:5].tolist() == [2, 0]   # row 1: contains 0.3, semantic 1.0
    assert ga.indices[5:7].tolist() == [0, 1]   # row 2: passage 0.2, contains 0.3
    assert ga.indices[7:8].tolist() == [0]      # row 3: self-loop dropped
    for r in range(4):
        row = ga.cost[ga.indptr[r]:ga.indptr[r + 1]]
        assert np.all(np.diff(row) >= 0)


def test_without_edges_drops_one_type_and_keeps_rows_and_order():
    ga = _small()
    g = without_edges(ga, [E["contains"]])
    assert g.n_nodes == 4 and g.indptr.tolist() == [0, 3, 4, 5, 6]
    assert g.indices.tolist() == [3, 2, 1, 0, 0, 0]   # rows 1 and 2 lose their contains entry
    assert g.etype.tolist() == [E["synonymy"], E["passage"], E["semantic"], E["semantic"], E["passage"], E["synonymy"]]
    np.testing.assert_allclose(g.cost, [0.05, 0.2, 1.0, 1.0, 0.2, 0.05], rtol=1e-6)
    np.testing.assert_allclose(g.weight, [0.95, 1.0, 0.5, 0.5, 1.0, 0.95], rtol=1e-6)
    assert ga.indptr.tolist() == [0, 3, 5, 7, 8]      # the graph it was read from is untouched
    bare = without_edges(ga, E.values())
    assert bare.indptr.tolist() == [0, 0, 0, 0, 0] and bare.indices.size == 0
    assert without_edges(ga, []).indices.tolist() == ga.indices.tolist()


def test_symmetric_entries():
    ga = _small()
    entries = {}
    for r in range(ga.n_nodes):
        for k in range(ga.indptr[r], ga.indptr[r + 1]):
            entries[(r, int(ga.indices[k]))] = (float(ga.cost[k]), float(ga.weight[k]), int(ga.etype[k]))
    for (a, b), v in entries.items():
        assert entries[(b, a)] == v


def test_ties_broken_by_neighbour_index():
    ga = build_graph_arrays(4, [0, 0, 0], [3, 1, 2], [E["passage"]] * 3, [1, 1, 1], [0, 1, 1, 1])
    assert ga.indices[ga.indptr[0]:ga.indptr[1]].tolist() == [1, 2, 3]


def test_empty_graph_and_bad_input():
    ga = build_graph_arrays(3, [], [], [], [], [1, 1, 1])
    assert ga.indptr.tolist() == [0, 0, 0, 0] and ga.n_entries == 0
    with pytest.raises(ValueError):
        build_graph_arrays(2, [0], [2], [0], [1.0], [1, 1])
    with pytest.raises(ValueError):
        build_graph_arrays(2, [0], [1], [0], [1.0], [1])


def test_to_scipy_weights_symmetric_and_does_not_touch_ga():
    ga = _small()
    before = ga.indices.copy()
    m = to_scipy(ga)
    assert isinstance(m, csr_matrix) and m.shape == (4, 4)
    d = m.toarray()
    np.testing.assert_allclose(d, d.T)
    assert d[0, 2] == pytest.approx(1.0) and d[0, 1] == pytest.approx(0.5)
    assert d[0, 3] == pytest.approx(0.95) and d[1, 2] == pytest.approx(1.0)
    assert d[3, 3] == 0.0
    assert np.array_equal(ga.indices, before)


def test_page_of_follows_contains_down_from_each_file_only():
    # file 0 > chunk 2 > chunk 3 > code 4;  file 1 > chunk 5;  chunk 3 jumps to file 1;
    # entity 6 is linked to chunks 3 and 5 (passage); image 7 hangs under chunk 5
    src = [0, 2, 3, 1, 3, 6, 6, 5]
    dst = [2, 3, 4, 5, 1, 3, 5, 7]
    et = [E["contains"]] * 4 + [E["jump"], E["passage"], E["passage"], E["contains"]]
    nt = [N["file"], N["file"], N["chunk"], N["chunk"], N["code"], N["chunk"], N["entity"], N["image"]]
    ga = build_graph_arrays(8, src, dst, et, [1.0] * 8, nt)
    assert page_of(ga).tolist() == [0, 1, 0, 0, 0, 1, -1, 1]


def test_row_entries_lists_the_entries_of_several_rows_in_order():
    from dgrag.kernels.graph_arrays import row_entries

    indptr = np.array([0, 2, 2, 5, 6])  # rows of 2, 0, 3 and 1 entries
    owner, entry = row_entries(indptr, np.array([2, 0, 1, 2, 3]))
    assert owner.tolist() == [0, 0, 0, 1, 1, 3, 3, 3, 4]
    assert entry.tolist() == [2, 3, 4, 0, 1, 2, 3, 4, 5]
    owner, entry = row_entries(indptr, np.array([1], np.int64))
    assert owner.size == entry.size == 0
