"""Min-max scaling, the one way scores from different sources are put on [0, 1].

The convention for a constant input (every candidate scored alike, or a single candidate):
ones. A constant vector ranks nothing, and the candidates that reached this point were kept
for a reason, so they are all equally best rather than all worthless; callers that weigh the
scaled scores (seed restarts, fused scores, feature columns) keep every candidate in play.
Where a caller fuses two scalings (`fuse`), a constant side adds the same amount to every
candidate, so the ranking is the other side's either way.
"""
from __future__ import annotations

import numpy as np


def minmax(x: np.ndarray) -> np.ndarray:
    """`x` scaled to [0, 1]: its minimum at 0, its maximum at 1; a constant input gives ones,
    an empty one an empty array. Floats keep their precision (float32 cosines stay float32, so
    a caller's ties and sums are what they were); other numbers become float64."""
    x = np.asarray(x)
    if not np.issubdtype(x.dtype, np.floating):
        x = x.astype(np.float64)
    if x.size == 0:
        return x.copy()
    lo, hi = float(x.min()), float(x.max())
    return (x - lo) / (hi - lo) if hi > lo else np.ones_like(x)


def onto(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """`x` mapped onto [lo, hi] by its min-max scaling (a constant input: all at `hi`)."""
    return lo + (hi - lo) * minmax(x)
