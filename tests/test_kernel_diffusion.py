import numpy as np
import pytest

from dgrag.kernels.diffusion import DiffusionResult, diffuse, path_to
from dgrag.kernels.graph_arrays import EDGE_TYPE_CODES as E, NODE_TYPE_CODES as N, build_graph_arrays

ENT, CHUNK, CODE = N["entity"], N["chunk"], N["code"]


def graph_a():
    """0 entity --passage(0.2)-- 1 chunk --semantic w.5 (1.0)-- 3 chunk
       0 --contains(0.3)-- 2 chunk ; 0 --synonymy w.9 (0.1)-- 5 entity --jump(0.5)-- 4 code"""
    src = [0, 0, 1, 0, 5]
    dst = [1, 2, 3, 5, 4]
    et = [E["passage"], E["contains"], E["semantic"], E["synonymy"], E["jump"]]
    w = [1.0, 1.0, 0.5, 0.9, 1.0]
    nt = [ENT, CHUNK, CHUNK, CHUNK, CODE, ENT]
    sim = np.array([0.5, 0.9, 0.6, 0.88, 0.7, 0.4])
    return build_graph_arrays(6, src, dst, et, w, nt), sim


# Expected scores in graph_a from seed {0: 0.8}
S0 = 0.5 * 0.8                 # 0.4
S1 = 0.9 * 0.8 / 1.2           # 0.6
S2 = 0.6 * 0.8 / 1.3
S3 = 0.88 * 0.8 / (1 + 1.2)    # 0.32
S5 = 0.4 * 0.8 / 1.1
S4 = 0.7 * 0.8 / (1 + 0.6)     # 0.35


def fake_clock(step: float):
    t = [-step]

    def clock() -> float:
        t[0] += step
        return t[0]
    return clock


def test_full_run_order_scores_costs():
    ga, sim = graph_a()
    r = diffuse(ga, sim, {0: 0.8})
    assert isinstance(r, DiffusionResult)
    assert r.visited.tolist() == [0, 1, 2, 3, 5, 4]
    assert r.expansions == 6 and r.stop_reason == "exhausted"
    assert r.nodes.tolist() == [1, 2, 4, 3]          # entity 0 is traversed, never collected
    np.testing.assert_allclose(r.scores, [S1, S2, S4, S3], rtol=1e-6)
    np.testing.assert_allclose(r.cost, [0.2, 0.3, 0.6, 1.2], rtol=1e-6)
    assert r.node_score[0] == pytest.approx(S0) and r.node_score[5] == pytest.approx(S5)
    assert r.parent == {0: -1, 1: 0, 2: 0, 3: 1, 5: 0, 4: 5}


def test_seed_score_formula_and_tuple_seeds():
    ga, sim = graph_a()
    r = diffuse(ga, sim, (np.array([0]), np.array([0.8])), max_expansions=1)
    assert r.node_score == {0: pytest.approx(0.4)}
    r2 = diffuse(ga, sim, {0: 0.8})
    r3 = diffuse(ga, sim, (np.array([0]), np.array([0.8])))
    assert r2.nodes.tolist() == r3.nodes.tolist() and np.allclose(r2.scores, r3.scores)


def test_path_to():
    ga, sim = graph_a()
    r = diffuse(ga, sim, {0: 0.8})
    assert path_to(r, 4) == [0, 5, 4]
    assert path_to(r, 3) == [0, 1, 3]
    assert path_to(r, 0) == [0]
    r = diffuse(ga, sim, {0: 0.8}, max_expansions=2)
    assert path_to(r, 4) == []


def test_max_expansions():
    ga, sim = graph_a()
    r = diffuse(ga, sim, {0: 0.8}, max_expansions=3)
    assert r.stop_reason == "max_expansions" and r.expansions == 3
    assert r.visited.tolist() == [0, 1, 2]
    assert r.nodes.tolist() == [1, 2]


def test_time_budget_with_fake_clock():
    ga, sim = graph_a()
    # start reads 0; expansions read 1, 2, then 3 > 2.5 stops before the third.
    r = diffuse(ga, sim, {0: 0.8}, time_budget_s=2.5, clock=fake_clock(1.0))
    assert r.stop_reason == "time_budget"
    assert r.visited.tolist() == [0, 1]
    assert r.nodes.tolist() == [1]


def test_frontier_cap_skips_pushes():
    ga, sim = graph_a()
    # After popping 0 the heap takes 5 and 1 (cheapest first), then 2 is skipped.
    r = diffuse(ga, sim, {0: 0.8}, max_frontier_size=2)
    assert r.visited.tolist() == [0, 1, 3, 5, 4]
    assert 2 not in r.parent
    assert r.stop_reason == "exhausted"


@pytest.mark.parametrize("threshold, visited", [
    (0.3, [0, 1, 2, 3]),        # 5 (0.291) not enqueued, so 4 is never reached
    (0.33, [0, 1, 2]),          # 3 (0.32) also dropped
])
def test_min_enqueue_score(threshold, visited):
    ga, sim = graph_a()
    r = diffuse(ga, sim, {0: 0.8}, min_enqueue_score=threshold)
    assert r.visited.tolist() == visited


def test_min_enqueue_score_is_inclusive():
    # jump cost 0.5 is exact in float32: 0.75 * 1.0 / 1.5 == 0.5 exactly
    ga = build_graph_arrays(2, [0], [1], [E["jump"]], [1.0], [ENT, CHUNK])
    sim = np.array([1.0, 0.75])
    assert diffuse(ga, sim, {0: 1.0}, min_enqueue_score=0.5).visited.tolist() == [0, 1]
    assert diffuse(ga, sim, {0: 1.0}, min_enqueue_score=0.5000001).visited.tolist() == [0]


def test_quotas_full_stops():
    ga, sim = graph_a()
    r = diffuse(ga, sim, {0: 0.8}, quotas={CHUNK: 2})
    assert r.stop_reason == "quotas_full"
    assert r.visited.tolist() == [0, 1, 2] and r.nodes.tolist() == [1, 2]


def test_full_quota_type_not_collected_but_traversed():
    ga, sim = graph_a()
    r = diffuse(ga, sim, {0: 0.8}, quotas={CHUNK: 1, CODE: 1})
    assert r.visited.tolist() == [0, 1, 2, 3, 5, 4]
    assert r.stop_reason == "quotas_full"      # set by collecting code 4 last
    assert r.nodes.tolist() == [1, 4]


def test_empty_quotas_stop_immediately():
    ga, sim = graph_a()
    r = diffuse(ga, sim, {0: 0.8}, quotas={})
    assert r.stop_reason == "quotas_full" and r.expansions == 0


def test_neighbor_limit_is_cheapest_prefix():
    # Star: 0 entity; 1 passage 0.2, 2 contains 0.3, 3 jump 0.5, 4 semantic w .25 (2.0)
    ga = build_graph_arrays(5, [0, 0, 0, 0], [4, 3, 2, 1],
                            [E["semantic"], E["jump"], E["contains"], E["passage"]],
                            [0.25, 1, 1, 1], [ENT, CHUNK, CHUNK, CHUNK, CHUNK])
    sim = np.ones(5)
    r = diffuse(ga, sim, {0: 1.0}, per_node_neighbor_limit=2)
    assert r.visited.tolist() == [0, 1, 2]
    r = diffuse(ga, sim, {0: 1.0})
    assert r.visited.tolist() == [0, 1, 2, 3, 4]
    np.testing.assert_allclose(r.scores, [1 / 1.2, 1 / 1.3, 1 / 1.5, 1 / 3.0], rtol=1e-6)


def test_tie_break_by_node_index():
    ga, sim = graph_a()
    sim = np.ones(6)
    r = diffuse(ga, sim, {3: 1.0, 1: 1.0}, max_expansions=2)
    assert r.visited.tolist() == [1, 3]


def test_better_path_replaces_queued_entry():
    # 0 -passage- 2 -passage- 1, and a direct 0 -semantic w .1 (cost 5)- 1
    ga = build_graph_arrays(3, [0, 2, 0], [2, 1, 1], [E["passage"], E["passage"], E["semantic"]],
                            [1, 1, 0.1], [ENT, CHUNK, CHUNK])
    r = diffuse(ga, np.ones(3), {0: 1.0})
    assert r.visited.tolist() == [0, 2, 1] and r.expansions == 3
    assert r.parent[1] == 2 and path_to(r, 1) == [0, 2, 1]
    assert r.node_score[1] == pytest.approx(1 / 1.4)
    assert r.nodes.tolist() == [2, 1]
    np.testing.assert_allclose(r.cost, [0.2, 0.4], rtol=1e-6)


def test_empty_seeds_returns_only_mandatory():
    ga, sim = graph_a()
    r = diffuse(ga, sim, {}, mandatory=[2])
    assert r.stop_reason == "exhausted" and r.expansions == 0
    assert r.nodes.tolist() == [2]
    assert r.scores.tolist() == [pytest.approx(0.6)]
    assert np.isinf(r.cost[0]) and r.visited.size == 0 and r.parent == {}


def test_mandatory_added_without_changing_stop_reason():
    ga, sim = graph_a()
    r = diffuse(ga, sim, {0: 0.8}, mandatory=[3, 1], max_expansions=2)
    assert r.stop_reason == "max_expansions"
    assert r.nodes.tolist() == [3, 1]          # 3 unreached: 0.88 * 1.0; 1 keeps its 0.6
    np.testing.assert_allclose(r.scores, [0.88, S1], rtol=1e-6)
    assert np.isinf(r.cost[0]) and r.cost[1] == pytest.approx(0.2)


def test_mandatory_beyond_quota_still_included():
    ga, sim = graph_a()
    r = diffuse(ga, sim, {0: 0.8}, mandatory=[2], quotas={CHUNK: 1, CODE: 5})
    assert 2 in r.nodes.tolist() and 1 in r.nodes.tolist()
    # 2 was finalised (not collected: quota full) so it keeps its diffusion score
    assert r.scores[r.nodes.tolist().index(2)] == pytest.approx(S2)


def test_evidence_boost_reorders_passages():
    ga, sim = graph_a()
    base = diffuse(ga, sim, {0: 0.8}, quotas={CHUNK: 2})
    assert base.nodes.tolist() == [1, 2]
    ev = np.array([0.0, 0.0, 1.0, 0.0, 0.0, 0.0])
    r = diffuse(ga, sim, {0: 0.8}, quotas={CHUNK: 2}, evidence=ev, evidence_weight=1.0)
    assert r.nodes.tolist() == [2, 1]
    np.testing.assert_allclose(r.scores, [2 * S2, S1], rtol=1e-6)
    # weight 0 disables the boost
    r0 = diffuse(ga, sim, {0: 0.8}, quotas={CHUNK: 2}, evidence=ev, evidence_weight=0.0)
    assert r0.nodes.tolist() == [1, 2]


def test_node_sim_length_checked():
    ga, _ = graph_a()
    with pytest.raises(ValueError):
        diffuse(ga, np.ones(3), {0: 1.0})
