"""`physics.containers.stable_order`: the compiled kernels' one stable sort, in arrays the caller keeps."""
import numpy as np
from hypothesis import given, settings, strategies as st

from physics.containers.stable_order import stable_order


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(-5, 5), max_size=70), st.booleans())
def test_the_stable_order_is_numpys_stable_argsort(values, as_float):
    """The order of integer or float keys, ties many (11 values): np.argsort(kind="stable"), the one
    permutation a stable sort has, exactly; the spare array's contents do not matter."""
    key = np.array(values, float if as_float else np.int64)
    order, spare = np.full(len(key), -1, np.int64), np.full(len(key), 7, np.int64)
    stable_order(key, order, spare)
    assert np.array_equal(order, np.argsort(key, kind="stable"))


def test_nan_keys_still_give_a_permutation():
    """Keys with NaNs (a diverged body's centre, before the divergence check stops the run): the
    order is still a permutation: no index lost or taken twice."""
    key = np.array([np.nan, 1.0, np.nan, 3.0, 2.0, 0.0, 5.0, 4.0])
    order, spare = np.empty(8, np.int64), np.empty(8, np.int64)
    stable_order(key, order, spare)
    assert sorted(order.tolist()) == list(range(8))
