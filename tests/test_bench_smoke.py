"""CI smoke run of the benchmarks' small preset: the harness runs and reports every figure
(speed targets live in the README's table, never in tests)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

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
