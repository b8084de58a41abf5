"""Regression tests of issue 12: nothing a Python user writes may crash the
process or give a wrong value (protocol results, stale per-type decisions,
re-initialised objects, lying DLPack producers, custom error classes)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tvmffi
import tvmffi.testing as testing

echo = testing.echo


# ---- complex numbers have no FFI value: opaque objects, never truncated ------------------
@pytest.mark.parametrize("value", [1 + 2j, np.complex128(1 + 2j), np.complex64(1 + 2j)])
def test_complex_scalars_pass_as_opaque_objects_not_truncated(value: Any) -> None:
    # As on the official binding: the object itself comes back (not its float()).
    assert echo(value) is value
    arr = tvmffi.Array([value])
    assert isinstance(arr, tvmffi.Array) and arr[0] is value


# ---- results of the conversion protocols are checked ----------------------------------
class FloatProto:
    def __init__(self, v: Any) -> None:
        self.v = v

    def __tvm_ffi_float__(self) -> Any:
        return self.v


class IntProto:
    def __init__(self, v: Any) -> None:
        self.v = v

    def __tvm_ffi_int__(self) -> Any:
        return self.v


class ObjectProto:
    def __init__(self, v: Any) -> None:
        self.v = v

    def __tvm_ffi_object__(self) -> Any:
        return self.v


def test_float_protocol_result_is_a_float() -> None:
    res = echo(FloatProto(10))
    assert type(res) is float and res == 10.0
    assert echo(FloatProto(np.float32(1.5))) == 1.5
    for bad in ["1.5", None, 1 + 2j, np.complex64(1)]:
        with pytest.raises(TypeError, match=r"__tvm_ffi_float__\(\) returned .*not a float"):
            echo(FloatProto(bad))


def test_int_protocol_result_is_an_int() -> None:
    res = echo(IntProto(True))
    assert type(res) is int and res == 1
    assert echo(IntProto(np.int16(7))) == 7
    assert echo(IntProto(2**70)) == 2**70
    for bad in [2.5, "3", None]:
        with pytest.raises(TypeError, match=r"argument 0: .*__tvm_ffi_int__\(\) returned"):
            echo(IntProto(bad))


def test_object_protocol_result_is_an_object() -> None:
    arr = tvmffi.Array([1, 2])
    assert echo(ObjectProto(arr)).same_as(arr)
    for bad in [3, "x", [1], None]:
        with pytest.raises(TypeError, match=r"__tvm_ffi_object__\(\) returned .*not an FFI object"):
            echo(ObjectProto(bad))


class SelfValue:
    def __tvm_ffi_value__(self) -> Any:
        return self


class Chain:
    def __init__(self, n: int) -> None:
        self.n = n

    def __tvm_ffi_value__(self) -> Any:
        return Chain(self.n - 1) if self.n else "end"


def test_value_protocol_cycles_raise_recursion_error() -> None:
    with pytest.raises(RecursionError):
        echo(SelfValue())
    with pytest.raises(RecursionError):
        echo(Chain(100_000))
    assert echo(Chain(50)) == "end"


# ---- per-type decisions follow the class ------------------------------------------------
def test_class_gaining_dlpack_later_converts() -> None:
    class Late:
        pass

    before = Late()
    assert echo(before) is before  # no conversion yet: an opaque object (official behaviour)
    Late.__dlpack__ = lambda self, **kw: np.arange(3).__dlpack__(**kw)  # type: ignore[attr-defined]
    Late.__dlpack_device__ = lambda self: (1, 0)  # type: ignore[attr-defined]
    res = echo(Late())
    assert isinstance(res, tvmffi.Tensor) and res.shape == (3,)


def test_class_losing_call_is_no_longer_wrapped() -> None:
    class Once:
        def __call__(self) -> int:
            return 1

    assert isinstance(echo(Once()), tvmffi.Function)
    del Once.__call__
    plain = Once()
    assert echo(plain) is plain  # no longer a callable: an opaque object (official behaviour)


def test_base_class_change_reaches_subclasses() -> None:
    class Base:
        pass

    class Sub(Base):
        pass

    before = Sub()
    assert echo(before) is before  # an opaque object (official behaviour)
    Base.__tvm_ffi_int__ = lambda self: 5  # type: ignore[attr-defined]
    assert echo(Sub()) == 5


# ---- an object's handle never changes while the object lives ---------------------------
def test_reinit_of_a_live_object_raises_and_keeps_it() -> None:
    arr = tvmffi.Array([1, 2, 3])
    handle = arr.__chandle__()
    with pytest.raises(RuntimeError, match="already initialized"):
        arr.__init__([4])  # type: ignore[misc]
    assert arr.__chandle__() == handle and list(arr) == [1, 2, 3]


class Reiniter:
    """An index whose conversion re-initialises another argument."""

    def __init__(self, victim: Any) -> None:
        self.victim = victim

    def __index__(self) -> int:
        self.victim.__init__([7] * 100)
        return 0


def test_reinit_during_argument_packing_cannot_free_a_packed_handle() -> None:
    lst = tvmffi.List([1, 2, 3])
    with pytest.raises(RuntimeError, match="already initialized"):
        testing.nop(lst, Reiniter(lst))
    assert list(lst) == [1, 2, 3]


def test_reinit_during_element_read_cannot_free_the_container() -> None:
    lst = tvmffi.List(["a", "b"])
    with pytest.raises(RuntimeError, match="already initialized"):
        lst[Reiniter(lst)]
    assert list(lst) == ["a", "b"]


def test_reinit_from_another_thread_during_a_gil_released_call() -> None:
    import threading

    arr = tvmffi.Array(list(range(1000)))
    errors: list[BaseException] = []
    stop = threading.Event()

    def reinit() -> None:
        while not stop.is_set():
            try:
                arr.__init__([0])  # type: ignore[misc]
            except RuntimeError as e:
                errors.append(e)

    t = threading.Thread(target=reinit)
    t.start()
    try:
        for _ in range(2000):
            assert echo(arr).same_as(arr)
    finally:
        stop.set()
        t.join()
    assert errors and all("already initialized" in str(e) for e in errors)
    assert list(arr)[:3] == [0, 1, 2]


# ---- a registered error class that cannot be built from one message -------------------
def test_registered_error_class_needing_more_arguments_falls_back() -> None:
    class TwoArgs(Exception):
        def __init__(self, a: str, b: str) -> None:
            super().__init__(a, b)

    class NotAnException(Exception):
        def __new__(cls, *args: Any) -> Any:
            return 42

    raise_error = tvmffi.get_global_func("testing.test_raise_error")
    for kind, cls in [("W12TwoArgs", TwoArgs), ("W12NotExc", NotAnException)]:
        tvmffi.register_error(kind, cls)
        with pytest.raises(tvmffi.Error) as info:
            raise_error(kind, "the message")
        assert info.value.kind == kind
        assert "the message" in str(info.value)
        assert isinstance(info.value.__cause__, TypeError)


def test_dict_mutated_while_iterated_walks_a_snapshot() -> None:
    d = tvmffi.Dict({i: i for i in range(4)})
    seen = []
    for k in d:
        seen.append(k)
        for j in range(100, 164):  # grows the table: a live runtime iterator would dangle
            d[j + 1000 * k] = j
        d.pop(k)
    assert sorted(seen) == [0, 1, 2, 3]
    assert len(d) == 4 * 64


def test_error_object_reinit_raises() -> None:
    from tvmffi.error import ErrorObject

    err = ErrorObject("ValueError", "first", "")
    with pytest.raises(RuntimeError, match="already initialized"):
        err.__init__("TypeError", "second", "")  # type: ignore[misc]
    assert err.kind == "ValueError" and err.message == "first"


_DEEP_REPR_SCRIPT = r"""
import resource, sys
import tvmffi
from tvmffi.dataclasses import field, py_class

@py_class("test_reliability.DeepNode")
class Node(tvmffi.Object):
    child: "Node | None"
    tag: int = field(default=7, repr=False)

depth = int(sys.argv[1])
node = None
for _ in range(depth):
    node = Node(node)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
text = repr(node)
grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
expected = "test_reliability.DeepNode(child=" * depth + "None" + ")" * depth
assert text == expected, text[:200]
print(grown_kib)
"""


def test_repr_of_a_deep_py_class_chain_takes_memory_in_proportion_to_its_text() -> None:
    # The runtime's printer keeps the text of every object printed: a chain of N
    # objects took memory quadratic in N (6,000 levels: ~400 MB; 100,000: the OOM
    # killer). 6,000 levels make 200 KB of text; the whole print may grow the process
    # by a small multiple of that, not by hundreds of megabytes. (A subprocess: the
    # peak resident size of this one says nothing after other tests.)
    import subprocess
    import sys

    run = subprocess.run(
        [sys.executable, "-c", _DEEP_REPR_SCRIPT, "6000"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert int(run.stdout) < 32 * 1024, f"repr grew the process by {run.stdout.strip()} KiB"


def test_repr_of_py_class_graphs_is_the_runtime_text() -> None:
    # Printed field by field here, the text stays the runtime printer's own: hidden
    # fields left out, values in its notation, shared objects in full, cycles as "...".
    from tvmffi.dataclasses import field, py_class

    @py_class("test_reliability.ReprNode")
    class Node(tvmffi.Object):
        name: str
        weight: float
        kids: list[Any] = field(default_factory=list)
        secret: int = field(default=0, repr=False)

    leaf = Node("leaf", 2.0)
    root = Node("root", 0.5, [leaf, leaf, testing.TestIntPair(1, 2)])
    runtime = tvmffi.get_global_func("ffi.ReprPrint")
    assert repr(root) == runtime(root)
    assert repr(root) == (
        'test_reliability.ReprNode(name="root", weight=0.5, kids=['
        'test_reliability.ReprNode(name="leaf", weight=2, kids=[]), '
        'test_reliability.ReprNode(name="leaf", weight=2, kids=[]), '
        "testing.TestIntPair(a=1, b=2)])"
    )
    root.kids.append(root)
    assert repr(root) == runtime(root)
    assert repr(root).endswith(", ...])")
