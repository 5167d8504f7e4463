"""ContiguousList against a plain Python list model, under random operation sequences.

The model keeps the values (as small ints, mapped to each dtype by `make`) and the handle the list
should give each element, so every step checks values in list order, the handle of every element
(erase moves the storage back into the hole), the back links and the storage invariant.
Exact comparisons throughout: no arithmetic happens on the values.
"""
import numpy as np
import pytest
from hypothesis import settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from physics.containers.contiguous_list import ContiguousList, index_dtype

RECORD = np.dtype([("key", "<i4"), ("tag", "V5"), ("x", "<f8")])
DTYPES = {
    "uint8": (np.uint8, lambda k: k, None),
    "float64": (np.float64, lambda k: float(k), None),
    "record": (RECORD, lambda k: (k, bytes([k]) * 5, -k / 2), "key"),
    # an opaque 1024-byte record: byte order equals the int order because every byte is k
    "void1024": (np.dtype(("V", 1024)), lambda k: np.void(bytes([k]) * 1024), None),
}


def as_array(dtype, make, ints):
    out = np.empty(len(ints), dtype)
    for i, k in enumerate(ints):
        out[i] = make(k)
    return out


def ints_of(values):
    """The int each value was made from, vectorized (the first byte or field holds it)."""
    if values.dtype.names:
        return values["key"]
    if values.dtype.kind == "V":
        return values.view(np.uint8).reshape(len(values), values.dtype.itemsize)[:, 0]
    return values


small = st.integers(0, 5)  # few distinct values, so remove/unique/replace find duplicates


class ListMachine(RuleBasedStateMachine):
    dtype_name = "uint8"

    def __init__(self):
        super().__init__()
        self.dtype, self.make, self.key = DTYPES[self.dtype_name]
        self.lst = ContiguousList(self.dtype)
        self.model = []  # ints in list order
        self.handles = []  # the handle of each model element

    def value(self, k):
        return as_array(self.dtype, self.make, [k])[0]

    def relinked(self):
        """After a compaction every handle is new: take them from the list (values still checked)."""
        self.handles = [int(h) for h in self.lst.handles()]

    @initialize(ks=st.lists(small, max_size=8), copy=st.booleans())
    def start(self, ks, copy):
        self.lst = ContiguousList.from_array(as_array(self.dtype, self.make, ks), copy=copy)
        self.model = list(ks)
        self.handles = list(range(len(ks)))

    @rule(k=small)
    def push_back(self, k):
        self.handles.append(self.lst.push_back(self.value(k)))
        self.model.append(k)

    @rule(k=small)
    def push_front(self, k):
        self.handles.insert(0, self.lst.push_front(self.value(k)))
        self.model.insert(0, k)

    @rule(k=small, where=st.floats(0, 1))
    def insert(self, k, where):
        i = int(where * len(self.model))
        before = self.handles[i] if i < len(self.model) else None
        self.handles.insert(i, self.lst.insert(before, self.value(k)))
        self.model.insert(i, k)

    @precondition(lambda self: self.model)
    @rule(where=st.floats(0, 1, exclude_max=True))
    def erase(self, where):
        i = int(where * len(self.model))
        h, last = self.handles[i], len(self.model) - 1
        returned = self.lst.erase(h)
        del self.model[i], self.handles[i]
        self.handles = [h if x == last else x for x in self.handles]  # the back moved into the hole
        assert returned == (self.handles[i] if i < len(self.handles) else None)

    @precondition(lambda self: self.model)
    @rule(front=st.booleans())
    def pop(self, front):
        i = 0 if front else -1
        got = self.lst.pop_front() if front else self.lst.pop_back()
        assert got == self.value(self.model[i])
        self.erase_model_at(i % len(self.model))

    def erase_model_at(self, i):
        h, last = self.handles[i], len(self.model) - 1
        del self.model[i], self.handles[i]
        self.handles = [h if x == last else x for x in self.handles]

    @rule()
    def reverse(self):
        self.lst.reverse()
        self.model.reverse()
        self.handles.reverse()

    @rule()
    def sort(self):
        self.lst.sort(key=self.key)
        pairs = sorted(zip(self.model, self.handles), key=lambda p: p[0])  # stable, like the list
        self.model = [k for k, _ in pairs]
        self.handles = [h for _, h in pairs]

    @rule(k=small)
    def remove(self, k):
        assert self.lst.remove(self.value(k)) == self.model.count(k)
        self.model = [x for x in self.model if x != k]
        self.relinked()

    @rule(k=small)
    def remove_if_key_below(self, k):
        self.lst.remove_if(lambda v: ints_of(v) < k)
        self.model = [x for x in self.model if x >= k]
        self.relinked()

    @rule()
    def unique(self):
        self.lst.unique()
        self.model = [x for i, x in enumerate(self.model) if i == 0 or x != self.model[i - 1]]
        self.relinked()

    @rule(old=small, new=small)
    def replace(self, old, new):
        assert self.lst.replace(self.value(old), self.value(new)) == self.model.count(old)
        self.model = [new if x == old else x for x in self.model]

    @rule(k=small)
    def count(self, k):
        assert self.lst.count(self.value(k)) == self.model.count(k)

    @rule(ks=st.lists(small, max_size=6), where=st.floats(0, 1), single=st.booleans())
    def splice(self, ks, where, single):
        other = ContiguousList.from_array(as_array(self.dtype, self.make, ks))
        i = int(where * len(self.model))
        before = self.handles[i] if i < len(self.model) else None
        if single and ks:
            moved = self.lst.splice(before, other, other.tail)
            assert other.to_array().tobytes() == as_array(self.dtype, self.make, ks[:-1]).tobytes()
            ks = ks[-1:]
        else:
            moved = self.lst.splice(before, other)
            assert len(other) == 0
        self.model[i:i] = ks
        self.handles[i:i] = [int(h) for h in moved]

    @rule(ks=st.lists(small, max_size=6))
    def merge(self, ks):
        self.sort()
        other = ContiguousList.from_array(as_array(self.dtype, self.make, sorted(ks)))
        self.lst.merge(other, key=self.key)
        assert len(other) == 0
        self.model = sorted(self.model + ks)  # stable: ours come first among equal keys
        self.relinked()

    @rule()
    def copy_round_trip(self):
        c = self.lst.copy()
        assert c == self.lst and c.index_dtype == self.lst.index_dtype

    @invariant()
    def matches_model(self):
        lst = self.lst
        assert len(lst) == len(self.model)
        expected = as_array(self.dtype, self.make, self.model)
        assert lst.to_array().tobytes() == expected.tobytes()
        assert [int(h) for h in lst.handles()] == self.handles
        assert [int(h) for h in lst.order()] == self.handles
        assert as_array(self.dtype, lambda v: v, list(reversed(lst))).tobytes() == expected[::-1].tobytes()
        assert lst.head == (self.handles[0] if self.handles else None)
        assert lst.tail == (self.handles[-1] if self.handles else None)
        assert sorted(self.handles) == list(range(len(self.model)))  # no holes in the storage
        for a, b in zip(self.handles, self.handles[1:]):
            assert lst.next(a) == b and lst.prev(b) == a
        assert len(lst) <= np.iinfo(lst.index_dtype).max  # the terminator is never a live index


def make_machine(name):
    machine = type(f"ListMachine_{name}", (ListMachine,), {"dtype_name": name})
    machine.TestCase.settings = settings(max_examples=60, stateful_step_count=30, deadline=None)
    return machine.TestCase


TestUint8 = make_machine("uint8")
TestFloat64 = make_machine("float64")
TestRecord = make_machine("record")
TestVoid1024 = make_machine("void1024")


@pytest.mark.parametrize("boundary", [255, 65535])
def test_index_type_promotes_across_boundary(boundary):
    # `boundary` elements fit the narrow type (indices 0..boundary-1, terminator = boundary);
    # one more needs the next wider type. Build in a nonlinear order so links must survive.
    narrow, wide = index_dtype(boundary), index_dtype(boundary + 1)
    assert np.iinfo(narrow).max == boundary and wide.itemsize == 2 * narrow.itemsize
    lst = ContiguousList(np.int64)
    expected = []
    for k in range(boundary):
        if k % 2:
            lst.push_back(k)
            expected.append(k)
        else:
            lst.push_front(k)
            expected.insert(0, k)
    assert lst.index_dtype == narrow
    lst.insert(lst.next(lst.head), -1)
    expected.insert(1, -1)
    assert lst.index_dtype == wide
    assert lst.to_array().tolist() == expected
    assert lst.prev(lst.head) is None and lst.next(lst.tail) is None  # terminators rewritten
    assert list(reversed(lst)) == expected[::-1]


def test_promotion_by_splice_and_reserve():
    a = ContiguousList.from_array(np.arange(200))
    b = ContiguousList.from_array(np.arange(200, 400))
    a.splice(a.head, b)
    assert a.index_dtype == np.uint16
    assert a.to_array().tolist() == list(range(200, 400)) + list(range(200))
    c = ContiguousList(np.float32)
    c.reserve(70000)
    assert c.index_dtype == np.uint32 and c.capacity == 70000 and len(c) == 0


def test_to_array_order_for_back_mid_and_random_insertion():
    rng = np.random.default_rng(0)
    n = 3000
    back, mid, rand = ContiguousList(np.int32), ContiguousList(np.int32), ContiguousList(np.int32)
    m_back, m_mid, m_rand = [], [], []
    middle = None
    for k in range(n):
        back.push_back(k)
        m_back.append(k)
        # mid: insert before the element at position n//2, whose handle is tracked: after the
        # insert the new middle (n+1)//2 is the new element when n is even, else the old one
        m_mid.insert(len(m_mid) // 2, k)
        h = mid.insert(middle, k)
        if len(mid) % 2 == 1:
            middle = h
        if rng.random() < 0.5:
            rand.push_front(k)
            m_rand.insert(0, k)
        else:
            rand.push_back(k)
            m_rand.append(k)
    assert back.to_array().tolist() == m_back
    assert mid.to_array().tolist() == m_mid
    assert rand.to_array().tolist() == m_rand
    assert np.array_equal(rand.values, np.arange(n))  # insertion = push back into the storage


@pytest.mark.parametrize("dtype", [np.int16, RECORD, np.dtype(("V", 3))])
def test_save_load_round_trip(tmp_path, dtype):
    rng = np.random.default_rng(1)
    values = np.frombuffer(rng.bytes(300 * np.dtype(dtype).itemsize), dtype)
    lst = ContiguousList.from_array(values)
    for h in rng.permutation(300)[:50]:
        lst.push_front(values[h])
    lst.erase(7)
    lst.reverse()
    lst.save(tmp_path / "l.npz")
    back = ContiguousList.load(tmp_path / "l.npz")
    assert back.to_array().tobytes() == lst.to_array().tobytes()
    assert back.index_dtype == lst.index_dtype and back.order().tolist() == lst.order().tolist()
    empty = ContiguousList(dtype)
    empty.save(tmp_path / "e.npz")
    assert len(ContiguousList.load(tmp_path / "e.npz")) == 0


def test_load_rejects_broken_links(tmp_path):
    lst = ContiguousList.from_array(np.arange(5.0))
    lst.save(tmp_path / "l.npz")
    with np.load(tmp_path / "l.npz") as f:
        parts = dict(f)
    parts["links"][2, 1] = 0  # 0 -> 1 -> 2 -> 0: a cycle
    np.savez(tmp_path / "bad.npz", **parts)
    with pytest.raises(ValueError, match="one chain"):
        ContiguousList.load(tmp_path / "bad.npz")
    np.savez(tmp_path / "x.npz", values=np.arange(3))
    with pytest.raises(ValueError, match="missing"):
        ContiguousList.load(tmp_path / "x.npz")


def test_construction_by_move_and_copy():
    a = np.arange(10.0)
    moved = ContiguousList.from_array(a, copy=False)
    copied = ContiguousList.from_array(a, copy=True)
    assert np.shares_memory(moved.values, a) and not np.shares_memory(copied.values, a)
    c = moved.copy()
    c.fill(0.0)
    assert moved.to_array().tolist() == list(range(10)) and c.sum() == 0


def test_order_free_algorithms_on_the_value_array():
    lst = ContiguousList.from_array(np.array([3, 1, 4, 1, 5, 9, 2, 6], np.int64))
    lst.reverse()
    assert lst.sum() == 31 and lst.count(1) == 2
    assert lst.any(lambda v: v > 8) and not lst.all(lambda v: v > 1) and lst.all()
    rec = ContiguousList.from_array(np.array([(2, b"a" * 5, 0.5), (1, b"b" * 5, 1.5)], RECORD))
    assert rec.sum("x") == 2.0 and rec.sum(lambda v: v["key"] * 10) == 30
    rec.sort("key")
    assert rec.to_array()["key"].tolist() == [1, 2] and rec.front["key"] == 1 and rec.back["key"] == 2


def test_bad_input_names_what_was_received():
    lst = ContiguousList(np.int8)
    with pytest.raises(IndexError, match="empty"):
        lst.pop_back()
    with pytest.raises(ValueError, match="handle 0"):
        lst.erase(0)
    with pytest.raises(ValueError, match=r"shape \(2, 2\)"):
        ContiguousList.from_array(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="object"):
        ContiguousList(object)
    with pytest.raises(ValueError, match="dtypes differ"):
        lst.splice(None, ContiguousList(np.int16))
    with pytest.raises(ValueError, match="key field 'nope'"):
        ContiguousList(RECORD).sort("nope")
    with pytest.raises(ValueError, match=r"\(0,\) mask"):
        lst.remove_if(lambda v: True)


def test_with_values_carries_the_order():
    lst = ContiguousList.from_array(np.arange(6))
    lst.reverse()
    lst.erase(2)
    other = lst.with_values(np.asarray(lst.values * 10.0))
    assert other.to_array().tolist() == [x * 10.0 for x in lst.to_array().tolist()]
    assert lst.links.shape == (5, 2) and lst.nil == 255
    with pytest.raises(ValueError, match=r"shape \(5,\), got \(4,\)"):
        lst.with_values(np.zeros(4))
