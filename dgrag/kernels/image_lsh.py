"""Near-duplicate grouping of 64-bit perceptual hashes: LSH bands + Hamming + union-find.

Pure functions over arrays. With `bands` equal slices of the hash, two hashes within
Hamming distance < bands share at least one slice exactly (pigeonhole), so bucketing by
slice finds every pair under the threshold without comparing all pairs.
"""
from __future__ import annotations

import numpy as np


def hamming(a: int, b: int) -> int:
    return int(bin(int(a) ^ int(b)).count("1"))


def candidate_pairs(hashes: np.ndarray, bands: int = 8) -> set[tuple[int, int]]:
    hashes = np.asarray(hashes, dtype=np.uint64)
    width = 64 // bands
    mask = np.uint64((1 << width) - 1)
    pairs: set[tuple[int, int]] = set()
    for b in range(bands):
        keys = (hashes >> np.uint64(b * width)) & mask
        buckets: dict[int, list[int]] = {}
        for i, k in enumerate(keys.tolist()):
            buckets.setdefault(k, []).append(i)
        for members in buckets.values():
            for x in range(len(members)):
                for y in range(x + 1, len(members)):
                    pairs.add((members[x], members[y]))
    return pairs


def group_near_duplicates(hashes: np.ndarray, threshold: int = 6, bands: int = 8,
                          accept=None) -> np.ndarray:
    """Label per hash; equal labels = one near-duplicate group (transitive).

    `accept(i, j)` may veto a pair that passed the Hamming test (e.g. an SSIM check).
    """
    if threshold >= bands:
        bands = min(64, threshold + 1)
        while 64 % bands:
            bands += 1
    n = len(hashes)
    parent = np.arange(n)

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for i, j in sorted(candidate_pairs(hashes, bands)):
        if hamming(hashes[i], hashes[j]) <= threshold and (accept is None or accept(i, j)):
            ri, rj = find(i), find(j)
            if ri != rj:
                parent[max(ri, rj)] = min(ri, rj)
    return np.array([find(i) for i in range(n)], dtype=np.int64)


def ssim(a: np.ndarray, b: np.ndarray) -> float:
    """Global SSIM of two equal-size grayscale images (floats in [0, 255])."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    c1, c2 = (0.01 * 255) ** 2, (0.03 * 255) ** 2
    ma, mb = a.mean(), b.mean()
    va, vb = a.var(), b.var()
    cov = ((a - ma) * (b - mb)).mean()
    return float(((2 * ma * mb + c1) * (2 * cov + c2)) / ((ma * ma + mb * mb + c1) * (va + vb + c2)))
