import numpy as np
import pytest

from dgrag.kernels.graph_arrays import build_graph_arrays, to_scipy
from dgrag.kernels.ppr import ppr_scipy
from dgrag.kernels.ppr_push import _push_loop, ppr_push, weighted_degree


def _graph(seed: int = 3, n: int = 400, m: int = 1600):
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    keep = (src != dst) & (src > 0) & (dst > 0)  # node 0 stays isolated
    ga = build_graph_arrays(n, src[keep], dst[keep], rng.integers(0, 5, keep.sum()).astype(np.uint8),
                            rng.uniform(0.2, 3.0, keep.sum()).astype(np.float32), np.zeros(n, np.uint8))
    return ga, rng


def test_weighted_degree_is_the_row_sum_including_empty_rows():
    ga, _ = _graph()
    wd = weighted_degree(ga.indptr, ga.weight)
    np.testing.assert_allclose(wd, np.asarray(to_scipy(ga).sum(axis=1)).ravel(), rtol=1e-6)
    assert wd[0] == 0.0


@pytest.mark.parametrize("damping", [0.5, 0.85])
def test_push_converges_to_the_power_iteration(damping):
    ga, rng = _graph()
    reset = np.zeros(ga.n_nodes)
    reset[rng.integers(1, ga.n_nodes, 8)] = rng.uniform(0.5, 2.0, 8)
    reset[1:200] += 0.001  # a dense prior on many nodes, as HippoRAG's passage weight gives
    exact = ppr_scipy(to_scipy(ga), reset, damping=damping, tol=1e-12, max_iter=500)
    approx = ppr_push(ga.indptr, ga.indices, ga.weight, weighted_degree(ga.indptr, ga.weight), reset,
                      damping=damping, eps=1e-10)
    assert np.abs(exact - approx).max() < 1e-6
    top = np.argsort(-exact, kind="stable")[:20]
    assert top.tolist() == np.argsort(-approx, kind="stable")[:20].tolist()


def test_push_error_shrinks_with_eps_and_is_bounded_by_it():
    ga, rng = _graph(seed=5)
    wd = weighted_degree(ga.indptr, ga.weight)
    reset = np.zeros(ga.n_nodes)
    reset[rng.integers(1, ga.n_nodes, 5)] = 1.0
    exact = ppr_scipy(to_scipy(ga), reset, tol=1e-12, max_iter=500)
    errors = []
    for eps in (1e-4, 1e-6, 1e-8):
        approx = ppr_push(ga.indptr, ga.indices, ga.weight, wd, reset, eps=eps)
        errors.append(np.abs(exact - approx).sum())
        # the mass left behind is below eps * wdeg at every node; renormalising at most doubles it
        assert errors[-1] <= 2 * eps * wd.sum()
    assert errors[0] > errors[1] > errors[2]


def test_push_is_local_a_far_component_is_never_touched():
    # two components: mass seeded in the first never reaches the second
    a = build_graph_arrays(6, np.array([0, 1, 3, 4]), np.array([1, 2, 4, 5]), np.zeros(4, np.uint8),
                           np.ones(4, np.float32), np.zeros(6, np.uint8))
    p = ppr_push(a.indptr, a.indices, a.weight, weighted_degree(a.indptr, a.weight), np.array([1.0, 0, 0, 0, 0, 0]))
    assert p[3:].sum() == 0.0 and p[:3].sum() == pytest.approx(1.0) and p[0] > p[1] > p[2] > 0


def test_zero_reset_isolated_nodes_and_bad_input():
    ga, _ = _graph()
    wd = weighted_degree(ga.indptr, ga.weight)
    assert not ppr_push(ga.indptr, ga.indices, ga.weight, wd, np.zeros(ga.n_nodes)).any()
    only_isolated = np.zeros(ga.n_nodes)
    only_isolated[0] = 1.0  # the walk can only restart from it
    assert ppr_push(ga.indptr, ga.indices, ga.weight, wd, only_isolated)[0] == pytest.approx(1.0)
    with pytest.raises(ValueError):
        ppr_push(ga.indptr, ga.indices, ga.weight, wd, -np.ones(ga.n_nodes))
    with pytest.raises(ValueError):
        ppr_push(ga.indptr, ga.indices, ga.weight, wd, np.ones(3))


def test_compiled_and_python_loops_agree():
    ga, rng = _graph(seed=9)
    wd = weighted_degree(ga.indptr, ga.weight)
    reset = rng.uniform(0, 1, ga.n_nodes) * (rng.uniform(0, 1, ga.n_nodes) < 0.1)
    p1, p2 = np.zeros(ga.n_nodes), np.zeros(ga.n_nodes)
    r = reset / reset.sum()
    ppr_push(ga.indptr, ga.indices, ga.weight, wd, reset)  # compiles
    from dgrag.kernels import ppr_push as mod

    mod._push_jit(ga.indptr, ga.indices, ga.weight.astype(np.float64), wd, r.copy(), p1, 0.5, 1e-7)
    _push_loop(ga.indptr, ga.indices, ga.weight.astype(np.float64), wd, r.copy(), p2, 0.5, 1e-7)
    np.testing.assert_allclose(p1, p2, rtol=1e-12, atol=1e-15)


def test_a_reset_below_every_threshold_is_its_own_answer_and_bad_settings_are_refused():
    ga, _ = _graph()
    wd = weighted_degree(ga.indptr, ga.weight)
    reset = np.zeros(ga.n_nodes)
    reset[1:3] = 1.0
    p = ppr_push(ga.indptr, ga.indices, ga.weight, wd, reset, eps=1.0)  # nothing is pushed
    assert np.isfinite(p).all() and p[1] == p[2] == pytest.approx(0.5)
    for kw in ({"damping": 1.0}, {"eps": 0.0}, {"damping": -0.1}):
        with pytest.raises(ValueError):
            ppr_push(ga.indptr, ga.indices, ga.weight, wd, reset, **kw)
