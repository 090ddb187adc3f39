"""What every command shares: settings from the arguments, the index file check, progress bars,
argument types that fail with one line, and the report printer. Imports nothing of the CLI."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..config import RetrievalConfig, Settings
from ..errors import ConfigError, DgragError

METHODS = ("dense", "ppr", "diffusion")

# argument dest -> Settings field: a flag left out falls back to DGRAG_<FIELD>, then the default
SETTING_OF_ARG = {"db": "db_path", "docs_dir": "docs_root", "url_template": "url_template", "include": "include",
                  "site": "site", "site_url": "site_url", "include_root": "include_root",
                  "embedder": "embedder", "max_workers": "max_workers", "host": "server_host",
                  "port": "server_port", "sync_branch": "sync_branch", "sync_docs": "sync_docs",
                  "sync_repo": "sync_repo", "sync_every": "sync_every", "watch_quiet_s": "watch_quiet_s"}


def settings_for(args: argparse.Namespace, **extra) -> Settings:
    """Settings.from_env with the flags the user gave (a flag beats its environment variable)."""
    overrides = {field: getattr(args, dest) for dest, field in SETTING_OF_ARG.items()
                 if getattr(args, dest, None) is not None}
    return Settings.from_env(**overrides, **extra)


def require_index(path: Path) -> Path:
    path = Path(path)
    if not path.is_file():
        what = "is not a file" if path.exists() else "does not exist"
        raise DgragError(f"no index file at {path} ({what}); build one with `dgrag index DOCS --db {path}` "
                         "or point --db / DGRAG_DB_PATH at one")
    return path


def open_index(settings: Settings):
    from ..store import Store

    return Store(require_index(settings.db_path))


def retrieval_overrides(args: argparse.Namespace) -> dict:
    """--config merged with --method (a flag beats the JSON, and both beat DGRAG_RETRIEVAL_*)."""
    overrides = dict(getattr(args, "config", None) or {})
    if getattr(args, "method", None):
        overrides["method"] = args.method
    if getattr(args, "verbose", False):
        overrides["verbose"] = True
    return overrides


# ---- argument types: a bad value is one line from argparse, exit 2 ---------------------------
def json_config(text: str) -> dict:
    """--config: a JSON object of retrieval parameters, checked against RetrievalConfig now."""
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not valid JSON ({exc}): {text[:80]!r}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"must be a JSON object such as '{{\"final_chunk_k\": 5}}', "
                                         f"not {type(value).__name__}")
    try:
        RetrievalConfig().merged(value)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value


def k_list(text: str) -> list[int]:
    """--k: comma-separated positive integers, e.g. 1,2,5,10."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise argparse.ArgumentTypeError(f"expected comma-separated positive integers such as 1,2,5,10, not {text!r}")
    return [int(p) for p in parts]


def method_list(text: str) -> list[str]:
    """--methods: comma-separated names among dense, ppr, diffusion."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    bad = [p for p in parts if p not in METHODS]
    if not parts or bad:
        raise argparse.ArgumentTypeError(f"expected comma-separated methods among {', '.join(METHODS)}, "
                                         f"not {text!r}")
    return parts


def _positive(text: str, cast, expected: str):
    try:
        value = cast(text)
    except ValueError:
        value = 0
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected {expected}, not {text!r}")
    return value


def positive_int(text: str) -> int:
    return _positive(text, int, "a positive integer")


def positive_float(text: str) -> float:
    """Seconds and the like: a finite number above 0."""
    return _positive(text, float, "a number above 0, such as 0.5 or 60")


def port_number(text: str) -> int:
    value = positive_int(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"expected a port number (1-65535), not {text!r}")
    return value


# ---- output ---------------------------------------------------------------------------------
class ProgressBar:
    """A tqdm bar per stage, created lazily (tqdm is imported only when a bar is shown)."""

    def __init__(self, enabled: bool = True):
        self.enabled = enabled and sys.stderr.isatty()
        self.bars: dict = {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        from tqdm import tqdm

        bar = self.bars.get(stage)
        if bar is None:
            bar = self.bars[stage] = tqdm(total=total, desc=stage, unit="item", file=sys.stderr, leave=True)
        bar.total = total
        bar.n = done
        bar.refresh()

    def close(self) -> None:
        for bar in self.bars.values():
            bar.close()


def print_report(out: dict, as_json: bool) -> None:
    print(json.dumps(out, ensure_ascii=False, indent=2, default=str) if as_json else _human(out))


def _human(out: dict) -> str:
    lines = []
    for k, v in out.items():
        if k == "stats":
            lines.append("index: " + ", ".join(f"{t} {n}" for t, n in v["nodes"].items()) + "; edges: "
                         + ", ".join(f"{t} {n}" for t, n in v["edges"].items()))
        elif isinstance(v, dict):
            lines.append(f"{k}: " + ", ".join(f"{a}={b}" for a, b in v.items() if a not in ("failures", "sample")))
            for nid, why in v.get("failures", [])[:10]:
                lines.append(f"  failed {nid}: {why}")
        else:
            lines.append(f"{k}: {v}")
    return "\n".join(lines)
