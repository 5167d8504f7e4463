"""A doubly linked list whose values and links live in two contiguous arrays (cw::list of
"Implementing Linked Lists with Contiguous Arrays", docs/references.md).

Layout:

    values  [---v0---][---v1---][---v2---] ...      one numpy array, any inline dtype
    links   prev next prev next prev next ...       (capacity, 2) array of small unsigned ints

The value of node ``h`` is ``values[h]``; there are no pointers, only indices ("handles"). The
index type is the smallest of uint8/16/32/64 whose maximum is at least the number of elements;
that maximum is the terminator (``NIL``: prev of the head, next of the tail). It is promoted as the
list grows (255 elements fit in uint8, the 256th promotes to uint16) and never demoted.

Invariants: the ``len(self)`` live nodes occupy storage slots ``0 .. len-1`` with no holes.
  * insert pushes the value to the back of the storage and relinks: no handle is invalidated;
  * erase(h) moves the storage back (slot ``len-1``) into the hole ``h``, relinks, and pops:
    the handle ``h`` now names the element that used to be ``len-1``, and ``len-1`` is invalid.
    Every other handle stays valid.
  * bulk operations that delete (remove, remove_if, unique, clear) compact the storage: all handles
    are invalidated. reverse, sort and merge relink without moving values of ``self``; splice and
    merge move the other list's values into ``self`` (appended to the storage), as the article says.

Handles are plain ``int``; "no element" (``end()`` in std::list) is ``None``. Whole-list
algorithms whose result does not depend on order (count, sum, any, all, fill, replace, the test
of remove/remove_if) run straight on the value array; list order, when needed, comes from one
compiled walk along the links (``order()``), never a per-element Python loop.
"""
from physics.core.compiled import kernel
import numpy as np

_INDEX_TYPES = (np.uint8, np.uint16, np.uint32, np.uint64)


def index_dtype(n):
    """Smallest unsigned dtype whose maximum (the terminator) is >= n, so indices 0..n-1 fit."""
    for t in _INDEX_TYPES:
        if n <= np.iinfo(t).max:
            return np.dtype(t)
    raise ValueError(f"list size {n} does not fit a uint64 index")


@kernel(nogil=True)
def walk(next_, head, nil, out):
    """Write the handles from ``head`` along ``next_`` into ``out``; return how many were written.

    Returns -1 if the chain does not end at ``nil`` within ``len(out)`` steps (a cycle, or a chain
    longer than expected): that is how `load` checks a file's links.
    """
    h = head
    k = 0
    while h != nil:
        if k == out.shape[0]:
            return -1
        out[k] = h
        h = next_[h]
        k += 1
    return k


def _keys(values, key):
    """The array an order-dependent algorithm compares: the values, a field of them, or key(values)."""
    if key is None:
        return values
    if isinstance(key, str):
        if values.dtype.names is None or key not in values.dtype.names:
            raise ValueError(f"key field {key!r} not in value dtype {values.dtype}")
        return values[key]
    return np.asarray(key(values))


class ContiguousList:
    """std::list-like doubly linked list over contiguous numpy storage (see the module docstring).

    ``ContiguousList(dtype)`` makes an empty list; ``ContiguousList.from_array(a, copy=...)`` a list
    whose order is the array's.
    """

    __slots__ = ("_values", "_links", "_size", "_head", "_tail", "_nil")

    def __init__(self, dtype=np.float64, capacity=0):
        dtype = np.dtype(dtype)
        if dtype.hasobject:
            raise ValueError(f"value dtype must store values inline, got {dtype} (holds Python objects)")
        if capacity < 0:
            raise ValueError(f"capacity must be >= 0, got {capacity}")
        idx = index_dtype(capacity)
        self._values = np.empty(capacity, dtype)
        self._links = np.empty((capacity, 2), idx)
        self._nil = int(np.iinfo(idx).max)
        self._size = 0
        self._head = self._tail = self._nil

    # -- construction ------------------------------------------------------------------------
    @classmethod
    def from_array(cls, values, copy=True):
        """A list of ``values`` in array order; ``copy=False`` adopts the (1-D, contiguous) array."""
        values = np.asarray(values)
        if values.ndim != 1:
            raise ValueError(f"values must be 1-D, got shape {values.shape}")
        if copy or not values.flags.c_contiguous:
            values = values.copy()
        n = len(values)
        lst = cls(values.dtype)
        lst._values = values
        lst._links = np.empty((n, 2), index_dtype(n))
        lst._nil = int(np.iinfo(lst._links.dtype).max)
        lst._size = n
        lst._link_in_order(np.arange(n))
        return lst

    def copy(self):
        """An independent copy: both arrays copied as they are, no relinking (the article's §2.1)."""
        out = ContiguousList.__new__(ContiguousList)
        out._values = self._values[: self._size].copy()
        out._links = self._links[: self._size].copy()
        out._size, out._head, out._tail, out._nil = self._size, self._head, self._tail, self._nil
        return out

    __copy__ = copy

    def save(self, path):
        """Write the list to an ``.npz`` file (values and links in storage order, head, tail)."""
        n = self._size
        np.savez(path, values=self._values[:n], links=self._links[:n],
                 head=np.int64(-1 if n == 0 else self._head), tail=np.int64(-1 if n == 0 else self._tail))

    @classmethod
    def load(cls, path):
        """Read a list written by `save`; its links are checked to form one chain over all values."""
        with np.load(path, allow_pickle=False) as f:
            try:
                values, links, head, tail = f["values"], f["links"], int(f["head"]), int(f["tail"])
            except KeyError as e:
                raise ValueError(f"{path}: not a ContiguousList file (missing {e})") from None
        n = len(values)
        if (values.ndim != 1 or links.shape != (n, 2) or links.dtype not in _INDEX_TYPES
                or n > np.iinfo(links.dtype).max):
            raise ValueError(f"{path}: values {values.shape} and links {links.shape} {links.dtype} do not match")
        lst = cls(values.dtype)
        if n == 0:
            return lst
        nil = int(np.iinfo(links.dtype).max)
        lst._values, lst._links, lst._size, lst._nil = values, np.ascontiguousarray(links), n, nil
        lst._head, lst._tail = head, tail
        order = np.empty(n, np.int64)
        ok = (0 <= head < n and 0 <= tail < n and walk(links[:, 1], head, nil, order) == n
              and order[-1] == tail and len(np.unique(order)) == n)
        if ok:  # prev must mirror next
            ok = links[head, 0] == nil and np.array_equal(links[order[1:], 0], order[:-1])
        if not ok:
            raise ValueError(f"{path}: links do not form one chain over the {n} values")
        return lst

    # -- size and storage --------------------------------------------------------------------
    def __len__(self):
        return self._size

    def __bool__(self):
        return self._size > 0

    @property
    def values(self):
        """The live values in *storage* order, a view: ``lst.values[h]`` is the value of handle h."""
        return self._values[: self._size]

    @property
    def links(self):
        """The live links in storage order, a view of shape (len, 2): ``links[h] = (prev, next)``.

        ``nil`` marks the ends. For compiled walks (``h = links[h, 1]`` until ``nil``); do not
        write to it unless you keep the list a single chain.
        """
        return self._links[: self._size]

    @property
    def nil(self):
        """The terminator: the largest value of the index dtype."""
        return self._nil

    def with_values(self, values):
        """A new list with a copy of these links and ``values`` (storage order: slot h -> values[h]).

        Carries another payload along the same list order without relinking (any dtype).
        """
        values = np.ascontiguousarray(values)
        if values.shape != (self._size,):
            raise ValueError(f"values must have shape ({self._size},), got {values.shape}")
        out = self.copy()
        out._values = values
        return out

    @property
    def dtype(self):
        return self._values.dtype

    @property
    def index_dtype(self):
        return self._links.dtype

    @property
    def capacity(self):
        return len(self._values)

    def reserve(self, capacity):
        """Make room for ``capacity`` elements (and the index type to address them) at once."""
        if capacity > self._nil:
            self._promote(capacity)
        if capacity > len(self._values):
            self._reallocate(capacity)

    def clear(self):
        """Remove every element (capacity and index type are kept). Invalidates all handles."""
        self._size = 0
        self._head = self._tail = self._nil

    def _promote(self, n):
        idx = index_dtype(n)
        nil = int(np.iinfo(idx).max)
        links = self._links.astype(idx)
        if self._size:  # the old terminator value is a valid index in the wider type: rewrite it
            links[self._head, 0] = nil
            links[self._tail, 1] = nil
            self._head, self._tail = int(self._head), int(self._tail)
        else:
            self._head = self._tail = nil
        self._links, self._nil = links, nil

    def _reallocate(self, capacity):
        n = self._size
        values = np.empty(capacity, self._values.dtype)
        values[:n] = self._values[:n]
        links = np.empty((capacity, 2), self._links.dtype)
        links[:n] = self._links[:n]
        self._values, self._links = values, links

    def _push_storage(self, value):
        """Append ``value`` to the storage (growing by doubling); return its slot."""
        n = self._size
        if n + 1 > self._nil:
            self._promote(n + 1)
        if n == len(self._values):
            self._reallocate(max(8, 2 * n))
        self._values[n] = value
        self._size = n + 1
        return n

    # -- handles -----------------------------------------------------------------------------
    def _handle(self, h):
        return None if h == self._nil else h

    def _check(self, h):
        if not (isinstance(h, (int, np.integer)) and 0 <= h < self._size):
            raise ValueError(f"handle {h!r} is not a live element of a list of {self._size}")
        return int(h)

    @property
    def head(self):
        """Handle of the first element, or None."""
        return self._handle(self._head)

    @property
    def tail(self):
        """Handle of the last element, or None."""
        return self._handle(self._tail)

    def next(self, h):
        """Handle after ``h`` in list order, or None."""
        return self._handle(self._links.item(self._check(h), 1))

    def prev(self, h):
        """Handle before ``h`` in list order, or None."""
        return self._handle(self._links.item(self._check(h), 0))

    # -- element access ----------------------------------------------------------------------
    def _nonempty(self, what):
        if self._size == 0:
            raise IndexError(f"{what} on an empty ContiguousList")

    @property
    def front(self):
        self._nonempty("front")
        return self._values[self._head]

    @property
    def back(self):
        self._nonempty("back")
        return self._values[self._tail]

    # -- insertion ---------------------------------------------------------------------------
    def insert(self, before, value):
        """Insert ``value`` before handle ``before`` (None = at the end); return its handle. O(1)."""
        if before is None:
            return self.push_back(value)
        before = self._check(before)
        h = self._push_storage(value)
        links = self._links
        p = links.item(before, 0)
        links[h, 0] = p
        links[h, 1] = before
        links[before, 0] = h
        if p == self._nil:
            self._head = h
        else:
            links[p, 1] = h
        return h

    def push_back(self, value):
        h = self._push_storage(value)
        links, t = self._links, self._tail
        links[h, 0] = t
        links[h, 1] = self._nil
        if t == self._nil:
            self._head = h
        else:
            links[t, 1] = h
        self._tail = h
        return h

    def push_front(self, value):
        if self._size == 0:
            return self.push_back(value)
        return self.insert(self._head, value)

    # -- erasure -----------------------------------------------------------------------------
    def erase(self, h):
        """Unlink ``h``, move the storage back into its slot, pop. Return the next handle (or None).

        Invalidates handle ``len-1`` (its element now lives at ``h``) and, of course, ``h``'s old
        element. The returned handle already accounts for the move.
        """
        h = self._check(h)
        links, nil = self._links, self._nil
        p, nx = links.item(h, 0), links.item(h, 1)
        if p == nil:
            self._head = nx
        else:
            links[p, 1] = nx
        if nx == nil:
            self._tail = p
        else:
            links[nx, 0] = p
        last = self._size - 1
        if h != last:  # move the back element into the hole and point its neighbours at h
            self._values[h] = self._values[last]
            lp, ln = links.item(last, 0), links.item(last, 1)
            links[h, 0] = lp
            links[h, 1] = ln
            if lp == nil:
                self._head = h
            else:
                links[lp, 1] = h
            if ln == nil:
                self._tail = h
            else:
                links[ln, 0] = h
            if nx == last:
                nx = h
        self._size = last
        return self._handle(nx)

    def pop_back(self):
        """Remove the last element and return its value."""
        self._nonempty("pop_back")
        value = self._values[self._tail].copy()
        self.erase(self._tail)
        return value

    def pop_front(self):
        """Remove the first element and return its value."""
        self._nonempty("pop_front")
        value = self._values[self._head].copy()
        self.erase(self._head)
        return value

    # -- traversal ---------------------------------------------------------------------------
    def handles(self):
        """Handles in list order, lazily (values may change during the walk; the links may not)."""
        links, nil, h = self._links, self._nil, self._head
        while h != nil:
            yield h
            h = links.item(h, 1)

    def __iter__(self):
        values = self._values
        for h in self.handles():
            yield values[h]

    def __reversed__(self):
        links, nil, h, values = self._links, self._nil, self._tail, self._values
        while h != nil:
            yield values[h]
            h = links.item(h, 0)

    def order(self):
        """Handles in list order as an int64 array: one compiled walk along the links, O(n)."""
        out = np.empty(self._size, np.int64)
        if self._size:
            walk(self._links[: self._size, 1], self._head, self._nil, out)
        return out

    def to_array(self):
        """The values in list order (a new array)."""
        return self._values[self.order()]

    def __eq__(self, other):
        if not isinstance(other, ContiguousList):
            return NotImplemented
        return len(self) == len(other) and bool(np.all(self.to_array() == other.to_array()))

    def __repr__(self):
        return f"ContiguousList({self.to_array()!r}, index_dtype={self._links.dtype})"

    # -- relinking ---------------------------------------------------------------------------
    def _link_in_order(self, order):
        """Relink the whole list so that it visits storage slots in ``order`` (a permutation)."""
        n = len(order)
        if n == 0:
            self._head = self._tail = self._nil
            return
        links = self._links
        links[order[0], 0] = self._nil
        links[order[1:], 0] = order[:-1]
        links[order[:-1], 1] = order[1:]
        links[order[-1], 1] = self._nil
        self._head, self._tail = int(order[0]), int(order[-1])

    def reverse(self):
        """Reverse the list order by swapping prev and next: links only, values untouched."""
        n = self._size
        self._links[:n] = self._links[:n, ::-1].copy()
        self._head, self._tail = self._tail, self._head

    def sort(self, key=None):
        """Stable sort by the values (or a field name / vectorized ``key(values)``): relinks only."""
        keys = _keys(self.values, key)
        order = self.order()
        self._link_in_order(order[np.argsort(keys[order], kind="stable")])

    def _append_storage(self, other):
        """Move ``other``'s values to the back of our storage; return their handles in other's order."""
        if other is self:
            raise ValueError("cannot splice or merge a list into itself")
        if other.dtype != self.dtype:
            raise ValueError(f"value dtypes differ: {self.dtype} and {other.dtype}")
        n, m = self._size, len(other)
        self.reserve(n + m)
        self._values[n : n + m] = other._values[:m]
        moved = other.order() + n
        self._size = n + m
        other.clear()
        return moved

    def splice(self, before, other, handle=None):
        """Move all of ``other`` (or only its element ``handle``) before ``before`` (None = end).

        The values move into our storage (the article's §2.2: splice needs the values contiguous). ``other``
        loses them: with ``handle`` given, as by ``other.erase(handle)``; otherwise it is cleared.
        Returns the handles of the moved elements here, in list order.
        """
        if handle is not None:
            if other is self:
                raise ValueError("splicing an element within one list: use erase and insert")
            value = other.values[other._check(handle)].copy()
            h = self.insert(before, value)
            other.erase(handle)
            return np.array([h])
        if before is not None:
            before = self._check(before)
        moved = self._append_storage(other)
        if len(moved) == 0:
            return moved
        links, nil = self._links, self._nil  # read after the append: it may have promoted the index
        links[moved[1:], 0] = moved[:-1]
        links[moved[:-1], 1] = moved[1:]
        first, last = int(moved[0]), int(moved[-1])
        p, nx = (self._tail, nil) if before is None else (links.item(before, 0), before)
        links[first, 0] = p
        links[last, 1] = nx
        if p == nil:
            self._head = first
        else:
            links[p, 1] = first
        if nx == nil:
            self._tail = last
        else:
            links[nx, 0] = last
        return moved

    def merge(self, other, key=None):
        """Merge sorted ``other`` into sorted ``self`` (stable, ours first on ties); ``other`` empties.

        Both lists must already be sorted by ``key`` (as std::list::merge requires). Our values stay
        where they are; other's are moved into our storage; then the merged order is linked.
        """
        mine = self.order()
        theirs = self._append_storage(other)
        order = np.concatenate([mine, theirs])
        keys = _keys(self._values[: self._size], key)[order]
        self._link_in_order(order[np.argsort(keys, kind="stable")])

    # -- bulk deletion (compacts storage, invalidates every handle) -------------------------
    def _delete(self, dead):
        """Delete the elements whose storage slots are marked in the boolean array ``dead``."""
        if not dead.any():
            return 0
        order = self.order()
        keep = ~dead
        new_handle = np.cumsum(keep) - 1
        n = int(keep.sum())
        self._values[:n] = self._values[: self._size][keep]
        self._size = n
        self._link_in_order(new_handle[order[keep[order]]])
        return len(dead) - n

    def remove(self, value):
        """Erase every element equal to ``value`` (tested on the value array); return how many."""
        return self._delete(self.values == value)

    def remove_if(self, predicate):
        """Erase every element where the *vectorized* ``predicate(values)`` is true; return how many."""
        dead = np.asarray(predicate(self.values), dtype=bool)
        if dead.shape != (self._size,):
            raise ValueError(f"predicate must return a ({self._size},) mask, got shape {dead.shape}")
        return self._delete(dead)

    def unique(self):
        """Erase each element equal to the one before it in *list* order (std::list::unique).

        The article lists unique among the order-free algorithms; "consecutive equal" is about list
        order, so the comparison is made along the links, the deletion on the value array.
        """
        if self._size < 2:
            return 0
        order = self.order()
        in_order = self._values[order]
        dead = np.zeros(self._size, bool)
        dead[order[1:]] = in_order[1:] == in_order[:-1]
        return self._delete(dead)

    # -- order-free algorithms straight on the value array ----------------------------------
    def count(self, value):
        return int(np.count_nonzero(self.values == value))

    def sum(self, key=None):
        return _keys(self.values, key).sum()

    def any(self, predicate=None):
        values = self.values
        return bool(np.any(values if predicate is None else predicate(values)))

    def all(self, predicate=None):
        values = self.values
        return bool(np.all(values if predicate is None else predicate(values)))

    def fill(self, value):
        self.values[...] = value

    def replace(self, old, new):
        """Set every element equal to ``old`` to ``new``; return how many."""
        values = self.values
        hit = values == old
        values[hit] = new
        return int(np.count_nonzero(hit))
