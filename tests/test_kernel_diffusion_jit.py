"""The compiled diffusion loop gives exactly the reference kernel's results."""
import numpy as np
import pytest

from dgrag.kernels import diffusion_jit
from dgrag.kernels.diffusion import diffuse
from dgrag.kernels.graph_arrays import build_graph_arrays

pytestmark = pytest.mark.skipif(not diffusion_jit.available(), reason="numba is not installed")


def random_graph(rng, n=400, m=2400):
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    etype = rng.integers(0, 6, m).astype(np.uint8)
    weight = rng.uniform(0.05, 5, m).astype(np.float32)
    ntype = rng.integers(0, 6, n).astype(np.uint8)
    return build_graph_arrays(n, src, dst, etype, weight, ntype)


@pytest.mark.parametrize("case", [
    {}, {"max_expansions": 37}, {"per_node_neighbor_limit": 2}, {"max_frontier_size": 15},
    {"min_enqueue_score": 0.3}, {"quotas": {1: 3, 4: 1}}, {"quotas": {}}, {"evidence_weight": 1.0},
])
def test_jit_matches_the_reference(case):
    rng = np.random.default_rng(len(str(case)))
    for _ in range(5):
        ga = random_graph(rng)
        sim = rng.uniform(0, 1, ga.n_nodes)
        seeds = {int(s): float(w) for s, w in zip(rng.integers(0, ga.n_nodes, 6), rng.uniform(0.5, 1, 6))}
        mandatory = rng.integers(0, ga.n_nodes, 4).tolist()
        kw = dict(case, time_budget_s=1e9)
        if "evidence_weight" in case:
            kw["evidence"] = rng.uniform(0, 1, ga.n_nodes)
        a = diffuse(ga, sim, seeds, mandatory, **kw)
        b = diffuse(ga, sim, seeds, mandatory, engine="jit", **kw)
        assert a.stop_reason == b.stop_reason and a.expansions == b.expansions
        assert np.array_equal(a.visited, b.visited) and np.array_equal(a.nodes, b.nodes)
        assert np.allclose(a.scores, b.scores) and np.allclose(a.cost, b.cost) and a.parent == b.parent


def test_jit_time_budget_is_checked_between_slices():
    rng = np.random.default_rng(3)
    ga = random_graph(rng, n=3000, m=30000)
    ticks = iter(range(10**6))
    res = diffuse(ga, np.ones(ga.n_nodes), {0: 1.0}, quotas={9: 10**6}, time_budget_s=1.5,
                  clock=lambda: float(next(ticks)), engine="jit", min_enqueue_score=0.0)
    assert res.stop_reason == "time_budget" and res.expansions == diffusion_jit.SLICE  # clock 1: run, clock 2: stop


def test_a_non_finite_similarity_is_refused_and_leaves_the_thread_clean():
    rng = np.random.default_rng(5)
    ga = random_graph(rng)
    sim = rng.uniform(0, 1, ga.n_nodes)
    seeds = {0: 1.0, 7: 0.9}
    before = diffuse(ga, sim, seeds, engine="jit")
    bad = sim.copy()
    bad[3] = np.inf
    with pytest.raises(ValueError):
        diffuse(ga, bad, seeds, engine="jit")
    with pytest.raises(ValueError):
        diffuse(ga, sim, {0: float("nan")}, engine="jit")
    after = diffuse(ga, sim, seeds, engine="jit")  # the same thread, the same buffers
    assert np.array_equal(before.visited, after.visited) and np.array_equal(before.nodes, after.nodes)


def exact_vectors(rng, n, dim=8):
    """Vectors whose cosines are exact in float32 whatever the order of the sums (halves and
    quarters), a quarter of the nodes without one (row -1)."""
    row = np.where(rng.uniform(size=n) < 0.75, np.arange(n), -1)
    mat = (rng.integers(-2, 3, (n, dim)) / 4).astype(np.float32)
    q = (rng.integers(-2, 3, dim) / 2).astype(np.float32)
    return row, mat, q


@pytest.mark.parametrize("engine", ["python", "jit"])
def test_similarities_left_nan_are_computed_from_the_vectors(engine):
    """A NaN similarity is the node's clipped cosine, computed when the loop reaches it: the
    same result as the whole array computed first, in both loops."""
    rng = np.random.default_rng(11)
    for _ in range(5):
        ga = random_graph(rng)
        row, mat, q = exact_vectors(rng, ga.n_nodes)
        full = np.where(row >= 0, np.maximum(mat[np.maximum(row, 0)] @ q, 0.0), 0.0).astype(np.float64)
        given = rng.uniform(size=ga.n_nodes) < 0.2  # the reranked chunks: set by the caller
        full[given] = rng.uniform(0, 1, int(given.sum()))
        lazy = np.where(given, full, np.nan)
        seeds = {int(s): float(w) for s, w in zip(rng.integers(0, ga.n_nodes, 6), rng.uniform(0.5, 1, 6))}
        mandatory = rng.integers(0, ga.n_nodes, 4).tolist()
        a = diffuse(ga, full, seeds, mandatory, time_budget_s=1e9, min_enqueue_score=0.05)
        b = diffuse(ga, lazy, seeds, mandatory, time_budget_s=1e9, min_enqueue_score=0.05, engine=engine,
                    vectors=(row, mat, q))
        assert a.expansions == b.expansions > 10 and np.array_equal(a.visited, b.visited)
        assert np.array_equal(a.nodes, b.nodes) and np.array_equal(a.scores, b.scores) and a.parent == b.parent


def test_a_nan_similarity_without_vectors_is_refused():
    rng = np.random.default_rng(12)
    ga = random_graph(rng)
    sim = rng.uniform(0, 1, ga.n_nodes)
    sim[5] = np.nan
    with pytest.raises(ValueError):
        diffuse(ga, sim, {0: 1.0}, engine="jit")
    row, mat, q = exact_vectors(rng, ga.n_nodes)
    with pytest.raises(ValueError):
        diffuse(ga, sim, {0: 1.0}, engine="jit", vectors=(row[:-1], mat, q))  # a row per node
