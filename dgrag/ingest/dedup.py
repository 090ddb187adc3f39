"""Merge near-duplicate images across the whole index (dHash/pHash + LSH + optional SSIM)."""
from __future__ import annotations

import numpy as np

from ..config import Settings
from ..kernels.image_lsh import group_near_duplicates, ssim
from ..store import Store
from .images import gray_thumbnail


def merge_near_duplicates(store: Store, settings: Settings) -> int:
    """Group representatives; keep the highest resolution of each group, redirect the rest."""
    if not settings.enable_image_content_dedup:
        return 0
    rows = store.images.hashes()
    if len(rows) < 2:
        return 0
    col = 1 if settings.image_dedup_hash_method == "dhash" else 2
    hashes = np.array([int(r[col], 16) for r in rows], dtype=np.uint64)
    accept = None
    if settings.enable_image_dedup_ssim:
        thumbs: dict[int, np.ndarray] = {}

        def thumb(i: int) -> np.ndarray:
            if i not in thumbs:
                thumbs[i] = gray_thumbnail(store.images.data(rows[i][0])[0])
            return thumbs[i]

        def accept(i: int, j: int) -> bool:
            return ssim(thumb(i), thumb(j)) >= settings.image_dedup_ssim_threshold

    labels = group_near_duplicates(hashes, settings.image_dedup_hamming_threshold, accept=accept)
    merged = 0
    for label in np.unique(labels):
        members = [rows[i] for i in np.flatnonzero(labels == label)]
        if len(members) < 2:
            continue
        best = max(members, key=lambda r: ((r[3] or 0) * (r[4] or 0), r[0]))
        best_node = store.nodes.image_by_sha(best[0])
        for dup in members:
            if dup is best:
                continue
            store.images.merge(dup[0], best[0])
            dup_node = store.nodes.image_by_sha(dup[0])
            if dup_node is not None and best_node is None:
                store.nodes.set_image_sha(dup_node, best[0], best[3], best[4])
                best_node = dup_node
            elif dup_node is not None:
                store.nodes.redirect(dup_node, best_node)
            merged += 1
    return merged
