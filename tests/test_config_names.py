"""One name per stage: the stage-3 method is `diffusion` in its parameters too; the former names
(`spread_*`, `rank_w_walk`) are still read, as the same parameters."""
import pytest

from dgrag.config import RENAMED, RetrievalConfig, Settings
from dgrag.errors import ConfigError


def test_former_names_set_the_renamed_parameters():
    cfg = RetrievalConfig().merged({"spread_chunk_k": 7, "rank_w_walk": 0.3, "spread_trust_walk_k": 3})
    assert (cfg.diffusion_chunk_k, cfg.rank_w_diffusion, cfg.diffusion_trust_k) == (7, 0.3, 3)
    env = Settings.from_env({"DGRAG_RETRIEVAL_SPREAD_TIME_BUDGET_S": "1.5"})
    assert env.retrieval.diffusion_time_budget_s == 1.5
    assert not any(hasattr(cfg, old) for old in RENAMED) and all(hasattr(cfg, new) for new in RENAMED.values())


def test_a_parameter_under_both_names_or_out_of_range_is_refused():
    with pytest.raises(ConfigError, match="given twice"):
        RetrievalConfig().merged({"spread_chunk_k": 7, "diffusion_chunk_k": 8})
    with pytest.raises(ConfigError, match="diffusion_time_budget_s must be at most"):
        RetrievalConfig().merged({"spread_time_budget_s": 99})
    with pytest.raises(ConfigError, match="unknown retrieval parameter: 'walk_chunk_k'"):
        RetrievalConfig().merged({"walk_chunk_k": 1})
