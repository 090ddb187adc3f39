import numpy as np

from dgrag.kernels.scaling import minmax, onto


def test_minmax_puts_the_least_at_0_and_the_most_at_1():
    np.testing.assert_allclose(minmax(np.array([1.0, 3.0, 2.0])), [0.0, 1.0, 0.5])
    np.testing.assert_allclose(minmax([-2, 0, 2]), [0.0, 0.5, 1.0])  # integers scale as float64


def test_a_constant_input_is_all_ones_and_an_empty_one_stays_empty():
    assert minmax(np.array([2.0, 2.0])).tolist() == [1.0, 1.0]
    assert minmax(np.array([0.4])).tolist() == [1.0]
    assert minmax(np.array([])).shape == (0,)


def test_float32_stays_float32():
    out = minmax(np.array([0.1, 0.7, 0.4], dtype=np.float32))
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, [0.0, 1.0, 0.5], rtol=1e-6)


def test_onto_maps_onto_a_range():
    np.testing.assert_allclose(onto(np.array([5.0, 10.0, 7.5]), 0.2, 0.6), [0.2, 0.6, 0.4])
    np.testing.assert_allclose(onto(np.array([3.0, 3.0]), 0.2, 0.6), [0.6, 0.6])  # constant: the top
