import numpy as np
import pytest

from core.sampling import draw_keys, row_keys, smallest_drawn


def _naive_smallest_drawn(keys, draw, k, excluded):
    """The reference: every draw key formed, the excluded entries dropped, the rest sorted."""
    drawn = draw_keys(keys, draw)
    outside = np.flatnonzero(~np.isin(keys, excluded))
    order = outside[np.argsort(drawn[outside], kind="stable")][:k]
    return order, drawn[order]


@pytest.mark.parametrize("k", [0, 1, 10, 199, 200, 500])
@pytest.mark.parametrize("n_excluded", [0, 1, 150])
def test_smallest_drawn_matches_sorting_every_draw_key(k, n_excluded):
    rng = np.random.default_rng(k + n_excluded)
    keys = row_keys(rng.standard_normal((200, 3)), 5)
    excluded = np.sort(rng.choice(keys, n_excluded, replace=False))
    for draw in (0, 1, 17):
        chosen, chosen_keys = smallest_drawn(keys, draw, k, excluded)
        expected, expected_keys = _naive_smallest_drawn(keys, draw, k, excluded)
        np.testing.assert_array_equal(chosen, expected)
        np.testing.assert_array_equal(chosen_keys, expected_keys)
        assert chosen.size == min(k, 200 - n_excluded)


def test_smallest_drawn_over_the_whole_uint64_range():
    rng = np.random.default_rng(3)
    keys = np.concatenate([rng.integers(0, 2**64, 3000, dtype=np.uint64), [np.uint64(0), np.uint64(2**64 - 1)]])
    excluded = np.sort(np.concatenate([rng.choice(keys, 1000, replace=False), [np.uint64(0)]]))
    for k in (7, 2000):
        np.testing.assert_array_equal(smallest_drawn(keys, 9, k, excluded)[0],
                                      _naive_smallest_drawn(keys, 9, k, excluded)[0])


def test_smallest_drawn_ignores_excluded_keys_that_are_not_there_and_rejects_an_unsorted_list():
    keys = row_keys(np.arange(30.0).reshape(10, 3), 0)
    absent = np.array([1, 2, 3], np.uint64)
    np.testing.assert_array_equal(smallest_drawn(keys, 4, 3, absent)[0], smallest_drawn(keys, 4, 3, [])[0])
    with pytest.raises(ValueError, match="excluded must be sorted"):
        smallest_drawn(keys, 4, 3, np.sort(keys)[::-1])
