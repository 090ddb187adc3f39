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
