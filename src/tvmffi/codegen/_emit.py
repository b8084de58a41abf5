"""C emitter: a :class:`Signature` -> the source of a validated ``__tvm_ffi_<name>`` wrapper.

The generated code depends on ``tvm/ffi/c_api.h`` (and ``extra/c_env_api.h`` for
streams) only. Everything known from the spec (ndim, dtype codes, constant
dimensions, where each Var is bound) is unrolled into straight-line checks, so the
success path is a run of compares and branches that are predicted not taken; all
message formatting lives in ``cold`` helper functions of the shared prelude.

Several emitted wrappers may be concatenated into one translation unit: the
prelude is guarded by a macro.
"""

from __future__ import annotations

import json
from typing import Any

from ._spec import (
    DEVICES,
    DTYPES,
    SCALAR_DTYPES,
    EnvStream,
    Scalar,
    Signature,
    Tensor,
    Var,
    check_identifier,
)

__all__ = ["c_string", "emit_c", "kernel_prototype"]

_PRELUDE = r"""
#ifndef TVMFFI_CODEGEN_PRELUDE_
#define TVMFFI_CODEGEN_PRELUDE_
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <tvm/ffi/c_api.h>
#include <tvm/ffi/extra/c_env_api.h>

#define TVMFFI_CG_STR_(x) #x
#define TVMFFI_CG_STR(x) TVMFFI_CG_STR_(x)

#if defined(__GNUC__) || defined(__clang__)
/* Kernels are declared under a mangled C name bound to their real symbol, so
   a kernel name never meets a macro or library name of the headers above. */
#define TVMFFI_CG_ASM_NAME 1
#define TVMFFI_CG_SYMBOL(name) __asm__(TVMFFI_CG_STR(__USER_LABEL_PREFIX__) name)
#define TVMFFI_CG_COLD __attribute__((cold, noinline, unused))
#define TVMFFI_CG_MAYBE_UNUSED __attribute__((unused))
#define TVMFFI_CG_FORMAT(f, a) __attribute__((format(printf, f, a)))
#define TVMFFI_CG_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define TVMFFI_CG_LIKELY(x) __builtin_expect(!!(x), 1)
#define TVMFFI_CG_EXPORT __attribute__((visibility("default")))
#else
#define TVMFFI_CG_COLD
#define TVMFFI_CG_MAYBE_UNUSED
#define TVMFFI_CG_FORMAT(f, a)
#define TVMFFI_CG_UNLIKELY(x) (x)
#define TVMFFI_CG_LIKELY(x) (x)
#define TVMFFI_CG_EXPORT
#endif

/* ndim and dtype are adjacent in DLTensor, as are a device's type and id: the
   hot path compares each pair as one 64-bit word. */
#ifdef __cplusplus
static_assert(offsetof(DLTensor, dtype) == offsetof(DLTensor, ndim) + 4, "DLTensor layout");
#else
_Static_assert(offsetof(DLTensor, dtype) == offsetof(DLTensor, ndim) + 4, "DLTensor layout");
#endif

typedef struct {
  int32_t ndim;
  DLDataType dtype;
} tvmffi_cg_ndim_dtype;

static inline uint64_t tvmffi_cg_word(const void* p) {
  uint64_t w;
  memcpy(&w, p, sizeof(w));
  return w;
}

/* The 64-bit word of (ndim, dtype) as laid out in a DLTensor (folded at compile time). */
static inline uint64_t tvmffi_cg_ndim_dtype_word(int32_t ndim, uint8_t code, uint8_t bits) {
  tvmffi_cg_ndim_dtype v;
  v.ndim = ndim;
  v.dtype.code = code;
  v.dtype.bits = bits;
  v.dtype.lanes = 1;
  return tvmffi_cg_word(&v);
}

/* Raise an error of `kind` whose message is the formatted text followed by
   " when calling: `<sig>`"; returns -1 so callers can `return` it. */
static TVMFFI_CG_COLD TVMFFI_CG_FORMAT(3, 4) int tvmffi_cg_raise(const char* kind,
                                                                 const char* sig,
                                                                 const char* fmt, ...) {
  char head[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(head, sizeof(head), fmt, ap);
  va_end(ap);
  const char* parts[4] = {head, " when calling: `", sig, "`"};
  TVMFFIErrorSetRaisedFromCStrParts(kind, parts, 4);
  return -1;
}

/* A readable name for the type of an argument (Python-facing names for PODs). */
static TVMFFI_CG_COLD const char* tvmffi_cg_type_name(const TVMFFIAny* a, char* buf, size_t n) {
  static const char* const pod[] = {"None", "int", "bool", "float", "void*", "DataType",
                                    "Device", "DLTensor*", "str", "bytes", "ObjectRValueRef",
                                    "str", "bytes", "Unchanged"};
  int32_t ti = a->type_index;
  if (ti >= 0 && ti < (int32_t)(sizeof(pod) / sizeof(pod[0]))) return pod[ti];
  if (ti == kTVMFFIStr) return "str";
  if (ti == kTVMFFIBytes) return "bytes";
  if (ti >= kTVMFFIStaticObjectBegin) {
    const TVMFFITypeInfo* info = TVMFFIGetTypeInfo(ti);
    if (info != NULL) {
      snprintf(buf, n, "%.*s", (int)info->type_key.size, info->type_key.data);
      return buf;
    }
  }
  snprintf(buf, n, "type_index=%d", (int)ti);
  return buf;
}

static TVMFFI_CG_COLD int tvmffi_cg_fail_type(const char* sig, const char* param,
                                              const char* expected, const TVMFFIAny* a) {
  char buf[128];
  return tvmffi_cg_raise("TypeError", sig, "Parameter `%s` expects %s but got %s", param,
                         expected, tvmffi_cg_type_name(a, buf, sizeof(buf)));
}

static TVMFFI_CG_COLD const char* tvmffi_cg_dtype_str(DLDataType t, char* buf, size_t n) {
  static const char* const names[] = {"int", "uint", "float", "handle", "bfloat", "complex"};
  if (t.code == kDLBool && t.bits == 8 && t.lanes == 1) return "bool";
  if (t.code < sizeof(names) / sizeof(names[0])) {
    if (t.lanes == 1) {
      snprintf(buf, n, "%s%u", names[t.code], (unsigned)t.bits);
    } else {
      snprintf(buf, n, "%s%ux%u", names[t.code], (unsigned)t.bits, (unsigned)t.lanes);
    }
  } else {
    snprintf(buf, n, "dtype(code=%u, bits=%u, lanes=%u)", (unsigned)t.code, (unsigned)t.bits,
             (unsigned)t.lanes);
  }
  return buf;
}

static TVMFFI_CG_COLD int tvmffi_cg_fail_dtype(const char* sig, const char* param,
                                               const char* expected, DLDataType actual) {
  char buf[64];
  return tvmffi_cg_raise("ValueError", sig, "Parameter `%s` expects dtype=%s but got dtype=%s",
                         param, expected, tvmffi_cg_dtype_str(actual, buf, sizeof(buf)));
}

/* The (ndim, dtype) word differed: name whichever is wrong, ndim first. */
static TVMFFI_CG_COLD int tvmffi_cg_fail_ndim_dtype(const char* sig, const char* param,
                                                    int32_t ndim, const char* dtype,
                                                    const DLTensor* t) {
  if (t->ndim != ndim) {
    return tvmffi_cg_raise("ValueError", sig, "Parameter `%s` expects ndim=%d but got ndim=%d",
                           param, (int)ndim, (int)t->ndim);
  }
  return tvmffi_cg_fail_dtype(sig, param, dtype, t->dtype);
}

static TVMFFI_CG_COLD const char* tvmffi_cg_device_str(int32_t code, char* buf, size_t n) {
  switch (code) {
    case kDLCPU: return "cpu";
    case kDLCUDA: return "cuda";
    case kDLCUDAHost: return "cuda_host";
    case kDLOpenCL: return "opencl";
    case kDLVulkan: return "vulkan";
    case kDLMetal: return "metal";
    case kDLROCM: return "rocm";
    case kDLROCMHost: return "rocm_host";
    case kDLCUDAManaged: return "cuda_managed";
    case kDLOneAPI: return "oneapi";
    case kDLWebGPU: return "webgpu";
    default: snprintf(buf, n, "%d", (int)code); return buf;
  }
}

static TVMFFI_CG_COLD int tvmffi_cg_fail_device(const char* sig, const char* param,
                                                const char* expected, int32_t actual) {
  char buf[32];
  return tvmffi_cg_raise("ValueError", sig,
                         "Parameter `%s` expects device_type=%s but got device_type=%s", param,
                         expected, tvmffi_cg_device_str(actual, buf, sizeof(buf)));
}

/* The device id differs from that of `first`, the first tensor (t0). */
static TVMFFI_CG_COLD int tvmffi_cg_fail_device_id(const char* sig, const char* param,
                                                   const char* first, const DLTensor* t0,
                                                   const DLTensor* t) {
  return tvmffi_cg_raise("ValueError", sig,
                         "Parameter `%s` expects device_id=%d (the device of `%s`) "
                         "but got device_id=%d",
                         param, (int)t0->device.device_id, first, (int)t->device.device_id);
}

/* The device differed from the first tensor's (whose type was checked): name the
   wrong device type or id. */
static TVMFFI_CG_COLD int tvmffi_cg_fail_same_device(const char* sig, const char* param,
                                                     const char* expected, const char* first,
                                                     const DLTensor* t0, const DLTensor* t) {
  if (t->device.device_type != t0->device.device_type) {
    return tvmffi_cg_fail_device(sig, param, expected, t->device.device_type);
  }
  return tvmffi_cg_fail_device_id(sig, param, first, t0, t);
}

/* True when the tensor has no elements (then its strides do not matter). Inline:
   an out-of-line call here would force the wrapper to keep its values in
   callee-saved registers on the hot path. */
static inline bool tvmffi_cg_is_empty(const DLTensor* t) {
  for (int32_t k = 0; k < t->ndim; ++k) {
    if (t->shape[k] == 0) return true;
  }
  return false;
}

/* The quick compact-strides test failed on a non-empty tensor: name the first
   wrong stride (innermost first). */
static TVMFFI_CG_COLD int tvmffi_cg_fail_compact(const char* sig, const char* param,
                                                 const DLTensor* t) {
  int64_t expected = 1;
  for (int32_t k = t->ndim - 1; k >= 0; --k) {
    if (t->shape[k] != 1 && t->strides[k] != expected) {
      return tvmffi_cg_raise("ValueError", sig,
                             "Parameter `%s` expects compact row-major strides, "
                             "strides[%d]=%lld, but got strides[%d]=%lld",
                             param, (int)k, (long long)expected, (int)k,
                             (long long)t->strides[k]);
    }
    expected *= t->shape[k];
  }
  return tvmffi_cg_raise("ValueError", sig, "Parameter `%s` has inconsistent strides", param);
}

/* Strides of a tensor that carries none (NULL means compact row-major). */
static inline void tvmffi_cg_compact_strides(const DLTensor* t, int64_t* out) {
  int64_t expected = 1;
  for (int32_t k = t->ndim - 1; k >= 0; --k) {
    out[k] = expected;
    expected *= t->shape[k];
  }
}
#endif /* TVMFFI_CODEGEN_PRELUDE_ */
"""

_VAR_RANGES: dict[str, tuple[int, int]] = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint8": (0, 2**8 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
    "uint64": (0, 2**63 - 1),
}


def _byte_spelling(byte: int) -> str:
    """How one byte of UTF-8 text is written inside a C string literal."""
    char = chr(byte)
    if char in '"\\?':  # '?' too: no trigraph can form
        return "\\" + char
    if 0x20 <= byte < 0x7F:
        return char
    # Always three octal digits: the next byte can never extend the escape.
    return {0x0A: "\\n", 0x09: "\\t"}.get(byte, f"\\{byte:03o}")


_C_BYTE = tuple(_byte_spelling(b) for b in range(256))
_LITERAL_PIECE = 64  # bytes per piece: compilers cap the length of one literal


def c_string(text: str) -> str:
    """``text`` as a C string literal (UTF-8; ``sizeof - 1`` is its byte length).

    Long text becomes adjacent literals on consecutive lines, which C joins into one. A
    lone surrogate, which UTF-8 cannot hold, is kept as its ``\\udXXXX`` spelling.
    """
    data = text.encode("utf-8", "backslashreplace")
    pieces = [
        '"' + "".join(_C_BYTE[b] for b in data[at : at + _LITERAL_PIECE]) + '"'
        for at in range(0, len(data), _LITERAL_PIECE)
    ]
    return "\n    ".join(pieces) if pieces else '""'


def _c_int(value: int) -> str:
    # INT64_MIN has no literal form in C.
    if value == -(2**63):
        return "INT64_MIN"
    return f"INT64_C({value})"


def _kernel_params(sig: Signature) -> list[tuple[str, str]]:
    """(C type, user name) of each kernel parameter, in the wrapper's calling order."""
    params: list[tuple[str, str]] = []
    for p in sig.params:
        if isinstance(p, Tensor):
            params.append((f"{DTYPES[p.dtype].ctype}*", p.name))
        elif isinstance(p, Scalar):
            params.append((SCALAR_DTYPES[p.dtype][0], p.name))
    params += [("int64_t", v.name) for v in sig.vars]
    params += [("void*", p.name) for p in sig.params if isinstance(p, EnvStream)]
    return params


def kernel_prototype(sig: Signature, kernel: str) -> str:
    """``int kernel(<typed params>)`` in the calling convention of the generated wrapper.

    The parameters carry the user's names (as kernels written against it do);
    the wrapper itself declares the kernel without them (see :func:`emit_c`).
    """
    params = [f"{ctype} {name}" for ctype, name in _kernel_params(sig)]
    return f"int {kernel}({', '.join(params) or 'void'})"


def _kernel_declaration(sig: Signature, kernel: str) -> list[str]:
    """The wrapper's declaration of ``kernel``: unnamed parameters, a mangled C name.

    No user-chosen name is spelled as a C token here, so none can meet a macro
    (``EOF``, ``INT32_MAX``) or a declaration (``index``, ``printf``) of the
    headers the wrapper includes; compilers without asm labels fall back to the
    plain name.
    """
    types = ", ".join(ctype for ctype, _ in _kernel_params(sig)) or "void"
    local = f"tvmffi_cg_kernel_{sig.name}"
    return [
        "#ifdef TVMFFI_CG_ASM_NAME",
        f"int {local}({types}) TVMFFI_CG_SYMBOL({c_string(kernel)});",
        "#else",
        f"int {kernel}({types});",
        f"#define {local} {kernel}",
        "#endif",
    ]


class _Emitter:
    """Builds the body of one wrapper; tracks where each Var was bound."""

    def __init__(self, sig: Signature):
        self.sig = sig
        self.lines: list[str] = []
        self.bound: dict[str, str] = {}  # var name -> "`a`.shape[0]"
        # The C local of each Var: by position, never by the user's name.
        self.var_local = {v.name: f"var{i}" for i, v in enumerate(sig.vars)}
        # The local holding the first Tensor argument checked (the first input, as
        # outputs are checked last), whose device the others share.
        first = next((i for i in sig.check_order if isinstance(sig.ffi_params[i], Tensor)), None)
        self.first_tensor = None if first is None else f"t{first}"
        self.first_spec = None if first is None else sig.ffi_params[first]

    def raise_(self, kind: str, fmt: str, *args: str) -> str:
        extra = "".join(", " + a for a in args)
        return f'return tvmffi_cg_raise("{kind}", sig, {c_string(fmt)}{extra});'

    def check(self, cond: str, action: str, indent: str = "  ") -> None:
        self.lines.append(f"{indent}if (TVMFFI_CG_UNLIKELY({cond})) {action}")

    def tensor(self, index: int, t: Tensor) -> None:
        a, v, name = f"args[{index}]", f"t{index}", t.name
        self.lines += [
            f"  /* {t} */",
            f"  DLTensor* {v};",
            # Tensor objects first: NumPy/torch arguments arrive as those.
            f"  if (TVMFFI_CG_LIKELY({a}.type_index == kTVMFFITensor)) {{",
            f"    {v} = (DLTensor*)((char*){a}.v_obj + sizeof(TVMFFIObject));",
            f"  }} else if ({a}.type_index == kTVMFFIDLTensorPtr && {a}.v_ptr != NULL) {{",
            f"    {v} = (DLTensor*){a}.v_ptr;",
            "  } else {",
            f'    return tvmffi_cg_fail_type(sig, "{name}", "Tensor", &{a});',
            "  }",
        ]
        nd = len(t.shape)
        info = DTYPES[t.dtype]
        self.check(
            f"tvmffi_cg_word(&{v}->ndim) != "
            f"tvmffi_cg_ndim_dtype_word({nd}, {info.code}, {info.bits})",
            f'return tvmffi_cg_fail_ndim_dtype(sig, "{name}", {nd}, "{t.dtype}", {v});',
        )
        self.device(v, t)
        for k, dim in enumerate(t.shape):
            self.dim(name, f"shape[{k}]", f"{v}->shape[{k}]", dim)
        self.strides(index, t)
        if t.data_alignment is not None and t.data_alignment > 1:
            mask = f"UINT64_C({t.data_alignment - 1})"
            addr = f"((uint64_t)(uintptr_t){v}->data + {v}->byte_offset)"
            self.check(
                f"({addr} & {mask}) != 0",
                self.raise_(
                    "ValueError",
                    f"Parameter `{name}` expects data_alignment={t.data_alignment} but got a "
                    f"data address that is %llu mod {t.data_alignment}",
                    f"(unsigned long long)({addr} & {mask})",
                ),
            )
        ctype = info.ctype
        self.lines.append(f"  {ctype}* p{index} = ({ctype}*)((char*){v}->data + {v}->byte_offset);")

    def device(self, v: str, t: Tensor) -> None:
        """Check the device of tensor local ``v``: its type, and the first tensor's id."""
        first, t0, name = self.first_spec, self.first_tensor, t.name
        assert isinstance(first, Tensor)
        if v != t0 and t.device == first.device:
            # Same expected type as the first tensor: one compare covers type and id.
            self.check(
                f"tvmffi_cg_word(&{v}->device) != tvmffi_cg_word(&{t0}->device)",
                f'return tvmffi_cg_fail_same_device(sig, "{name}", "{t.device}", '
                f'"{first.name}", {t0}, {v});',
            )
            return
        self.check(
            f"{v}->device.device_type != {DEVICES[t.device]}",
            f'return tvmffi_cg_fail_device(sig, "{name}", "{t.device}", {v}->device.device_type);',
        )
        if v != t0:
            self.check(
                f"{v}->device.device_id != {t0}->device.device_id",
                f'return tvmffi_cg_fail_device_id(sig, "{name}", "{first.name}", {t0}, {v});',
            )

    def strides(self, index: int, t: Tensor) -> None:
        v, name, nd = f"t{index}", t.name, len(t.shape)
        if t.strides is None:
            if nd == 0:
                return
            # Branch-free accumulation of "some stride is wrong"; the cold helper
            # then finds which one (or accepts an empty tensor).
            body = [f"  if ({v}->strides != NULL) {{", "    int64_t e = 1;", "    int bad = 0;"]
            for k in range(nd - 1, -1, -1):
                body.append(f"    bad |= ({v}->shape[{k}] != 1) & ({v}->strides[{k}] != e);")
                if k:
                    body.append(f"    e *= {v}->shape[{k}];")
            body += [
                f"    if (TVMFFI_CG_UNLIKELY(bad) && !tvmffi_cg_is_empty({v})) "
                f'return tvmffi_cg_fail_compact(sig, "{name}", {v});',
                "  }",
            ]
            self.lines += body
            return
        st = f"st{index}"
        self.lines += [
            f"  int64_t cs{index}[{max(nd, 1)}];",
            f"  const int64_t* {st} = {v}->strides;",
            f"  if ({st} == NULL) {{",
            f"    tvmffi_cg_compact_strides({v}, cs{index});",
            f"    {st} = cs{index};",
            "  }",
        ]
        for k, dim in enumerate(t.strides):
            self.dim(name, f"strides[{k}]", f"{st}[{k}]", dim)

    def dim(self, name: str, label: str, actual: str, dim: int | Var) -> None:
        """Check one shape or stride entry against a constant or a Var."""
        if isinstance(dim, int):
            self.check(
                f"{actual} != {_c_int(dim)}",
                self.raise_(
                    "ValueError",
                    f"Parameter `{name}` expects {label}={dim} but got {label}=%lld",
                    f"(long long){actual}",
                ),
            )
            return
        var = self.var_local[dim.name]
        where = self.bound.get(dim.name)
        if where is not None:
            self.check(
                f"{actual} != {var}",
                self.raise_(
                    "ValueError",
                    f"Parameter `{name}` expects {label}={dim.name}=%lld (bound by {where}) "
                    f"but got {label}=%lld",
                    f"(long long){var}",
                    f"(long long){actual}",
                ),
            )
            return
        self.bound[dim.name] = f"`{name}`.{label}"
        self.lines.append(f"  const int64_t {var} = {actual};")
        if dim.dtype in _VAR_RANGES:
            lo, hi = _VAR_RANGES[dim.dtype]
            self.check(
                f"{var} < {_c_int(lo)} || {var} > {_c_int(hi)}",
                self.raise_(
                    "ValueError",
                    f"Parameter `{name}` expects {label}={dim.name} to fit in {dim.dtype} "
                    f"but got {label}=%lld",
                    f"(long long){var}",
                ),
            )
        if dim.divisibility is not None and dim.divisibility > 1:
            self.check(
                f"{var} % {_c_int(dim.divisibility)} != 0",
                self.raise_(
                    "ValueError",
                    f"Parameter `{name}` expects {label}={dim.name} to be divisible by "
                    f"{dim.divisibility} but got {label}=%lld",
                    f"(long long){var}",
                ),
            )

    def scalar(self, index: int, s: Scalar) -> None:
        a, name, dt = f"args[{index}]", s.name, s.dtype
        ctype = SCALAR_DTYPES[dt][0]
        fail = f'return tvmffi_cg_fail_type(sig, "{name}", "{dt}", &{a});'
        self.lines.append(f"  /* {s} */")
        self.lines.append(f"  {ctype} p{index};")
        if dt in ("int32", "int64"):
            self.lines += [
                f"  if ({a}.type_index != kTVMFFIInt && {a}.type_index != kTVMFFIBool) {fail}",
            ]
            if dt == "int32":
                self.check(
                    f"{a}.v_int64 < INT32_MIN || {a}.v_int64 > INT32_MAX",
                    self.raise_(
                        "ValueError",
                        f"Parameter `{name}` expects an int32 but got %lld (out of range)",
                        f"(long long){a}.v_int64",
                    ),
                )
            self.lines.append(f"  p{index} = ({ctype}){a}.v_int64;")
        elif dt in ("float32", "float64"):
            self.lines += [
                f"  if ({a}.type_index == kTVMFFIFloat) {{",
                f"    p{index} = ({ctype}){a}.v_float64;",
                f"  }} else if ({a}.type_index == kTVMFFIInt) {{",
                f"    p{index} = ({ctype}){a}.v_int64;",
                "  } else {",
                f"    {fail}",
                "  }",
            ]
        else:  # bool
            self.lines += [
                f"  if ({a}.type_index != kTVMFFIBool && {a}.type_index != kTVMFFIInt) {fail}",
                f"  p{index} = {a}.v_int64 != 0;",
            ]


def _type_schema(sig: Signature) -> str:
    params = []
    for p in sig.ffi_params:
        key = "DLTensor*" if isinstance(p, Tensor) else SCALAR_DTYPES[p.dtype][1]
        params.append({"type": key})
    named = {"return": [{"type": "None"}], "params": params}
    schema = {"type": "ffi.Function", "named_args": named}
    return json.dumps(schema, separators=(",", ":"))


def _param_meta(p: Tensor | Scalar | EnvStream) -> dict[str, Any]:
    if isinstance(p, Tensor):
        return {
            "name": p.name,
            "kind": "tensor",
            "shape": [d if isinstance(d, int) else d.name for d in p.shape],
            "dtype": p.dtype,
            "device": p.device,
            "strides": None
            if p.strides is None
            else [d if isinstance(d, int) else d.name for d in p.strides],
            "data_alignment": p.data_alignment,
            "output": p.output,
            "inout": p.inout,
        }
    if isinstance(p, Scalar):
        return {"name": p.name, "kind": "scalar", "dtype": p.dtype}
    return {"name": p.name, "kind": "env_stream"}


def metadata_json(sig: Signature, kernel: str) -> str:
    """The JSON text ``__tvm_ffi__metadata_<name>`` returns."""
    meta = {
        "type_schema": _type_schema(sig),
        "signature": str(sig),
        "kernel": kernel_prototype(sig, kernel),
        "params": [_param_meta(p) for p in sig.params],
        "vars": [
            {"name": v.name, "dtype": v.dtype, "divisibility": v.divisibility} for v in sig.vars
        ],
        "generator": "tvmffi.codegen",
    }
    return json.dumps(meta, separators=(",", ":"))


_STRING_GETTER = """\
TVMFFI_CG_EXPORT int {symbol}(void* self, const TVMFFIAny* args, int32_t num_args,
    TVMFFIAny* result) {{
  (void)self; (void)args; (void)num_args;
  static const char text[] = {literal};
  TVMFFIByteArray bytes = {{text, sizeof(text) - 1}};
  return TVMFFIStringFromByteArray(&bytes, result);
}}"""


def _string_getter(symbol: str, text: str) -> list[str]:
    """Lines of a C function that returns ``text`` as a runtime string (doc and metadata)."""
    return _STRING_GETTER.format(symbol=symbol, literal=c_string(text)).split("\n")


def emit_c(signature: Signature, kernel: str | None = None) -> str:
    """C source of ``__tvm_ffi_<name>``: validate every argument, then call ``kernel``.

    The kernel is declared as ``int kernel(...)`` taking, in order: each Tensor's
    typed data pointer (byte offset applied; ``float*``, ``int32_t*``, ``uint8_t*``
    for bool, ``uint16_t*`` for float16/bfloat16) or each Scalar's C value
    (``int32_t``, ``int64_t``, ``float``, ``double``, ``bool``); then every Var as
    ``int64_t`` in order of first appearance; then each EnvStream as ``void*``. A
    non-zero return means the kernel raised an error through the runtime. Also
    emits ``__tvm_ffi__metadata_<name>`` and ``__tvm_ffi__doc_<name>``.
    ``kernel`` defaults to ``<name>_kernel``.
    """
    if not isinstance(signature, Signature):
        raise TypeError(f"emit_c expects a Signature, not {type(signature).__name__}")
    kernel = f"{signature.name}_kernel" if kernel is None else kernel
    check_identifier(kernel, "kernel name")
    sig, name = signature, signature.name
    em = _Emitter(sig)
    nargs = len(sig.ffi_params)
    em.check(
        f"num_args != {nargs}",
        em.raise_("TypeError", f"Expects {nargs} arguments but got %d", "(int)num_args"),
    )
    for index in sig.check_order:
        p = sig.ffi_params[index]
        if isinstance(p, Tensor):
            em.tensor(index, p)
        else:
            em.scalar(index, p)
    call_args = [f"p{index}" for index in range(nargs)]
    call_args += [em.var_local[v.name] for v in sig.vars]
    streams = [p for p in sig.params if isinstance(p, EnvStream)]
    if streams:
        first = em.first_tensor
        em.lines.append(
            f"  void* stream = TVMFFIEnvGetStream({first}->device.device_type, "
            f"{first}->device.device_id);"
        )
        call_args += ["stream"] * len(streams)
    if nargs == 0:
        em.lines.append("  (void)args;")
    out = [
        f"/* Generated by tvmffi.codegen: {sig} */",
        _PRELUDE,
        "#ifdef __cplusplus",
        'extern "C" {',
        "#endif",
        "",
        *_kernel_declaration(sig, kernel),
        "",
        f"TVMFFI_CG_EXPORT int __tvm_ffi_{name}(void* self, const TVMFFIAny* args, "
        "int32_t num_args,",
        "    TVMFFIAny* result) {",
        f"  static const char sig[] = {c_string(str(sig))};",
        "  (void)self;",
        *em.lines,
        # The caller initialized the result to some POD value; make it None.
        "  result->type_index = kTVMFFINone;",
        f"  return tvmffi_cg_kernel_{name}({', '.join(call_args)}) != 0 ? -1 : 0;",
        "}",
        "",
        *_string_getter(f"__tvm_ffi__metadata_{name}", metadata_json(sig, kernel)),
        "",
        *_string_getter(f"__tvm_ffi__doc_{name}", sig.doc),
        "",
        "#ifdef __cplusplus",
        "}",
        "#endif",
        "",
    ]
    return "\n".join(out)
