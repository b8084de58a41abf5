"""Randomized specs: every valid Signature emits C that compiles, accepts matching arrays
and rejects a mismatched one with ValueError. Deterministic (fixed seeds), one build."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

import tvmffi
from tvmffi import codegen
from tvmffi.codegen import Scalar, Signature, Tensor, Var
from tvmffi.codegen._emit import kernel_prototype

NP = {
    "bool": np.bool_,
    "int8": np.int8,
    "int16": np.int16,
    "int32": np.int32,
    "int64": np.int64,
    "uint8": np.uint8,
    "uint16": np.uint16,
    "uint32": np.uint32,
    "uint64": np.uint64,
    "float16": np.float16,
    "float32": np.float32,
    "float64": np.float64,
}
SCALARS = {"int32": 3, "int64": -5, "float32": 1.5, "float64": 2.5, "bool": True}


def random_case(seed: int) -> tuple[Signature, dict[str, int]]:
    """A random signature and values for its Vars that satisfy it."""
    rng = random.Random(seed)
    pool = [Var(f"v{i}", divisibility=rng.choice([None, None, 2, 4])) for i in range(3)]
    values = {v.name: (v.divisibility or 1) * rng.randint(1, 3) for v in pool}
    params: list[Any] = []
    for i in range(rng.randint(1, 4)):
        if rng.random() < 0.25:
            params.append(Scalar(f"s{i}", rng.choice(list(SCALARS))))
            continue
        shape = [rng.choice([*pool, 1, 2, 3]) for _ in range(rng.randint(0, 4))]
        explicit = rng.random() < 0.3
        strides = None
        if explicit:
            # Row-major over a buffer whose innermost dimension is padded by 1.
            dims = [d if isinstance(d, int) else values[d.name] for d in shape]
            acc, out = 1, []
            for k in range(len(dims) - 1, -1, -1):
                out.append(acc)
                acc *= dims[k] + (1 if k == len(dims) - 1 else 0)
            strides = list(reversed(out))
        params.append(
            Tensor(
                f"t{i}",
                shape,
                rng.choice(list(NP)),
                strides=strides,
                data_alignment=rng.choice([None, None, 1, 4]),
            )
        )
    return Signature(f"rand{seed}", params), values


CASES = [random_case(seed) for seed in range(40)]


def arguments(sig: Signature, values: dict[str, int]) -> list[Any]:
    args: list[Any] = []
    for p in sig.ffi_params:
        if isinstance(p, Scalar):
            args.append(SCALARS[p.dtype])
            continue
        dims = [d if isinstance(d, int) else values[d.name] for d in p.shape]
        if p.strides is None:
            args.append(np.zeros(dims, NP[p.dtype]))
        else:
            padded = [*dims[:-1], dims[-1] + 1] if dims else []
            base = np.zeros(padded, NP[p.dtype])
            args.append(base[..., : dims[-1]] if dims else base)
    return args


@pytest.fixture(scope="module")
def mod(tmp_path_factory: pytest.TempPathFactory) -> tvmffi.Module:
    sources = "#include <stdbool.h>\n#include <stdint.h>\n" + "".join(
        f"{kernel_prototype(sig, f'{sig.name}_k')} {{ return 0; }}\n" for sig, _ in CASES
    )
    return codegen.build(
        [(sig, f"{sig.name}_k") for sig, _ in CASES],
        sources=[sources],
        name="randomized",
        output_dir=tmp_path_factory.mktemp("random"),
        extra_cflags=["-Wno-unused-parameter"],
    )


@pytest.mark.parametrize("case", range(len(CASES)))
def test_random_signature(mod: tvmffi.Module, case: int) -> None:
    sig, values = CASES[case]
    func = mod[sig.name]
    args = arguments(sig, values)
    assert func(*args) is None
    tensors = [i for i, p in enumerate(sig.ffi_params) if isinstance(p, Tensor)]
    if not tensors:
        return
    # Mismatch: the last tensor gets one more dimension.
    i = tensors[-1]
    bad = list(args)
    bad[i] = np.expand_dims(np.asarray(args[i]), 0)
    with pytest.raises(ValueError) as info:
        func(*bad)
    name = sig.ffi_params[i].name
    assert str(info.value).startswith(f"Parameter `{name}` expects ndim=")
    assert str(info.value).endswith(f" when calling: `{sig}`")
