"""One name per stage: the stage-3 method is `diffusion` in its parameters too; the former names
(`spread_*`, `rank_w_walk`, `rank_ppr_trust`) are still read, as the same parameters. The trust
rule's parameters are gone: an old config naming one still loads with the value that gives
today's results, and is refused with any other. The parameters are grouped by stage."""
import dataclasses

import pytest

from dgrag.config import REMOVED, RENAMED, RetrievalConfig, Settings
from dgrag.errors import ConfigError


def test_former_names_set_the_renamed_parameters():
    cfg = RetrievalConfig().merged({"spread_chunk_k": 7, "rank_w_walk": 0.3, "spread_trust_walk_k": 3})
    assert (cfg.diffusion_chunk_k, cfg.rank_w_diffusion, cfg.diffusion_trust_k) == (7, 0.3, 3)
    env = Settings.from_env({"DGRAG_RETRIEVAL_SPREAD_TIME_BUDGET_S": "1.5"})
    assert env.retrieval.diffusion_time_budget_s == 1.5
    assert not any(hasattr(cfg, old) for old in RENAMED)
    assert all(hasattr(cfg, new) or new in REMOVED for new in RENAMED.values())
    assert RetrievalConfig().merged({"rank_ppr_trust": 0.7}).rank_ppr_agreement == 0.7


def test_a_parameter_under_both_names_or_out_of_range_is_refused():
    with pytest.raises(ConfigError, match="given twice"):
        RetrievalConfig().merged({"spread_chunk_k": 7, "diffusion_chunk_k": 8})
    with pytest.raises(ConfigError, match="diffusion_time_budget_s must be at most"):
        RetrievalConfig().merged({"spread_time_budget_s": 99})
    with pytest.raises(ConfigError, match="unknown retrieval parameter: 'walk_chunk_k'"):
        RetrievalConfig().merged({"walk_chunk_k": 1})


def test_the_trust_rules_parameters_load_at_their_old_defaults_and_are_refused_otherwise():
    default = RetrievalConfig()
    old = {"rank_mode": "evidence", "diffusion_evidence_weight": 0.5, "diffusion_graph_fusion": "2",
           "spread_fusion_k": 5, "diffusion_trust_floor": 0.34, "spread_trust_full": 0.66}
    assert RetrievalConfig().merged(old) == default  # a config saved before: the same search
    full = {**dataclasses.asdict(default), **REMOVED, "rank_ppr_trust": 0.5}
    del full["rank_ppr_agreement"]
    assert RetrievalConfig().merged(full) == default  # every parameter of then, at its default
    for name, value in (("rank_mode", "trust"), ("diffusion_trust_full", 0), ("spread_graph_fusion", 1.0)):
        with pytest.raises(ConfigError, match="removed with the trust rule"):
            RetrievalConfig().merged({name: value})
    env = {"DGRAG_RETRIEVAL_RANK_MODE": "trust"}
    with pytest.raises(ConfigError, match="rank_mode was removed"):
        Settings.from_env(env)
    assert not any(hasattr(default, name) for name in REMOVED)


def test_the_parameters_are_grouped_by_stage_in_the_order_a_question_passes():
    from test_docs import _config_doc

    config_doc = _config_doc()
    rows = config_doc.rows(RetrievalConfig, "DGRAG_RETRIEVAL_")
    names = [config_doc.GROUP.fullmatch(g)[1] for g in config_doc.groups(rows)]
    assert names == ["recall", "rerank", "walk", "rank", "ppr", "final"]
    # each group is one run of fields: none is written apart from its group
    sections = [r.section for r in rows]
    assert sections == sorted(sections, key=config_doc.groups(rows).index)
