"""Thread-safety guarantees stated in the README: one List, Dict or the global
registry shared by several Python threads behaves like Python's own list and
dict (every operation is atomic; readers see only values that were stored)."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any

import tvmffi
import tvmffi.testing as testing

THREADS = 4
ROUNDS = 3000


def start_together(bodies: list[Callable[[], None]], switch_interval: float | None = None) -> None:
    """Run each body on its own thread, all started together (and with the interpreter
    switching threads every ``switch_interval`` seconds when given); re-raises the first
    failure."""
    errors: list[BaseException] = []
    start = threading.Barrier(len(bodies))

    def wrap(fn: Callable[[], None]) -> Callable[[], None]:
        def body() -> None:
            start.wait()
            try:
                fn()
            except BaseException as e:  # reported to the main thread
                errors.append(e)

        return body

    threads = [threading.Thread(target=wrap(fn)) for fn in bodies]
    old = sys.getswitchinterval()
    if switch_interval is not None:
        sys.setswitchinterval(switch_interval)
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)
    if errors:
        raise errors[0]


def run_threads(writer: Callable[[], None], reader: Callable[[], None]) -> None:
    """One writer and THREADS - 1 readers, started together; re-raises the first failure."""
    start_together([writer] + [reader] * (THREADS - 1))


def test_list_mutated_while_other_threads_read() -> None:
    lst = tvmffi.List(list(range(8)))

    def writer() -> None:
        for i in range(ROUNDS):
            lst.append(i)
            lst.insert(0, i)
            lst[len(lst) // 2] = i
            lst.pop()
            del lst[0]
            if len(lst) > 64:
                lst.clear()
                lst.extend(range(8))

    def reader() -> None:
        for _ in range(ROUNDS):
            n = len(lst)
            for i in range(min(n, 4)):
                try:
                    v = lst[i]
                except IndexError:
                    continue  # shrunk since len(): allowed, as with a Python list
                assert type(v) is int, v
            for v in list(lst):
                assert type(v) is int, v
            assert all(type(v) is int for v in testing.echo(lst))

    run_threads(writer, reader)


def test_dict_mutated_while_other_threads_read() -> None:
    d = tvmffi.Dict({i: i for i in range(8)})

    def writer() -> None:
        for i in range(ROUNDS):
            d[i % 32] = i
            if i % 3 == 0:
                d.pop(i % 29, None)
            if i % 500 == 0:
                d.clear()

    def reader() -> None:
        for _ in range(ROUNDS // 4):
            for k, v in list(d.items()):
                assert type(k) is int and type(v) is int, (k, v)
            got = d.get(3)
            assert got is None or type(got) is int
            assert len(d) >= 0

    run_threads(writer, reader)


def test_global_function_removed_while_other_threads_look_it_up() -> None:
    name = "tests.threads.transient"
    remove = tvmffi.get_global_func("ffi.FunctionRemoveGlobal")

    def writer() -> None:
        for i in range(ROUNDS):
            tvmffi.register_global_func(name, lambda x, i=i: x + i, override=True)
            remove(name)

    def reader() -> None:
        for _ in range(ROUNDS):
            f = tvmffi.get_global_func(name, allow_missing=True)
            if f is not None:
                assert isinstance(f(1), int)
            if _ % 200 == 0:
                assert "ffi.Array" in tvmffi.list_global_func_names()

    run_threads(writer, reader)
    assert tvmffi.get_global_func(name, allow_missing=True) is None


def test_runtime_builtins_keep_the_gil() -> None:
    assert tvmffi.get_global_func("ffi.ListAppend").release_gil is False
    assert tvmffi.get_global_func("ffi.FunctionRemoveGlobal").release_gil is False
    it = tvmffi.get_global_func("ffi.MapForwardIterFunctor")(tvmffi.Map({1: 2}))
    assert it.release_gil is False
    assert tvmffi.get_global_func("testing.echo").release_gil is True


def test_py_class_key_decorated_from_threads_at_once_is_claimed_once() -> None:
    # Threads decorating classes with one type key: one gets it, the others are told it
    # is taken. (The lookup and the allocation were two steps: several threads found
    # the key free and all registered fields on one type, "Duplicate field name".)
    from tvmffi.dataclasses import field, py_class

    keys = [f"test_threads.Claimed{i}" for i in range(20)]
    won: list[tuple[str, type]] = []

    def body() -> None:
        for key in keys:
            try:

                @py_class(key)
                class C(tvmffi.Object):
                    a: int
                    b: list[int] = field(default_factory=list)

                won.append((key, C))
            except ValueError as e:
                if "already registered" not in str(e):
                    raise

    start_together([body] * 8)
    assert sorted(k for k, _ in won) == sorted(keys)
    for _, cls in won:
        obj = cls(3, [1, 2])
        assert obj.a == 3 and list(obj.b) == [1, 2]


def test_py_classes_registered_from_threads_at_once() -> None:
    # Each registration drops generated subclasses, scanning the class registry with a
    # Python test per entry: another thread registering meanwhile made that scan fail
    # with "dictionary changed size during iteration". Frequent thread switches.
    from tvmffi.dataclasses import py_class

    def registrar(t: int) -> Callable[[], None]:
        def body() -> None:
            for i in range(40):

                @py_class(f"test_threads.Many{t}_{i}")
                class C(tvmffi.Object):
                    a: int

                assert C(i).a == i

        return body

    start_together([registrar(t) for t in range(THREADS)], switch_interval=1e-6)


def test_structural_check_and_call_are_one_step_for_other_threads() -> None:
    # structural_* check their input (no cycle, fits the stack) before the runtime's
    # recursion. A thread making a List contain itself between the check and the call
    # overflowed the runtime's C stack (segfault within a second of this loop).
    lst = tvmffi.List([1, tvmffi.List([2])])
    done = threading.Event()
    ops = [
        tvmffi.structural_hash,
        lambda v: tvmffi.structural_equal(v, v),
        tvmffi.StructuralKey,
        tvmffi.serialization.to_json_graph_str,
        lambda v: tvmffi.structural_walk(v, ()),
    ]

    def reader() -> None:
        try:
            for i in range(20000):
                try:
                    ops[i % len(ops)](lst)
                except ValueError as e:  # it was cyclic when checked
                    assert "Cycle detected" in str(e)
        finally:
            done.set()

    def writer() -> None:
        while not done.is_set():
            lst.append(lst)
            lst.pop()

    start_together([reader, writer], switch_interval=1e-6)


def test_classes_registered_while_objects_of_unregistered_types_are_made() -> None:
    # Objects of a type without a class get one made on the fly; each registration drops
    # the made classes. Two registrations dropping the same made class at once failed
    # with `KeyError: <index>` (the second found it gone), after a py_class had claimed
    # its type key, so the class could not be defined again ("type key ... is already
    # registered"). Registration is one step for every other thread.
    from tvmffi.dataclasses import py_class

    def body(t: int) -> Callable[[], None]:
        def run() -> None:
            for i in range(3000):
                u = testing.make_unregistered_object()
                assert u.v1 == 41 and u.v2 == 42

                @tvmffi.register_object("testing.TestIntPair")
                class Pair(testing.TestIntPair):
                    __slots__ = ()

                if i % 300 == 0:

                    @py_class(f"test_threads.WhileMaking{t}_{i}")
                    class C(tvmffi.Object):
                        a: int

                    assert C(i).a == i

        return run

    try:
        start_together([body(t) for t in range(THREADS)], switch_interval=1e-6)
    finally:  # TestIntPair's own class back for the other tests
        tvmffi.register_object("testing.TestIntPair")(testing.TestIntPair)
    assert type(testing.make_unregistered_object()).__name__ == "TestUnregisteredObject"


# ---- eight threads at once (the free-threaded build runs them truly in parallel) ----
EIGHT = 8
BIG = 10**12  # ints above 2**30: each store makes a new object and frees the old one


def test_python_list_mutated_while_converted() -> None:
    # A list argument was converted from its borrowed items: without a GIL another thread
    # replacing an item freed it under the conversion (segfaults in seq_to_array).
    lst: list[int | float] = [BIG + i for i in range(64)]
    done = threading.Event()

    def writer() -> None:
        try:
            for i in range(ROUNDS * 20):
                # a new object each store, the old one freed (its memory soon another's)
                lst[i % 64] = BIG + i if i % 3 else float(i)
                if i % 8 == 0:
                    lst.append(BIG + i)
                    del lst[-1]
        finally:
            done.set()

    def reader() -> None:
        while not done.is_set():
            got = testing.echo(lst)
            assert len(got) in (64, 65), len(got)
            assert all((type(v) is int and v >= BIG) or type(v) is float for v in got), got

    start_together([writer] + [reader] * (EIGHT - 1))


def test_python_dict_mutated_while_converted() -> None:
    d: dict[int, int] = {i: BIG + i for i in range(16)}
    done = threading.Event()

    def writer() -> None:
        try:
            for i in range(ROUNDS * 4):
                d[i % 16] = BIG + i
                d[100] = BIG
                del d[100]
        finally:
            done.set()

    def reader() -> None:
        while not done.is_set():
            got = dict(testing.echo(d).items())
            assert set(got) - {100} == set(range(16)), sorted(got)
            assert all(type(v) is int and v >= BIG for v in got.values())

    start_together([writer] + [reader] * (EIGHT - 1))


def test_one_runtime_list_shared_by_eight_threads() -> None:
    lst = tvmffi.List()
    per = 400

    def body(t: int) -> Callable[[], None]:
        def run() -> None:
            for i in range(per):
                lst.append(t * per + i)
                last = lst[len(lst) - 1]
                assert type(last) is int
                lst[i % len(lst)] = lst[i % len(lst)]  # drops and stores one element
                if i % 40 == 0:
                    assert all(type(v) is int for v in lst)
                    assert all(type(v) is int for v in testing.echo(lst))

        return run

    start_together([body(t) for t in range(EIGHT)])
    assert sorted(lst) == list(range(EIGHT * per))


def test_one_runtime_dict_and_map_shared_by_eight_threads() -> None:
    d = tvmffi.Dict()
    m = tvmffi.Map({i: str(i) for i in range(32)})
    per = 300

    def body(t: int) -> Callable[[], None]:
        def run() -> None:
            for i in range(per):
                key = t * per + i
                d[key] = key * 2
                assert d[key] == key * 2
                if i % 2:
                    assert d.pop(key) == key * 2
                assert m[i % 32] == str(i % 32)
                if i % 50 == 0:
                    assert all(v == k * 2 for k, v in list(d.items()))
                    assert sorted(m.keys()) == list(range(32))

        return run

    start_together([body(t) for t in range(EIGHT)])
    assert sorted(d.keys()) == [t * per + i for t in range(EIGHT) for i in range(0, per, 2)]


def test_attribute_caches_from_eight_threads() -> None:
    # One field read on objects of two FFI types (the base class's field on a derived
    # object) from every thread: the per-field check cache flips between them.
    def body(t: int) -> Callable[[], None]:
        def run() -> None:
            for i in range(ROUNDS):
                make = testing.create_object
                base = make("testing.TestObjectBase", v_i64=i, v_f64=0.5, v_str="b")
                derived = make("testing.TestObjectDerived", v_i64=-i, v_f64=1.5, v_str="d",
                               v_map={}, v_array=[])  # fmt: skip
                assert base.v_i64 == i and derived.v_i64 == -i
                assert base.v_str == "b" and derived.v_str == "d"
                pair = testing.TestIntPair(t, i)
                assert (pair.a, pair.b) == (t, i)
                u = testing.make_unregistered_object()
                assert u.v1 == 41 and u.v2 == 42

        return run

    start_together([body(t) for t in range(EIGHT)])


def test_tensors_from_eight_threads() -> None:
    np = __import__("pytest").importorskip("numpy")
    dtypes = ["float32", "int8", "float64", "uint16", "int64", "float16"]

    def body(t: int) -> Callable[[], None]:
        def run() -> None:
            for i in range(ROUNDS // 3):
                dt = dtypes[(t + i) % len(dtypes)]
                a = np.full((2, t + 1), i % 100, dtype=dt)
                ta = tvmffi.from_dlpack(a)
                assert tuple(ta.shape) == (2, t + 1) and str(ta.dtype) == dt
                testing.nop(a, a, a)
                back = testing.echo(a)
                assert np.from_dlpack(back).tolist() == a.tolist()
                view = tvmffi.TensorView(a)
                assert tuple(testing.echo(view).shape) == (2, t + 1)

        return run

    start_together([body(t) for t in range(EIGHT)])


def test_headline_calls_from_eight_threads() -> None:
    nop, add_one, echo = testing.nop, testing.add_one, testing.echo
    pair = testing.TestIntPair(3, 4)

    def body(t: int) -> Callable[[], None]:
        def run() -> None:
            for i in range(ROUNDS):
                assert nop() is None
                assert add_one(i) == i + 1
                assert list(echo([t, i, "x"])) == [t, i, "x"]
                assert pair.a == 3 and pair.sum() == 7
                assert echo(f"s{i}") == f"s{i}"

        return run

    start_together([body(t) for t in range(EIGHT)])


def test_object_field_written_while_other_threads_read_it() -> None:
    # An object-valued field replaced by one thread (its old value dropped) while the
    # others read it: a reader must get the old or the new value, never a freed one.
    obj = testing.create_object(
        "testing.TestObjectDerived", v_i64=0, v_f64=0.0, v_str="s", v_map={}, v_array=[0]
    )
    done = threading.Event()

    def writer() -> None:
        try:
            for i in range(ROUNDS * 2):
                obj.v_array = [i, i, i]
                obj.v_str = f"a string of some length, heap allocated {i}"
        finally:
            done.set()

    def reader() -> None:
        while not done.is_set():
            arr = list(obj.v_array)
            assert len(arr) in (1, 3) and len(set(arr)) == 1, arr
            assert obj.v_str.startswith(("s", "a string")), obj.v_str

    start_together([writer] + [reader] * (EIGHT - 1))


def test_handles_threads_share_are_freed_once_unreachable() -> None:
    # A function looked up by name and a class's field and method descriptors are
    # loaded by every thread without their counts written (deferred reference
    # counting on a free-threaded build): the garbage collector still frees them.
    import gc
    import weakref

    f = tvmffi.get_global_func("testing.add_one")
    gone_f = weakref.ref(f)
    results: list[int] = []

    def calls(g: Any) -> Callable[[], None]:
        def run() -> None:
            for i in range(ROUNDS):
                results.append(g(i))

        return run

    bodies = [calls(f) for _ in range(EIGHT)]
    start_together(bodies)
    assert sorted(results) == sorted(list(range(1, ROUNDS + 1)) * EIGHT)
    del f, bodies
    gc.collect()
    assert gone_f() is None

    # A method over a Python function that refers back to its class: a cycle through
    # the descriptor, which the collector sees.
    from tvmffi._core import MethodDescriptor

    def make_class() -> type:
        class Holder:
            pass

        def method(self: Any) -> type:
            return Holder

        Holder.m = MethodDescriptor(method)  # type: ignore[attr-defined]
        return Holder

    holder = make_class()
    assert holder().m() is holder  # type: ignore[attr-defined]
    gone_cls = weakref.ref(holder)
    del holder
    gc.collect()
    assert gone_cls() is None


def test_runtime_dict_snapshots_while_other_threads_mutate_it() -> None:
    # keys()/values()/items() of a runtime Dict are one step for other threads (the
    # size query and the whole walk hold the Dict's lock): never a torn entry, while
    # writers grow the table (rehashing it) and shrink it again.
    d = tvmffi.Dict({k: 2 * k for k in range(64)})
    finished: list[int] = []
    writers = 4

    def writer(t: int) -> Callable[[], None]:
        def run() -> None:
            try:
                for _ in range(5):
                    keys = range(64 + t * 1000, 64 + t * 1000 + 400)
                    for key in keys:
                        d[key] = 2 * key
                    for key in keys:
                        del d[key]
            finally:
                finished.append(t)

        return run

    def reader() -> None:
        snapshots = 0
        while snapshots < 20 or len(finished) < writers:  # until every writer is done
            pairs = list(d.items())
            assert all(isinstance(k, int) and v == 2 * k for k, v in pairs)
            assert len(pairs) >= 64
            assert all(isinstance(v, int) for v in d.values())
            snapshots += 1

    start_together([writer(t) for t in range(writers)] + [reader] * 4)
    assert dict(d.items()) == {k: 2 * k for k in range(64)}


def test_shared_handles_use_deferred_reference_counts_without_a_gil() -> None:
    # On a free-threaded build (3.14+) the interpreter loads these without writing
    # their counts; CPython shows such an object's count with its large deferred bias.
    import pytest

    gil = getattr(sys, "_is_gil_enabled", lambda: True)()
    if gil or sys.version_info < (3, 14):
        pytest.skip("deferred reference counting: a free-threaded 3.14+ without the GIL")
    bias = 1 << 40
    f = tvmffi.get_global_func("testing.add_one")
    field = type(testing.TestIntPair(1, 2)).__dict__["a"]
    method = type(testing.TestIntPair(1, 2)).__dict__["sum"]
    for obj in (f, field, method):
        assert sys.getrefcount(obj) > bias, type(obj).__name__
    assert f(41) == 42
