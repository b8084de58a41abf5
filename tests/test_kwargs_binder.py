"""The C keyword binder (csrc/kwargs_binder.c): make_kwargs_wrapper's wrappers.

A wrapper must bind every call exactly as a ``def`` of the same signature would: the
same values in the same order, and for a bad call the same TypeError, word for word,
naming the parameter. The property test below checks that against real ``def``s
over random signatures and random calls.
"""

from __future__ import annotations

import dataclasses
import gc
import inspect
import keyword
import pickle
import sys
import threading
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tvmffi
import tvmffi.testing
from tvmffi.utils.kwargs_wrapper import make_kwargs_wrapper, make_kwargs_wrapper_from_signature


def collect(*args: Any) -> tuple[Any, ...]:
    """A picklable positional-only target."""
    return args


@dataclasses.dataclass
class Pair:
    u: int
    v: float


def _outcome(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[str, Any]:
    try:
        return ("ok", fn(*args, **kwargs))
    except TypeError as err:
        return ("TypeError", str(err))


_NAMES = st.lists(
    st.sampled_from(["a", "b", "c", "d", "e", "f", "x", "y"]), min_size=0, max_size=6, unique=True
)


@st.composite
def _signatures(draw: Any) -> tuple[list[str], int, list[str], dict[str, int]]:
    names = draw(_NAMES)
    n_pos = draw(st.integers(0, len(names)))
    pos, kwonly = names[:n_pos], names[n_pos:]
    n_defaults = draw(st.integers(0, len(pos)))
    kw_defaults = {n: 100 + i for i, n in enumerate(kwonly) if draw(st.booleans())}
    return pos, n_defaults, kwonly, kw_defaults


def _make_def(
    pos: list[str], n_defaults: int, kwonly: list[str], kw_defaults: dict[str, int]
) -> Any:
    """A real def with that signature returning its parameters' values in order."""
    parts = []
    first_default = len(pos) - n_defaults
    for i, n in enumerate(pos):
        parts.append(f"{n}={10 + i}" if i >= first_default else n)
    if kwonly:
        parts.append("*")
        parts += [f"{n}={kw_defaults[n]}" if n in kw_defaults else n for n in kwonly]
    body = ", ".join([*pos, *kwonly])
    ns: dict[str, Any] = {}
    exec(f"def sig({', '.join(parts)}):\n    return ({body}{',' if body else ''})\n", ns)
    return ns["sig"]


@settings(max_examples=150, deadline=None)
@given(
    sig=_signatures(),
    nargs=st.integers(0, 7),
    kw=st.lists(st.sampled_from(["a", "b", "c", "d", "e", "f", "x", "y", "zz"]), unique=True),
)
def test_binds_like_a_def(
    sig: tuple[list[str], int, list[str], dict[str, int]], nargs: int, kw: list[str]
) -> None:
    pos, n_defaults, kwonly, kw_defaults = sig
    ref = _make_def(pos, n_defaults, kwonly, kw_defaults)
    defaults = tuple(10 + i for i in range(len(pos) - n_defaults, len(pos)))
    w = make_kwargs_wrapper(collect, pos, defaults, kwonly, kw_defaults, prototype=ref)
    w2 = make_kwargs_wrapper_from_signature(collect, inspect.signature(ref), ref)
    args = tuple(range(1000, 1000 + nargs))
    kwargs = {k: -i for i, k in enumerate(kw)}
    expected = _outcome(ref, args, kwargs)
    assert _outcome(w, args, kwargs) == expected
    assert _outcome(w2, args, kwargs) == expected
    assert inspect.signature(w) == inspect.signature(ref)


def test_errors_name_the_parameter_and_the_wrapper() -> None:
    w = make_kwargs_wrapper(collect, ["src", "dst"], (0,), ["scale"])
    with pytest.raises(
        TypeError, match=r"^wrapper\(\) missing 1 required positional argument: 'src'$"
    ):
        w(scale=1)
    with pytest.raises(
        TypeError, match=r"^wrapper\(\) missing 1 required keyword-only argument: 'scale'$"
    ):
        w(1)
    with pytest.raises(TypeError, match=r"^wrapper\(\) got an unexpected keyword argument 'dest'$"):
        w(1, dest=2, scale=1)
    with pytest.raises(TypeError, match=r"^wrapper\(\) got multiple values for argument 'src'$"):
        w(1, src=2, scale=1)
    with pytest.raises(TypeError, match=r"takes from 1 to 2 positional arguments but 3 were given"):
        w(1, 2, 3)

    def launch(src: Any, dst: Any) -> None:
        pass

    named = make_kwargs_wrapper(collect, ["src", "dst"], prototype=launch)
    with pytest.raises(
        TypeError, match=r"launch\(\) missing 1 required positional argument: 'dst'"
    ):
        named(1)


def test_metadata_signature_and_method_binding() -> None:
    def proto(x: int, y: float = 2.0, *, z: str = "s") -> tuple[Any, ...]:
        """Doc of proto."""
        return ()

    w = make_kwargs_wrapper_from_signature(collect, inspect.signature(proto), proto)
    assert w.__name__ == "proto" and w.__doc__ == "Doc of proto."
    assert w.__wrapped__ is proto  # type: ignore[attr-defined]
    assert w.__module__ == __name__ and w.__annotations__ == proto.__annotations__
    assert inspect.signature(w) == inspect.signature(proto)
    # Without a prototype: the real defaults, where the official binding shows <MISSING>.
    plain = make_kwargs_wrapper(collect, ["a", "b"], ("text",), ["k"], {"k": [1]})
    assert str(inspect.signature(plain)) == "(a, b='text', *, k=[1])"
    assert plain.__name__ == "wrapper" and plain.__doc__ is None

    class Holder:
        method = make_kwargs_wrapper(collect, ["self", "n"], (7,))

    h = Holder()
    assert h.method() == (h, 7) and h.method(n=1) == (h, 1)
    assert Holder.method(h, 2) == (h, 2)


def test_pickles_with_its_target() -> None:
    w = make_kwargs_wrapper(
        collect, ["a", "p"], (Pair(1, 2.0),), ["k"], {"k": 3}, map_dataclass_to_tuple=["p"]
    )
    again = pickle.loads(pickle.dumps(w))
    assert again(0) == (0, (1, 2.0), 3) and again(0, Pair(5, 6.0), k=4) == (0, (5, 6.0), 4)
    assert again.__name__ == "wrapper"

    def local(*args: Any) -> Any:
        return args

    with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
        pickle.dumps(make_kwargs_wrapper(local, ["a"]))


def test_ffi_function_target_and_subclass_call() -> None:
    echo = tvmffi.get_global_func("testing.echo")
    w = make_kwargs_wrapper(echo, ["value"], ("dflt",))
    assert w() == "dflt" and w(value=5) == 5 and w(2.5) == 2.5

    class Traced(tvmffi.Function):
        calls = 0

        def __call__(self, *args: Any) -> Any:
            type(self).calls += 1
            return tvmffi.Function.__call__(self, *args)

    traced = Traced.__new__(Traced)
    traced.__move_handle_from__(tvmffi.get_global_func("testing.echo"))
    wt = make_kwargs_wrapper(traced, ["value"])
    assert wt(value=9) == 9 and Traced.calls == 1  # the subclass's __call__ ran


def test_dataclass_parameters_and_errors_inside() -> None:
    w = make_kwargs_wrapper(collect, ["x", "p"], map_dataclass_to_tuple=["p"])
    assert w(1, Pair(2, 3.0)) == (1, (2, 3.0))
    assert w(1, p=[Pair(2, 3.0), {"k": Pair(4, 5.0)}]) == (1, [(2, 3.0), {"k": (4, 5.0)}])
    looped: list[Any] = []
    looped.append(looped)
    with pytest.raises(RecursionError):
        w(1, looped)

    @dataclasses.dataclass
    class Broken:
        a: int

        def __getattribute__(self, name: str) -> Any:
            if name == "a":
                raise RuntimeError("field read failed")
            return object.__getattribute__(self, name)

    with pytest.raises(RuntimeError, match="field read failed"):
        w(1, Broken(1))


def test_no_reference_leaks() -> None:
    default = object()
    arg = object()
    w = make_kwargs_wrapper(collect, ["a", "b"], (default,), ["k"], {"k": default})
    wd = make_kwargs_wrapper(collect, ["p"], map_dataclass_to_tuple=["p"])
    pair = Pair(1, 2.0)
    for _ in range(10):
        w(arg), w(arg, k=arg), wd(pair)
    gc.collect()
    before = (sys.getrefcount(default), sys.getrefcount(arg), sys.getrefcount(pair))
    for _ in range(1000):
        w(arg)
        w(arg, arg, k=arg)
        wd(p=pair)
        with pytest.raises(TypeError):
            w(arg, nope=arg)
    gc.collect()
    assert (sys.getrefcount(default), sys.getrefcount(arg), sys.getrefcount(pair)) == before


def test_threads_share_one_wrapper() -> None:
    w = make_kwargs_wrapper(
        collect, ["a", "p"], (0,), ["k"], {"k": 1}, map_dataclass_to_tuple=["p"]
    )
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            for j in range(2000):
                assert w(i, Pair(j, 0.5), k=j) == (i, (j, 0.5), j)
        except BaseException as err:  # reported below
            errors.append(err)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_bad_tables_are_refused() -> None:
    from tvmffi._core import KwargsWrapper

    with pytest.raises(TypeError):
        KwargsWrapper(collect, ["a"], 1, {}, ())  # type: ignore[arg-type]  # not a tuple
    with pytest.raises(ValueError, match="n_pos"):
        KwargsWrapper(collect, ("a",), 2, {}, ())
    with pytest.raises(ValueError, match="without a default follows"):
        KwargsWrapper(collect, ("a", "b"), 2, {"a": 1}, ())
    table = KwargsWrapper(None, ("a",), 1, {}, ())
    with pytest.raises(TypeError, match="no target"):
        table(1)
    assert not keyword.iskeyword("a")
