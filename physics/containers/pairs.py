"""Lazy views over the pairs and the distinct pairs of a sequence ("Iterating Over
Distinct Pairs in C++", docs/references.md).

For a sequence X of length n, in the order of the article's nested index loops:

    pairs(X):          for i in range(n): for j in range(n):        (X[i], X[j])   n^2 of them
    distinct_pairs(X): for i in range(n): for j in range(i + 1, n): (X[i], X[j])   n(n-1)/2

Nothing is copied: a view holds the sequence, computes ``len`` and the k-th pair in O(1), and its
elements are `Pair` objects whose ``first``/``second`` read and write ``X[i]``/``X[j]`` (the
article's pair of references). A view is itself a sequence of pairs, so views compose:
``distinct_pairs(distinct_pairs(v))`` are pairs of pairs, and assigning a tuple to a pair writes
both of its elements through to ``v``. "Distinct" means distinct positions, not unequal values.

`distinct_pair_indices(n, chunk)` is the bulk path for numpy work on very many pairs: it yields
blocks of index arrays, never more than ``chunk`` pairs at a time (the article's 2^17-element example
has 8.6e9 pairs, 64 GB as a list).
"""
from collections.abc import Sequence
from math import isqrt

import numpy as np


class Pair:
    """The pair (X[i], X[j]) of a view, by reference: ``first``/``second`` read and write X.

    Unpacks (``a, b = p``), indexes (``p[0]``), and compares equal to a tuple of the same values.
    """

    __slots__ = ("_seq", "i", "j")

    def __init__(self, seq, i, j):
        self._seq, self.i, self.j = seq, i, j

    @property
    def first(self):
        return self._seq[self.i]

    @first.setter
    def first(self, value):
        self._seq[self.i] = value

    @property
    def second(self):
        return self._seq[self.j]

    @second.setter
    def second(self, value):
        self._seq[self.j] = value

    def __iter__(self):
        yield self.first
        yield self.second

    def __len__(self):
        return 2

    def __getitem__(self, k):
        return (self.first, self.second)[k]

    def __eq__(self, other):
        try:
            return tuple(self) == tuple(other)
        except TypeError:
            return NotImplemented

    def __repr__(self):
        return f"({self.first!r}, {self.second!r})"


class _PairView(Sequence):
    """A sequence of `Pair`s of ``seq``; subclasses define the count and the index map k -> (i, j)."""

    __slots__ = ("_seq",)

    def __init__(self, seq):
        try:
            len(seq)
            seq.__getitem__
        except (TypeError, AttributeError):
            raise ValueError(f"expected a sequence (len and indexing), got {type(seq).__name__}") from None
        self._seq = seq

    def __len__(self):
        return self.size  # (Python's len() is limited to sys.maxsize; size is not)

    def _k(self, k):
        size = self.size
        if not isinstance(k, (int, np.integer)):
            raise TypeError(f"pair index must be an integer, got {type(k).__name__}")
        if not -size <= k < size:
            raise IndexError(f"pair index {k} out of range for {size} pairs")
        return int(k) % size

    def __getitem__(self, k):
        return Pair(self._seq, *self.index_pair(self._k(k)))

    def __setitem__(self, k, value):
        """Assign a 2-sequence to the k-th pair: writes both elements through to the sequence."""
        i, j = self.index_pair(self._k(k))
        a, b = value
        self._seq[i] = a
        self._seq[j] = b

    def __repr__(self):
        return f"{type(self).__name__}(len={len(self)}, of {type(self._seq).__name__} of {len(self._seq)})"


class PairsView(_PairView):
    """All ordered pairs (X[i], X[j]), i, j in range(n), row by row: k = i n + j."""

    __slots__ = ()

    @property
    def size(self):
        """Number of pairs, n^2."""
        return len(self._seq) ** 2

    def index_pair(self, k):
        return divmod(k, len(self._seq))

    def __iter__(self):
        seq, n = self._seq, len(self._seq)
        for i in range(n):
            for j in range(n):
                yield Pair(seq, i, j)


class DistinctPairsView(_PairView):
    """The pairs (X[i], X[j]) with i < j, row by row (the nested loops' order).

    Row i starts at k = i n - i (i + 1) / 2. Counting from the end, k' = N - 1 - k lies in the
    row t = n - 2 - i that holds t + 1 pairs, with t (t + 1) / 2 <= k' < (t + 1)(t + 2) / 2, so
    t = floor((sqrt(8 k' + 1) - 1) / 2) (integer square root: exact for any n).
    """

    __slots__ = ()

    @property
    def size(self):
        """Number of pairs, n (n - 1) / 2."""
        n = len(self._seq)
        return n * (n - 1) // 2

    def index_pair(self, k):
        n = len(self._seq)
        back = self.size - 1 - k
        t = (isqrt(8 * back + 1) - 1) // 2
        return n - 2 - t, n - 1 - (back - t * (t + 1) // 2)

    def __iter__(self):
        seq, n = self._seq, len(self._seq)
        for i in range(n):
            for j in range(i + 1, n):
                yield Pair(seq, i, j)


def pairs(seq):
    """Lazy view of all n^2 ordered pairs of ``seq`` (see the module docstring)."""
    return PairsView(seq)


def distinct_pairs(seq):
    """Lazy view of the n(n-1)/2 pairs of distinct positions i < j of ``seq``."""
    return DistinctPairsView(seq)


def distinct_pair_indices(n, chunk=1 << 20):
    """Yield index arrays ``(i, j)`` that together cover every pair 0 <= i < j < n exactly once.

    Each yielded ``i`` and ``j`` broadcast against each other; their broadcast holds at most
    ``chunk`` pairs, every one with i < j. The triangle is cut into b x b tiles (b = isqrt(chunk)),
    tile rows top to bottom, tiles left to right:
      * tiles above the diagonal come as ``i`` of shape (b, 1) and ``j`` of shape (1, b), so numpy
        expressions such as ``X[i] + X[j]`` cost only two b-element gathers;
      * tiles on the diagonal come as flat (m,) arrays of their b(b-1)/2 pairs.
    Within a tile, pairs run row by row; overall this is *not* the nested-loop order (use
    `distinct_pairs` when order matters). ``np.broadcast_arrays(i, j)`` gives flat-able arrays.
    """
    n = int(n)
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    b = isqrt(int(chunk))
    if b < 2:
        raise ValueError(f"chunk must be >= 4 pairs (a 2 x 2 tile), got {chunk}")
    # A tile wider than n only costs time: triu_indices(b) would be rebuilt per call (broad phase, per step).
    b = min(b, max(n, 2))
    tri_i, tri_j = np.triu_indices(b, 1)
    for i0 in range(0, n, b):
        i1 = min(i0 + b, n)
        if i1 - i0 > 1:
            keep = tri_j < i1 - i0
            yield tri_i[keep] + i0, tri_j[keep] + i0
        rows = np.arange(i0, i1)[:, None]
        for j0 in range(i1, n, b):
            yield rows, np.arange(j0, min(j0 + b, n))[None, :]
