"""Near-duplicate grouping of perceptual hashes, and the optional SSIM check."""
import numpy as np

from dgrag.kernels.image_lsh import candidate_pairs, group_near_duplicates, hamming, ssim


def test_groups_within_the_hamming_threshold_transitively():
    base = 0xF0F0_F0F0_0F0F_0F0F
    hashes = np.array([base, base ^ 0b111, base ^ 0b111 ^ (0b11 << 40), 0x1234_5678_9ABC_DEF0], dtype=np.uint64)
    assert hamming(hashes[0], hashes[1]) == 3
    labels = group_near_duplicates(hashes, threshold=6)
    assert labels.tolist() == [0, 0, 0, 3]
    assert group_near_duplicates(hashes, threshold=2).tolist() == [0, 1, 1, 3]  # 3 bits apart, then 2


def test_lsh_bands_find_every_pair_under_the_threshold():
    rng = np.random.default_rng(0)
    base = rng.integers(0, 2**63, 50, dtype=np.uint64)
    flips = [np.uint64(1 << int(b)) for b in rng.integers(0, 64, 50)]
    near = np.array([b ^ f for b, f in zip(base, flips)], dtype=np.uint64)
    pairs = candidate_pairs(np.concatenate([base, near]), bands=8)
    assert all((i, i + 50) in pairs for i in range(50))


def test_ssim_veto_and_value():
    a = np.tile(np.arange(64, dtype=float) * 4, (64, 1))
    assert abs(ssim(a, a) - 1.0) < 1e-12
    assert ssim(a, 255 - a) < 0
    hashes = np.array([1, 3], dtype=np.uint64)
    assert group_near_duplicates(hashes, 6, accept=lambda i, j: False).tolist() == [0, 1]
