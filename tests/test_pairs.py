"""Pair views against itertools (product, combinations) and the big example of "Iterating Over
Distinct Pairs in C++".

All comparisons are exact (indices and integer values).
"""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from physics.containers.pairs import Pair, distinct_pair_indices, distinct_pairs, pairs

seqs = st.lists(st.integers(-50, 50), max_size=25)
SETTINGS = settings(max_examples=100, deadline=None)


@SETTINGS
@given(seqs)
def test_views_iterate_in_nested_loop_order(xs):
    assert [tuple(p) for p in pairs(xs)] == list(itertools.product(xs, xs))
    assert [tuple(p) for p in distinct_pairs(xs)] == list(itertools.combinations(xs, 2))
    assert len(pairs(xs)) == len(xs) ** 2 and len(distinct_pairs(xs)) == len(xs) * (len(xs) - 1) // 2


@SETTINGS
@given(seqs, st.data())
def test_kth_pair_without_iterating_including_negative_k(xs, data):
    for view, ref in ((pairs(xs), list(itertools.product(range(len(xs)), repeat=2))),
                      (distinct_pairs(xs), list(itertools.combinations(range(len(xs)), 2)))):
        if not ref:
            with pytest.raises(IndexError, match="out of range for 0 pairs"):
                view[0]
            continue
        k = data.draw(st.integers(-len(ref), len(ref) - 1))
        p = view[k]
        assert (p.i, p.j) == ref[k] and p == (xs[ref[k][0]], xs[ref[k][1]])


def test_distinct_index_map_is_exact_for_huge_n():
    # beyond float64's exact integers (n^2 ~ 1e36): isqrt keeps the inverse exact
    n = 10**18
    view = distinct_pairs(range(n))
    for i, j in [(0, 1), (0, n - 1), (1, 2), (n // 3, n // 3 + 7), (n - 2, n - 1)]:
        k = i * n - i * (i + 1) // 2 + (j - i - 1)  # the forward row offset, written independently
        assert view.index_pair(k) == (i, j)
    assert (view[-1].i, view[-1].j) == (n - 2, n - 1)


@SETTINGS
@given(st.lists(st.integers(0, 9), min_size=2, max_size=8))
def test_composition_pairs_of_pairs(xs):
    inner = list(itertools.combinations(xs, 2))
    got = [(tuple(a), tuple(b)) for a, b in distinct_pairs(distinct_pairs(xs))]
    assert got == list(itertools.combinations(inner, 2))
    assert len(pairs(distinct_pairs(xs))) == len(inner) ** 2


def test_distinct_pairs_of_distinct_pairs_listing():
    v = [1, 2, 3, 4]
    got = [(tuple(a), tuple(b)) for a, b in distinct_pairs(distinct_pairs(v))]
    assert got[:3] == [((1, 2), (1, 3)), ((1, 2), (1, 4)), ((1, 2), (2, 3))]
    assert got[-1] == ((2, 4), (3, 4)) and len(got) == 15


def test_write_through_and_order_sensitive_mutation():
    v = [0, 1, 2, 3]
    p = distinct_pairs(v)[4]  # (1, 3)
    p.first, p.second = 10, 30
    assert v == [0, 10, 2, 30]
    distinct_pairs(v)[0] = (-1, -2)
    assert v == [-1, -2, 2, 30]
    # through a composed view: assigning a tuple to an inner pair writes both elements of v
    pp = distinct_pairs(distinct_pairs(v))[0]  # ((v0, v1), (v0, v2))
    pp.second = (7, 8)
    assert v == [7, -2, 8, 30]
    # mutation during iteration is seen by later pairs, as in the article's nested loops
    w = [1, 1, 1]
    for q in distinct_pairs(w):
        q.second = q.first + q.second
    assert w == [1, 2, 4]  # (0,1): w1=2; (0,2): w2=2; (1,2): w2=4
    a = np.zeros(3)
    pairs(a)[5].first = 4.0  # (1, 2)
    assert a.tolist() == [0.0, 4.0, 0.0]


def test_bad_input():
    with pytest.raises(ValueError, match="got int"):
        pairs(5)
    with pytest.raises(TypeError, match="got float"):
        distinct_pairs([1, 2])[0.5]
    with pytest.raises(ValueError, match="got -1"):
        next(distinct_pair_indices(-1))
    with pytest.raises(ValueError, match="got 3"):
        next(distinct_pair_indices(5, chunk=3))


def flat(i, j):
    i, j = np.broadcast_arrays(i, j)
    return i.ravel(), j.ravel()


@SETTINGS
@given(st.integers(0, 60), st.integers(4, 200))
def test_chunked_indices_cover_each_distinct_pair_once(n, chunk):
    seen = []
    for i, j in distinct_pair_indices(n, chunk):
        fi, fj = flat(i, j)
        assert fi.size <= chunk and np.all(fi < fj) and np.all(fj < n)
        seen.extend(zip(fi.tolist(), fj.tolist()))
    assert sorted(seen) == list(itertools.combinations(range(n), 2))  # sorted equal and no repeats


def test_even_sum_pairs_counted_in_bounded_memory():
    # The article's example: distinct pairs of 1..2^17 with an even sum -> 4294901760, which would
    # be 64 GB as a list of pairs. The (X[i] + X[j]) % 2 == 0 test is done as "equal parity", the same predicate
    # for integers, because it runs ~15x faster in numpy (bool compare vs int add + modulo).
    # Memory bound: no block exceeds `chunk` pairs, so the largest temporary is chunk bytes (bool)
    # plus two sqrt(chunk) gathers; exact integer count, no tolerance.
    n, chunk = 1 << 17, 1 << 22
    x = np.arange(1, n + 1)
    even = x % 2 == 0
    total = pairs_seen = 0
    for i, j in distinct_pair_indices(n, chunk):
        block = even[i] == even[j]
        assert block.size <= chunk
        pairs_seen += block.size
        total += np.count_nonzero(block)
    assert pairs_seen == n * (n - 1) // 2
    assert total == 4294901760
    # and the literal predicate agrees with the parity one on a slice of blocks
    blocks = itertools.islice(distinct_pair_indices(n, chunk), 0, None, 997)
    for i, j in blocks:
        assert np.array_equal((x[i] + x[j]) % 2 == 0, even[i] == even[j])


def test_pair_object():
    v = [5, 6]
    p = Pair(v, 1, 0)
    assert list(p) == [6, 5] and p[0] == 6 and len(p) == 2 and repr(p) == "(6, 5)" and p != (5, 6)
