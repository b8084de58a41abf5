"""codegen's output= and inout= tensors (issue 25 item 1), and the Python mirror of its checks.

Outputs change nothing for callers of the FFI function (every parameter is
passed); the wrapper checks inputs first, so the inputs bind the Vars that the
outputs' shapes are made of. codegen._check.Checker must raise what the wrapper
raises.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tvmffi
from tvmffi import codegen
from tvmffi.codegen import Scalar, Signature, Tensor, Var
from tvmffi.codegen._check import ArgInfo, Checker

N, M = Var("n"), Var("m", "int32", divisibility=4)
# The output comes first, and its shape uses Vars bound by later inputs.
SIG = Signature(
    "gather_rows",
    [
        Tensor("out", [M, N], "float32", output=True),
        Tensor("table", [N, 2], "float32"),
        Tensor("idx", [M], "int64"),
        Scalar("scale", "float32"),
    ],
)
BODY = """
for (int64_t i = 0; i < m; ++i)
  for (int64_t j = 0; j < n; ++j) out[i * n + j] = scale * table[j * 2 + (idx[i] & 1)];
"""


@pytest.fixture(scope="module")
def gather(tmp_path_factory: pytest.TempPathFactory) -> tvmffi.Function:
    return codegen.inline(SIG, BODY, output_dir=tmp_path_factory.mktemp("cg_outputs"))


def test_spec_roles_and_text() -> None:
    assert [t.name for t in SIG.inputs] == ["table", "idx"]
    assert [t.name for t in SIG.outputs] == ["out"]
    assert SIG.check_order == (1, 2, 3, 0)
    assert str(SIG.params[0]) == "out: Tensor([m, n], float32, output)"
    assert str(Tensor("x", [1], "int8", inout=True)) == "x: Tensor([1], int8, inout)"
    # no outputs: the wrapper checks in parameter order, as before
    plain = Signature("plain", [Tensor("a", [N], "float32"), Scalar("s", "int32")])
    assert plain.check_order == (0, 1) and plain.outputs == ()


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ([Tensor("o", [N], "float32", output=True)], "needs an input tensor"),
        (
            [Tensor("x", [N], "float32"), Tensor("o", [Var("k")], "float32", output=True)],
            "has dimension 'k', which no input tensor binds",
        ),
        (
            [Tensor("x", [N], "float32"), Tensor("o", [N], "float32", device="cuda", output=True)],
            "outputs are allocated on the device of the first input 'x'",
        ),
    ],
)
def test_outputs_must_follow_from_the_inputs(params: list[Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Signature("bad", params)


def test_output_and_inout_flags_are_checked() -> None:
    with pytest.raises(ValueError, match="cannot be both output and inout"):
        Tensor("x", [1], "float32", output=True, inout=True)
    with pytest.raises(ValueError, match="allocated compact: it takes no strides"):
        Tensor("x", [N], "float32", strides=[1], output=True)
    with pytest.raises(ValueError, match="output and inout must be bools"):
        Tensor("x", [1], "float32", output=1)  # type: ignore[arg-type]
    # a Var an input binds through its strides may size an output
    s = Var("s")
    Signature(
        "ok",
        [Tensor("x", [N], "float32", strides=[s]), Tensor("o", [s], "float32", output=True)],
    )


def test_ffi_function_takes_every_parameter(gather: tvmffi.Function) -> None:
    table = np.arange(6, dtype="float32").reshape(3, 2)
    idx = np.array([0, 1, 1, 0], dtype="int64")
    out = np.zeros((4, 3), dtype="float32")
    gather(out, table, idx, 2.0)
    np.testing.assert_array_equal(out, 2 * table[:, idx & 1].T)
    meta_params = codegen.signature_of(gather)
    assert meta_params == SIG


def test_inputs_bind_the_vars_before_outputs_are_checked(gather: tvmffi.Function) -> None:
    table, idx = np.zeros((3, 2), "float32"), np.zeros(4, "int64")
    with pytest.raises(ValueError) as info:
        gather(np.zeros((4, 5), "float32"), table, idx, 1.0)
    assert str(info.value) == (
        "Parameter `out` expects shape[1]=n=3 (bound by `table`.shape[0]) but got shape[1]=5"
        f" when calling: `{SIG}`"
    )


def _info(a: np.ndarray) -> ArgInfo:
    d = tvmffi.dtype(a.dtype)
    text = codegen._check.dtype_text(d.type_code, d.bits, d.lanes)
    strides = tuple(s // a.itemsize for s in a.strides)
    return ArgInfo(a.shape, text, ("cpu", 0), strides)


BAD = {
    "ndim": (np.zeros((3, 2, 1), "float32"), np.zeros(4, "int64"), 1.0),
    "dtype": (np.zeros((3, 2), "float64"), np.zeros(4, "int64"), 1.0),
    "const dim": (np.zeros((3, 3), "float32"), np.zeros(4, "int64"), 1.0),
    "divisibility": (np.zeros((3, 2), "float32"), np.zeros(6, "int64"), 1.0),
    "strides": (np.zeros((3, 4), "float32")[:, ::2], np.zeros(4, "int64"), 1.0),
    "idx dtype": (np.zeros((3, 2), "float32"), np.zeros(4, "bool"), 1.0),
    "scalar type": (np.zeros((3, 2), "float32"), np.zeros(4, "int64"), "x"),
    "scalar bool": (np.zeros((3, 2), "float32"), np.zeros(4, "int64"), True),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_python_checks_raise_what_the_wrapper_raises(gather: tvmffi.Function, case: str) -> None:
    table, idx, scale = BAD[case]
    with pytest.raises((ValueError, TypeError)) as wrapper:
        gather(np.zeros((4, 3), "float32"), table, idx, scale)
    with pytest.raises((ValueError, TypeError)) as mirror:
        Checker(SIG).check({"table": _info(table), "idx": _info(idx)}, {"scale": scale})
    # the wrapper's errors are tvmffi.error's subclasses of the builtin ones
    assert isinstance(wrapper.value, type(mirror.value))
    assert str(mirror.value) == str(wrapper.value)


def test_output_shapes_from_the_bound_vars() -> None:
    checker = Checker(SIG)
    values = checker.check(
        {"table": _info(np.zeros((5, 2), "float32")), "idx": _info(np.zeros(8, "int64"))},
        {"scale": 1.0},
    )
    assert values == {"n": 5, "m": 8}
    assert checker.output_shapes(values) == [(8, 5)]


def test_signature_of_is_none_for_other_functions(tmp_path: Path) -> None:
    assert codegen.signature_of(tvmffi.get_global_func("testing.echo")) is None
    assert codegen.signature_of(42) is None
