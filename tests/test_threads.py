"""Thread-safety guarantees stated in the README: one List, Dict or the global
registry shared by several Python threads behaves like Python's own list and
dict (every operation is atomic; readers see only values that were stored)."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable

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
