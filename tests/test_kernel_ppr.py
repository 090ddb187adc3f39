import igraph as ig
import numpy as np
import pytest
from scipy.sparse import csr_matrix

from dgrag.kernels.graph_arrays import build_graph_arrays, to_scipy
from dgrag.kernels.ppr import ppr_igraph, ppr_scipy


def _random_graph(seed: int = 7, n: int = 30, m: int = 70):
    rng = np.random.default_rng(seed)
    pairs = set()
    while len(pairs) < m:
        a, b = rng.integers(0, n - 2, size=2)   # last two nodes stay isolated (dangling)
        if a != b:
            pairs.add((int(min(a, b)), int(max(a, b))))
    edges = sorted(pairs)
    w = rng.uniform(0.1, 2.0, size=len(edges))
    return n, edges, w, rng


def test_scipy_and_igraph_agree_on_random_weighted_graph():
    n, edges, w, rng = _random_graph()
    g = ig.Graph(n=n, edges=edges)
    g.es["weight"] = w.tolist()
    rows = np.array([e[0] for e in edges] + [e[1] for e in edges])
    cols = np.array([e[1] for e in edges] + [e[0] for e in edges])
    A = csr_matrix((np.concatenate([w, w]), (rows, cols)), shape=(n, n))
    reset = np.zeros(n)
    reset[[0, 3, n - 1]] = [2.0, 1.0, 0.5]     # includes an isolated node
    for damping in (0.5, 0.85):
        a = ppr_scipy(A, reset, damping=damping)
        b = ppr_igraph(g, reset, damping=damping)
        assert np.abs(a - b).max() < 1e-4
        assert a.sum() == pytest.approx(1.0) and b.sum() == pytest.approx(1.0)


def test_agrees_through_graph_arrays():
    n, edges, w, _ = _random_graph(seed=3)
    src = [e[0] for e in edges]
    dst = [e[1] for e in edges]
    ga = build_graph_arrays(n, src, dst, np.full(len(edges), 5), w, np.zeros(n))
    g = ig.Graph(n=n, edges=edges)
    g.es["weight"] = np.asarray(w, dtype=np.float32).astype(float).tolist()  # ga stores float32
    reset = np.ones(n)
    assert np.abs(ppr_scipy(to_scipy(ga), reset) - ppr_igraph(g, reset)).max() < 1e-4


def test_igraph_matches_hand_derived_value():
    # Path 0 -(1)- 1 -(3)- 2, reset on 0, damping 0.5. Solving p = 0.5 P p + 0.5 r:
    # p1 = (p0 + p2)/2, p2 = (3/4 p1)/2, p0 = (1/4 p1)/2 + 1/2  ->  (13/24, 1/3, 1/8).
    g = ig.Graph(n=3, edges=[(0, 1), (1, 2)])
    g.es["weight"] = [1.0, 3.0]
    expect = np.array([13 / 24, 1 / 3, 1 / 8])
    np.testing.assert_allclose(ppr_igraph(g, np.array([1.0, 0, 0])), expect, atol=1e-9)
    A = csr_matrix(np.array([[0, 1, 0], [1, 0, 3], [0, 3, 0]], dtype=float))
    np.testing.assert_allclose(ppr_scipy(A, np.array([1.0, 0, 0])), expect, atol=1e-7)


def test_reset_is_normalised_and_dangling_teleports_to_reset():
    g = ig.Graph(n=4, edges=[(0, 1), (1, 2)])
    g.es["weight"] = [1.0, 3.0]
    A = csr_matrix(np.array([[0, 1, 0, 0], [1, 0, 3, 0], [0, 3, 0, 0], [0, 0, 0, 0]], dtype=float))
    reset = np.array([5.0, 0, 0, 5.0])
    a, b = ppr_scipy(A, reset), ppr_igraph(g, reset)
    np.testing.assert_allclose(a, b, atol=1e-6)
    # Mass at isolated node 3 restarts half to 0, half to itself: p3 = 1/2 p3 + 1/2 * 1/2 ... = 1/3
    assert a[3] == pytest.approx(1 / 3, abs=1e-7)


def test_zero_reset_returns_zeros():
    g = ig.Graph(n=3, edges=[(0, 1)])
    g.es["weight"] = [1.0]
    A = csr_matrix((3, 3))
    assert ppr_scipy(A, np.zeros(3)).tolist() == [0.0, 0.0, 0.0]
    assert ppr_igraph(g, np.zeros(3)).tolist() == [0.0, 0.0, 0.0]


def test_unweighted_igraph_graph():
    g = ig.Graph(n=3, edges=[(0, 1), (1, 2)])
    A = csr_matrix(np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]], dtype=float))
    r = np.array([1.0, 0, 0])
    np.testing.assert_allclose(ppr_igraph(g, r), [7 / 12, 1 / 3, 1 / 12], atol=1e-9)
    np.testing.assert_allclose(ppr_scipy(A, r), [7 / 12, 1 / 3, 1 / 12], atol=1e-7)
