/*
 * The eager kernel of every tvmffi.torch.register_op operator, in C++.
 *
 * One boxed kernel class serves every operator: register_op describes the
 * operator's signature as a flat list of int64 (the plan, see _torch_kernel/
 * __init__.py) and registers a Kernel built from it for the operator's
 * CompositeExplicitAutograd key. A call then never enters Python: the kernel
 * reads the tensors and scalars off the dispatcher's stack, checks them against
 * the signature (functions that do not check themselves), binds the Vars,
 * allocates the outputs, fills one DLTensor per tensor and calls the FFI
 * function through the C ABI, on torch's current stream of the first input's
 * device.
 *
 * Only a failed call goes back to Python: the signature's checks, run there,
 * raise the exact ValueError/TypeError the Python path raises, and that error
 * (or the FFI function's own) becomes the c10 error torch turns into the same
 * Python exception kind and text.
 *
 * Built once per torch (and compiler) by tvmffi's build system and cached.
 */
#include <ATen/EmptyTensor.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/stack.h>
#include <ATen/ops/empty.h>
#include <c10/core/Stream.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>
#include <c10/util/SmallVector.h>
#include <torch/library.h>
#include <tvm/ffi/c_api.h>
#include <tvm/ffi/container/array.h>
#include <tvm/ffi/container/shape.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/string.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace {

namespace ffi = tvm::ffi;

// The plan's layout version; _torch_kernel/__init__.py writes the same number.
constexpr int64_t kPlanVersion = 1;

enum ParamKind : int64_t { kScalar = 0, kInput = 1, kOutput = 2 };
enum ScalarKind : int64_t { kInt32 = 0, kInt64 = 1, kFloat = 2, kBool = 3 };

// A dimension of a shape or strides: a constant, or the index of a Var.
struct Dim {
  bool is_var;
  int64_t value;
};

struct Param {
  ParamKind kind;
  int index;  // the operator argument (scalar, input) or the output number
  ScalarKind scalar;
  DLDataType dtype;
  int32_t device;  // DLPack device type code
  bool writes;     // inout: the kernel writes it
  bool has_strides;
  std::vector<Dim> shape;
  std::vector<Dim> strides;
};

struct VarSpec {
  int64_t lo, hi, divisibility;  // divisibility 0: none
  int source_arg;                // the operator argument that binds it first
  bool source_is_stride;
  int source_k;
};

struct Plan {
  bool checked;           // the FFI function runs the signature's checks itself
  int32_t cuda_code;      // kDLCUDA, or kDLROCM on a HIP build of torch
  int num_args;           // operator arguments (the stack's)
  int num_outputs;
  int num_tensors;        // inputs and outputs: the DLTensors of a call
  int first_input;        // operator argument of the first input tensor, or -1
  std::vector<VarSpec> vars;
  std::vector<Param> params;  // the FFI function's parameters, in order
};

// Reads the flat plan register_op wrote; a malformed one is a bug of tvmffi.
class PlanReader {
 public:
  explicit PlanReader(const ffi::Array<int64_t>& data) : data_(data) {}

  int64_t Next() {
    TORCH_CHECK(pos_ < data_.size(), "tvmffi.torch: truncated kernel plan");
    return data_[pos_++];
  }

  std::vector<Dim> Dims(int64_t n) {
    std::vector<Dim> dims;
    for (int64_t k = 0; k < n; ++k) {
      bool is_var = Next() != 0;
      dims.push_back(Dim{is_var, Next()});
    }
    return dims;
  }

  bool AtEnd() const { return pos_ == data_.size(); }

 private:
  const ffi::Array<int64_t>& data_;
  size_t pos_ = 0;
};

Plan ParsePlan(const ffi::Array<int64_t>& data) {
  PlanReader r(data);
  TORCH_CHECK(r.Next() == kPlanVersion, "tvmffi.torch: kernel plan of another version");
  Plan plan;
  plan.checked = r.Next() != 0;
  plan.cuda_code = static_cast<int32_t>(r.Next());
  plan.num_args = static_cast<int>(r.Next());
  plan.first_input = static_cast<int>(r.Next());
  int64_t num_vars = r.Next();
  int64_t num_params = r.Next();
  for (int64_t i = 0; i < num_vars; ++i) {
    VarSpec v;
    v.lo = r.Next();
    v.hi = r.Next();
    v.divisibility = r.Next();
    v.source_arg = static_cast<int>(r.Next());
    v.source_is_stride = r.Next() != 0;
    v.source_k = static_cast<int>(r.Next());
    plan.vars.push_back(v);
  }
  plan.num_outputs = 0;
  plan.num_tensors = 0;
  for (int64_t i = 0; i < num_params; ++i) {
    Param p{};
    p.kind = static_cast<ParamKind>(r.Next());
    p.index = static_cast<int>(r.Next());
    if (p.kind == kScalar) {
      p.scalar = static_cast<ScalarKind>(r.Next());
    } else {
      p.dtype.code = static_cast<uint8_t>(r.Next());
      p.dtype.bits = static_cast<uint8_t>(r.Next());
      p.dtype.lanes = 1;
      p.device = static_cast<int32_t>(r.Next());
      p.writes = r.Next() != 0;
      int64_t ndim = r.Next();
      p.shape = r.Dims(ndim);
      p.has_strides = r.Next() != 0;
      if (p.has_strides) p.strides = r.Dims(ndim);
      plan.num_tensors += 1;
      if (p.kind == kOutput) plan.num_outputs += 1;
    }
    plan.params.push_back(std::move(p));
  }
  TORCH_CHECK(r.AtEnd(), "tvmffi.torch: kernel plan longer than its header says");
  return plan;
}

// ---- torch <-> DLPack -------------------------------------------------------------
// DLPack type of a torch dtype; code 255 for one DLPack has no code for (checks fail).
DLDataType DLTypeOf(at::ScalarType t) {
  switch (t) {
    case at::kBool: return {kDLBool, 8, 1};
    case at::kChar: return {kDLInt, 8, 1};
    case at::kShort: return {kDLInt, 16, 1};
    case at::kInt: return {kDLInt, 32, 1};
    case at::kLong: return {kDLInt, 64, 1};
    case at::kByte: return {kDLUInt, 8, 1};
    case at::kUInt16: return {kDLUInt, 16, 1};
    case at::kUInt32: return {kDLUInt, 32, 1};
    case at::kUInt64: return {kDLUInt, 64, 1};
    case at::kHalf: return {kDLFloat, 16, 1};
    case at::kBFloat16: return {kDLBfloat, 16, 1};
    case at::kFloat: return {kDLFloat, 32, 1};
    case at::kDouble: return {kDLFloat, 64, 1};
    case at::kComplexHalf: return {kDLComplex, 32, 1};
    case at::kComplexFloat: return {kDLComplex, 64, 1};
    case at::kComplexDouble: return {kDLComplex, 128, 1};
    default: return {255, 0, 1};
  }
}

// The torch dtype of an output (Signature dtypes only).
at::ScalarType ScalarTypeOf(DLDataType t) {
  switch (t.code) {
    case kDLBool: return at::kBool;
    case kDLInt:
      return t.bits == 8 ? at::kChar : t.bits == 16 ? at::kShort : t.bits == 32 ? at::kInt : at::kLong;
    case kDLUInt:
      return t.bits == 8 ? at::kByte : t.bits == 16 ? at::kUInt16 : t.bits == 32 ? at::kUInt32 : at::kUInt64;
    case kDLBfloat: return at::kBFloat16;
    default: return t.bits == 16 ? at::kHalf : t.bits == 32 ? at::kFloat : at::kDouble;
  }
}

// ---- errors -------------------------------------------------------------------------
// A c10 error of the Python kind `kind`: torch raises ValueError, TypeError,
// IndexError and NotImplementedError as such, with `message` as their text.
[[noreturn]] void ThrowAs(const std::string& kind, const std::string& message) {
  c10::SourceLocation where{__func__, __FILE__, static_cast<uint32_t>(__LINE__)};
  if (kind == "ValueError") throw c10::ValueError(where, message);
  if (kind == "TypeError") throw c10::TypeError(where, message);
  if (kind == "IndexError") throw c10::IndexError(where, message);
  if (kind == "NotImplementedError") throw c10::NotImplementedError(where, message);
  if (kind == "RuntimeError") throw c10::Error(where, message);
  throw c10::Error(where, kind + ": " + message);  // no c10 kind: a RuntimeError naming it
}

// Rethrow the error the last failed FFI call raised (TLS) as a c10 error.
[[noreturn]] void ThrowRaised() {
  TVMFFIObjectHandle err = nullptr;
  TVMFFIErrorMoveFromRaised(&err);
  if (err == nullptr) ThrowAs("RuntimeError", "tvmffi.torch: the FFI call failed without an error");
  const TVMFFIErrorCell* cell = TVMFFIErrorGetCellPtr(err);
  std::string kind(cell->kind.data, cell->kind.size);
  std::string message(cell->message.data, cell->message.size);
  TVMFFIObjectDecRef(err);
  ThrowAs(kind, message);
}

// ---- the kernel ---------------------------------------------------------------------
class Kernel final : public c10::OperatorKernel {
 public:
  Kernel(Plan plan, ffi::Function fn, ffi::Function explain)
      : plan_(std::move(plan)), fn_(std::move(fn)), explain_(std::move(explain)) {}

  void operator()(const c10::OperatorHandle& /*op*/, c10::DispatchKeySet /*keys*/,
                  torch::jit::Stack* stack) {
    c10::IValue* args = stack->data() + (stack->size() - static_cast<size_t>(plan_.num_args));
    c10::SmallVector<int64_t, 8> vars(plan_.vars.size());
    bool ok = plan_.checked ? BindFromSources(args, vars.data()) : Validate(args, vars.data());
    if (C10_UNLIKELY(!ok)) Explain(args, vars.data());
    c10::SmallVector<at::Tensor, 4> outs;
    Allocate(args, vars.data(), &outs);
    Call(args, outs);
    torch::jit::drop(*stack, static_cast<size_t>(plan_.num_args));
    for (at::Tensor& out : outs) stack->emplace_back(std::move(out));
  }

 private:
  int32_t DeviceCode(c10::DeviceType t) const {
    switch (t) {
      case c10::DeviceType::CPU: return kDLCPU;
      case c10::DeviceType::CUDA: return plan_.cuda_code;
      case c10::DeviceType::MPS: return kDLMetal;
      case c10::DeviceType::XPU: return kDLOneAPI;
      default: return -1;
    }
  }

  static int32_t DeviceId(const at::Device& d) { return d.has_index() ? d.index() : 0; }

  // Binds Var `v` to `value` (its first sight), or checks it keeps its value.
  bool Bind(int v, int64_t value, int64_t* vars, uint64_t* bound) const {
    if (*bound >> v & 1) return vars[v] == value;
    *bound |= uint64_t{1} << v;
    vars[v] = value;
    const VarSpec& s = plan_.vars[static_cast<size_t>(v)];
    if (value < s.lo || value > s.hi) return false;
    return s.divisibility <= 1 || value % s.divisibility == 0;
  }

  bool Dims(const std::vector<Dim>& want, at::IntArrayRef got, int64_t* vars,
            uint64_t* bound) const {
    for (size_t k = 0; k < want.size(); ++k) {
      const Dim& d = want[k];
      if (d.is_var ? !Bind(static_cast<int>(d.value), got[k], vars, bound) : got[k] != d.value) {
        return false;
      }
    }
    return true;
  }

  // Compact row-major (what a Tensor without strides expects); size-1 dims and
  // empty tensors may have any strides.
  static bool Compact(const at::Tensor& t) {
    at::IntArrayRef shape = t.sizes(), strides = t.strides();
    int64_t expected = 1;
    for (size_t k = shape.size(); k-- > 0;) {
      if (shape[k] == 0) return true;
      if (shape[k] != 1 && strides[k] != expected) return false;
      expected *= shape[k];
    }
    return true;
  }

  // The signature's checks, as a yes or no: the messages are Python's (Explain).
  bool Validate(const c10::IValue* args, int64_t* vars) const {
    if (plan_.vars.size() > 64) return false;  // the bitset below; Explain handles it
    uint64_t bound = 0;
    int32_t first_id = plan_.first_input < 0 ? 0 : DeviceId(args[plan_.first_input].toTensor().device());
    for (const Param& p : plan_.params) {
      if (p.kind == kOutput) continue;
      const c10::IValue& a = args[p.index];
      if (p.kind == kScalar) {
        if (p.scalar == kInt32) {
          int64_t v = a.toInt();
          if (v < INT32_MIN || v > INT32_MAX) return false;
        }
        continue;
      }
      const at::Tensor& t = a.toTensor();
      if (t.dim() != static_cast<int64_t>(p.shape.size())) return false;
      DLDataType dt = DLTypeOf(t.scalar_type());
      if (dt.code != p.dtype.code || dt.bits != p.dtype.bits) return false;
      at::Device dev = t.device();
      if (DeviceCode(dev.type()) != p.device || DeviceId(dev) != first_id) return false;
      if (t.layout() != at::kStrided) return false;
      if (!Dims(p.shape, t.sizes(), vars, &bound)) return false;
      if (p.has_strides ? !Dims(p.strides, t.strides(), vars, &bound) : !Compact(t)) return false;
    }
    return true;
  }

  // Each Var from the input that binds it first, for a function that checks its
  // arguments itself; false when that input has too few dimensions to read it.
  bool BindFromSources(const c10::IValue* args, int64_t* vars) const {
    for (size_t v = 0; v < plan_.vars.size(); ++v) {
      const VarSpec& s = plan_.vars[v];
      const at::Tensor& t = args[s.source_arg].toTensor();
      if (s.source_k >= t.dim() || t.layout() != at::kStrided) return false;
      vars[v] = s.source_is_stride ? t.strides()[s.source_k] : t.sizes()[s.source_k];
    }
    return true;
  }

  // A call the checks reject: the Python checks raise the signature's error.
  // Should they pass (a case these checks judge more strictly), the Vars are
  // read as a checking function's are and the call goes ahead.
  void Explain(const c10::IValue* args, int64_t* vars) const {
    ffi::Array<ffi::Any> items;
    for (int i = 0; i < plan_.num_args; ++i) items.push_back(Describe(args[i]));
    try {
      explain_(items);
    } catch (const ffi::Error& err) {
      ThrowAs(err.kind(), err.message());
    }
    if (vars == nullptr) return;
    if (!BindFromSources(args, vars)) {
      ThrowAs("RuntimeError", "tvmffi.torch: the signature's checks passed a call the kernel "
                              "cannot read its sizes from");
    }
  }

  // What Python's checks need of one operator argument.
  static ffi::Any Describe(const c10::IValue& a) {
    if (a.isBool()) return ffi::Any(a.toBool());
    if (a.isInt()) return ffi::Any(a.toInt());
    if (a.isDouble()) return ffi::Any(a.toDouble());
    const at::Tensor& t = a.toTensor();
    at::Device dev = t.device();
    ffi::Array<ffi::Any> info;
    info.push_back(ffi::String(std::string(c10::getDtypeNames(t.scalar_type()).first)));
    info.push_back(ffi::String(c10::DeviceTypeName(dev.type(), /*lower_case=*/true)));
    info.push_back(ffi::Any(static_cast<int64_t>(DeviceId(dev))));
    info.push_back(ffi::Shape(t.sizes().vec()));
    if (t.layout() == at::kStrided) info.push_back(ffi::Shape(t.strides().vec()));
    return ffi::Any(info);
  }

  // Outputs on the first input's device, compact, of the signature's shapes.
  void Allocate(const c10::IValue* args, const int64_t* vars,
                c10::SmallVector<at::Tensor, 4>* outs) const {
    if (plan_.num_outputs == 0) return;
    at::Device dev = args[plan_.first_input].toTensor().device();
    for (const Param& p : plan_.params) {
      if (p.kind != kOutput) continue;
      c10::SmallVector<int64_t, 6> shape;
      for (const Dim& d : p.shape) shape.push_back(d.is_var ? vars[d.value] : d.value);
      at::ScalarType st = ScalarTypeOf(p.dtype);
      if (dev.is_cpu()) {
        // The CPU kernel of at::empty without its dispatch: the kernel writes it.
        outs->emplace_back(at::detail::empty_cpu(shape, st));
      } else {
        outs->emplace_back(at::empty(shape, at::TensorOptions().dtype(st).device(dev)));
      }
    }
  }

  // One DLTensor viewing `t` (which outlives the call). A tensor DLPack cannot
  // describe (its dtype or device) fails the signature's checks, which say so.
  void Fill(const c10::IValue* args, const at::Tensor& t, bool writes, DLTensor* out) const {
    at::Device dev = t.device();
    int32_t code = DeviceCode(dev.type());
    out->dtype = DLTypeOf(t.scalar_type());
    if (C10_UNLIKELY(code < 0 || out->dtype.code == 255)) {
      Explain(args, nullptr);
      ThrowAs("TypeError", "tvmffi.torch: DLPack cannot describe a " +
                               std::string(c10::getDtypeNames(t.scalar_type()).first) +
                               " tensor on " + c10::DeviceTypeName(dev.type(), true));
    }
    out->data = writes ? t.data_ptr() : const_cast<void*>(t.const_data_ptr());
    out->device = DLDevice{static_cast<DLDeviceType>(code), DeviceId(dev)};
    out->ndim = static_cast<int32_t>(t.dim());
    out->shape = const_cast<int64_t*>(t.sizes().data());
    out->strides = const_cast<int64_t*>(t.strides().data());
    out->byte_offset = 0;
  }

  void Call(const c10::IValue* args, const c10::SmallVector<at::Tensor, 4>& outs) const {
    c10::SmallVector<DLTensor, 6> dl(static_cast<size_t>(plan_.num_tensors));
    c10::SmallVector<TVMFFIAny, 8> packed(plan_.params.size());
    size_t next_dl = 0;
    for (size_t i = 0; i < plan_.params.size(); ++i) {
      const Param& p = plan_.params[i];
      TVMFFIAny& any = packed[i];
      any.zero_padding = 0;
      if (p.kind == kScalar) {
        const c10::IValue& a = args[p.index];
        if (p.scalar == kFloat) {
          any.type_index = kTVMFFIFloat;
          any.v_float64 = a.toDouble();
        } else if (p.scalar == kBool) {
          any.type_index = kTVMFFIBool;
          any.v_int64 = a.toBool() ? 1 : 0;
        } else {
          any.type_index = kTVMFFIInt;
          any.v_int64 = a.toInt();
        }
        continue;
      }
      const at::Tensor& t = p.kind == kOutput ? outs[p.index] : args[p.index].toTensor();
      DLTensor* d = &dl[next_dl++];
      Fill(args, t, p.writes || p.kind == kOutput, d);
      any.type_index = kTVMFFIDLTensorPtr;
      any.v_ptr = d;
    }
    TVMFFIAny result;
    result.type_index = kTVMFFINone;
    result.zero_padding = 0;
    result.v_int64 = 0;
    int rc = CallOnStream(args, packed.data(), static_cast<int32_t>(packed.size()), &result);
    if (rc != 0) ThrowRaised();
    if (result.type_index >= kTVMFFIStaticObjectBegin) TVMFFIObjectDecRef(result.v_obj);
  }

  // The call, with torch's current stream of the first input's device as the
  // environment stream when that device has streams (not the CPU).
  int CallOnStream(const c10::IValue* args, TVMFFIAny* packed, int32_t n,
                   TVMFFIAny* result) const {
    void* handle = fn_.get() == nullptr ? nullptr
                                        : const_cast<ffi::FunctionObj*>(fn_.get());
    if (plan_.first_input < 0) return TVMFFIFunctionCall(handle, packed, n, result);
    at::Device dev = args[plan_.first_input].toTensor().device();
    if (dev.is_cpu()) return TVMFFIFunctionCall(handle, packed, n, result);
    int32_t code = DeviceCode(dev.type());
    void* stream = nullptr;
    try {
      stream = c10::impl::getDeviceGuardImpl(dev.type())->getStream(dev).native_handle();
    } catch (const c10::Error&) {
      return TVMFFIFunctionCall(handle, packed, n, result);  // a device without native streams
    }
    void* prev = nullptr;
    if (TVMFFIEnvSetStream(code, DeviceId(dev), stream, &prev) != 0) ThrowRaised();
    int rc = TVMFFIFunctionCall(handle, packed, n, result);
    if (TVMFFIEnvSetStream(code, DeviceId(dev), prev, nullptr) != 0 && rc == 0) ThrowRaised();
    return rc;
  }

  Plan plan_;
  ffi::Function fn_;
  ffi::Function explain_;
};

// Registers the kernel of operator `ns::name` (defined by register_op) for its
// CompositeExplicitAutograd key. The returned function owns the registration:
// the kernel is unregistered when it is freed.
ffi::Function RegisterKernel(ffi::String ns, ffi::String name, ffi::Function fn,
                             ffi::Function explain, ffi::Array<int64_t> plan) {
  auto kernel = std::make_unique<Kernel>(ParsePlan(plan), std::move(fn), std::move(explain));
  auto lib = std::make_shared<torch::Library>(torch::Library::IMPL, std::string(ns),
                                              c10::DispatchKey::CompositeExplicitAutograd,
                                              __FILE__, static_cast<uint32_t>(__LINE__));
  lib->impl(std::string(name).c_str(), torch::CppFunction::makeFromBoxedFunctor(std::move(kernel)));
  return ffi::Function::FromTyped([lib]() { return lib.use_count(); });
}

}  // namespace

TVM_FFI_DLL_EXPORT_TYPED_FUNC(register_kernel, RegisterKernel);
