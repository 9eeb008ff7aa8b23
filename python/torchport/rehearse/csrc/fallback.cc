// The boxed fallback: every operator without a kernel of its own runs PyTorch's CPU kernel on CPU
// views of the device tensors (same memory, no copy), and its outputs are wrapped back as device
// tensors. Before it runs, the op is judged against the target's lists (native / fallback /
// unknown) and its dtypes against the dtypes the target refuses. Plus the few kernels a device
// needs of its own: empty, copy, resize, set_, convolution_overrideable.
#include <ATen/EmptyTensor.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/library.h>

#include <chrono>
#include <cstring>
#include <unordered_map>

#include "rehearse.h"

namespace torchport::rehearse {
namespace {

constexpr auto kPU1 = c10::DeviceType::PrivateUse1;

// A device tensor: its dispatch key is PrivateUse1.
bool is_dev(const at::Tensor& t) {
  return t.defined() && t.unsafeGetTensorImpl()->key_set().has(c10::DispatchKey::PrivateUse1);
}

// While a CPU kernel runs a device op, each device storage is seen through a CPU storage on the
// same memory (a non-owning DataPtr labelled CPU that keeps the device storage alive). Views the
// kernel makes of it are CPU tensors too. One CPU storage per device storage per call, so aliasing
// between arguments is kept.
struct Holder {
  c10::Storage device;
};
void release_holder(void* p) { delete static_cast<Holder*>(p); }

struct ViewCache {
  std::vector<std::pair<c10::StorageImpl*, c10::Storage>> map;  // device storage -> CPU storage

  c10::Storage cpu_of(const c10::Storage& dev) {
    c10::StorageImpl* key = dev.unsafeGetStorageImpl();
    for (auto& [k, v] : map) {
      if (k == key) return v;
    }
    void* data = const_cast<void*>(dev.data());
    auto* h = new Holder{dev};
    c10::DataPtr dp(data, h, &release_holder, c10::Device(c10::DeviceType::CPU));
    c10::Storage view(c10::Storage::use_byte_size_t(), dev.nbytes(), std::move(dp),
                      c10::GetCPUAllocator(),
                      /*resizable=*/true);
    map.emplace_back(key, view);
    return view;
  }
  // The device storage a CPU storage stands for, or nullptr.
  c10::StorageImpl* device_of(const c10::StorageImpl* cpu) const {
    for (const auto& [k, v] : map) {
      if (v.unsafeGetStorageImpl() == cpu) return k;
    }
    return nullptr;
  }
};

std::mutex g_table_mu;
std::unordered_map<const void*, OpEntry*> g_table;  // keyed by the operator's schema address
std::vector<OpEntry*> g_entries;

std::mutex g_dtype_mu;
std::map<std::tuple<std::string, std::string, std::string>, int64_t> g_dtype_violations;

bool refused(c10::ScalarType st) { return (config().refused_dtypes >> static_cast<int>(st)) & 1U; }

std::string op_name(const c10::OperatorHandle& op) {
  const auto& n = op.schema().operator_name();
  std::string s = n.name;
  if (s.rfind("aten::", 0) == 0) s = s.substr(6);
  if (!n.overload_name.empty()) s += "." + n.overload_name;
  return s;
}

// An operator's name as the user knows it: aten's without their namespace in op_name, and others
// (torch_npu's npu::npu_rms_norm) with theirs.
std::string qualified(const std::string& name) {
  return name.find("::") == std::string::npos ? "aten::" + name : name;
}

std::string device_word() {
  const std::string& t = config().target;
  if (t == "npu") return "NPU";
  if (t == "mlu") return "MLU";
  return "MUSA";
}

[[noreturn]] void raise_fallback_error(const OpEntry& e) {
  const std::string full = qualified(e.name);
  if (config().fallback == "error" && !config().strict) {
    // torch_musa has no CPU fallback: the dispatcher's own error for a missing kernel.
    TORCH_CHECK_NOT_IMPLEMENTED(
        false, "Could not run '", full, "' with arguments from the '", config().target,
        "' backend. This could be because the operator doesn't exist for this backend, "
        "or was omitted during the selective/custom build process (if using custom "
        "build). [torchport rehearse: not in the ",
        config().target, " operator lists: ", e.reason, "]");
  }
  TORCH_CHECK_NOT_IMPLEMENTED(
      false, "The operator '", full, "' is not currently supported on the ", device_word(),
      " backend and its CPU fallback is disabled (",
      config().strict_switch.empty() ? std::string("--strict") : config().strict_switch,
      "). [torchport rehearse: ", e.reason, "]");
}

void warn_once(OpEntry& e) {
  bool expected = false;
  if (!e.warned.compare_exchange_strong(expected, true)) return;
  const std::string full = qualified(e.name);
  std::string msg;
  if (config().target == "npu") {
    // torch_npu's wording (VariableFallbackKernel.cpp, reference §1.1)
    msg = "CAUTION: The operator '" + full +
          "' is not currently supported on the NPU backend and will fall back to run on the CPU. "
          "This may "
          "have performance implications.";
  } else {
    msg = "The operator '" + full + "' is not currently supported on the " + device_word() +
          " backend and will fall back to run on the CPU.";
  }
  if (callbacks().warn) {
    callbacks().warn(msg);
  } else {
    TORCH_WARN(msg);
  }
}

}  // namespace

Callbacks& callbacks() {
  static Callbacks c;
  return c;
}

OpEntry& op_entry(const c10::OperatorHandle& op) {
  const void* key = &op.schema();
  {
    std::lock_guard<std::mutex> lock(g_table_mu);
    auto it = g_table.find(key);
    if (it != g_table.end()) return *it->second;
  }
  auto* e = new OpEntry();
  e->name = op_name(op);
  if (callbacks().classify) {
    auto [st, why] = callbacks().classify(e->name);
    e->status = static_cast<Status>(st);
    e->reason = why;
  } else {
    e->status = Status::Unknown;
    e->reason = "rehearsal not configured";
  }
  std::lock_guard<std::mutex> lock(g_table_mu);
  auto [it, inserted] = g_table.emplace(key, e);
  if (!inserted) {
    delete e;
    return *it->second;
  }
  g_entries.push_back(e);
  return *e;
}

std::vector<OpEntry*> all_entries() {
  std::lock_guard<std::mutex> lock(g_table_mu);
  return g_entries;
}

void reset_op_stats() {
  std::lock_guard<std::mutex> lock(g_table_mu);
  for (OpEntry* e : g_entries) {
    e->calls = 0;
    e->ns = 0;
    e->failed = 0;
    std::lock_guard<std::mutex> l2(e->mu);
    e->sites.clear();
    e->failed_sites.clear();
    e->failure.clear();
  }
  std::lock_guard<std::mutex> l3(g_dtype_mu);
  g_dtype_violations.clear();
}

void record_dtype_violation(const std::string& op, const std::string& dtype,
                            const std::string& site) {
  std::lock_guard<std::mutex> lock(g_dtype_mu);
  g_dtype_violations[{op, dtype, site}] += 1;
}

std::vector<std::tuple<std::string, std::string, std::string, int64_t>> dtype_violations() {
  std::lock_guard<std::mutex> lock(g_dtype_mu);
  std::vector<std::tuple<std::string, std::string, std::string, int64_t>> out;
  for (auto& [k, n] : g_dtype_violations)
    out.emplace_back(std::get<0>(k), std::get<1>(k), std::get<2>(k), n);
  return out;
}

std::string user_site() {
  if (!callbacks().site) return "";
  return callbacks().site();
}

std::string refused_message(const std::string& op, c10::ScalarType st) {
  // The wording Ascend's FAQ quotes for float64 on the NPU (reference:
  // peer-migration-tools.md 1.7).
  std::string scalar = st == c10::ScalarType::Double ? "Double" : std::string(c10::toString(st));
  return "Unsupport data type: at::ScalarType::" + scalar +
         " [torchport rehearse: " + qualified(op) + " on " + config().target + ", which has no " +
         c10::toString(st) + " (torchport targets data); keep this tensor in float32]";
}

namespace {

at::Tensor as_cpu_in(const at::Tensor& t, ViewCache& cache) {
  if (!is_dev(t)) return t;
  c10::TensorImpl* src = t.unsafeGetTensorImpl();
  auto impl = c10::make_intrusive<c10::TensorImpl>(
      cache.cpu_of(src->storage()), c10::DispatchKeySet(c10::DispatchKey::CPU), src->dtype());
  impl->set_sizes_and_strides(src->sizes(), src->strides(), src->storage_offset());
  return at::Tensor(std::move(impl));
}

// Makes a CPU storage that the kernel filled or grew device memory of device `dev`.
void adopt_memory(c10::StorageImpl* st, c10::DeviceIndex dev) {
  const c10::Device want(kPU1, dev);
  if (st->nbytes() != 0 && !host_owns(st->data())) {
    c10::DataPtr fresh = host_allocate(dev, st->nbytes(), want);
    std::memcpy(fresh.get(), st->data(), st->nbytes());
    st->set_data_ptr_noswap(std::move(fresh));
  } else {
    st->mutable_data_ptr().unsafe_set_device(want);
  }
  st->set_allocator(device_allocator());
}

at::Tensor as_device_in(const at::Tensor& t, c10::DeviceIndex dev, const ViewCache* cache) {
  if (!t.defined() || is_dev(t)) return t;
  c10::TensorImpl* src = t.unsafeGetTensorImpl();
  c10::StorageImpl* st = src->storage().unsafeGetStorageImpl();
  c10::StorageImpl* owner = cache != nullptr ? cache->device_of(st) : nullptr;
  c10::Storage storage;
  if (owner != nullptr && st->data() == owner->data()) {
    storage = c10::Storage(
        c10::intrusive_ptr<c10::StorageImpl>::reclaim_copy(owner));  // a view of an input
  } else {
    adopt_memory(st, dev);  // fresh memory from the CPU kernel
    storage = src->storage();
  }
  auto impl = c10::make_intrusive<c10::TensorImpl>(
      std::move(storage), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), src->dtype());
  impl->set_sizes_and_strides(src->sizes(), src->strides(), src->storage_offset());
  return at::Tensor(std::move(impl));
}

// After the kernel: carry a resize (new memory) or set_ of a mutated argument's CPU view to the
// device tensor.
void sync_meta(const at::Tensor& dev_t, const at::Tensor& view, const ViewCache& cache) {
  c10::TensorImpl* d = dev_t.unsafeGetTensorImpl();
  c10::TensorImpl* v = view.unsafeGetTensorImpl();
  c10::StorageImpl* vst = v->storage().unsafeGetStorageImpl();
  c10::StorageImpl* owner = cache.device_of(vst);
  c10::StorageImpl* dst = d->storage().unsafeGetStorageImpl();
  if (owner == dst) {
    if (vst->data() != dst->data() || vst->nbytes() != dst->nbytes()) {
      // the kernel resized the argument: its new memory becomes the device storage's
      adopt_memory(vst, dev_t.device().index());
      c10::DataPtr moved =
          vst->set_data_ptr(c10::DataPtr(nullptr, c10::Device(c10::DeviceType::CPU)));
      dst->set_data_ptr_noswap(std::move(moved));
      dst->set_nbytes(vst->nbytes());
    }
  } else if (owner != nullptr) {
    d->set_storage_keep_dtype(
        c10::Storage(c10::intrusive_ptr<c10::StorageImpl>::reclaim_copy(owner)));
  } else {
    adopt_memory(vst, dev_t.device().index());
    d->set_storage_keep_dtype(v->storage());
  }
  if (v->sizes() != d->sizes() || v->strides() != d->strides() ||
      v->storage_offset() != d->storage_offset()) {
    d->set_sizes_and_strides(v->sizes(), v->strides(), v->storage_offset());
  }
}

}  // namespace

at::Tensor as_cpu(const at::Tensor& t) {
  ViewCache cache;
  return as_cpu_in(t, cache);
}

at::Tensor as_device(const at::Tensor& t, c10::DeviceIndex dev) {
  return as_device_in(t, dev, nullptr);
}

namespace {

// Records the device of the first device tensor and the first refused dtype.
struct ArgScan {
  c10::DeviceIndex dev = -1;
  c10::ScalarType bad = c10::ScalarType::Undefined;
  at::Generator gen;      // the device generator passed to the op, if any
  bool host_gen = false;  // a generator of another device (the CPU's) was passed
  void see(const at::Tensor& t) {
    if (!is_dev(t)) return;
    if (dev < 0) dev = t.device().index();
    // A 0-dim tensor is a scalar: torch.amp.GradScaler computes its inverse scale in float64 on the
    // device (torch/amp/grad_scaler.py), which the vendors' devices run; only real float64 data is
    // refused.
    if (bad == c10::ScalarType::Undefined && refused(t.scalar_type()) && t.dim() > 0)
      bad = t.scalar_type();
  }
};

c10::IValue to_cpu_ivalue(const c10::IValue& v, ArgScan& scan, ViewCache& cache) {
  if (v.isTensor()) {
    scan.see(v.toTensor());
    return as_cpu_in(v.toTensor(), cache);
  }
  if (v.isList()) {
    c10::List<c10::IValue> in = v.toList();
    bool any = false;
    for (const c10::IValue& x : in) {
      if (x.isTensor() && is_dev(x.toTensor())) {
        any = true;
        break;
      }
    }
    if (!any) return v;
    c10::impl::GenericList out(in.elementType());
    out.reserve(in.size());
    for (const c10::IValue& x : in) {
      if (x.isTensor()) {
        scan.see(x.toTensor());
        out.push_back(as_cpu_in(x.toTensor(), cache));
      } else {
        out.push_back(x);
      }
    }
    return out;
  }
  if (v.isGenerator()) {
    const at::Generator& g = v.toGenerator();
    if (g.defined() && g.device().type() == kPU1) {
      scan.gen = g;
      return host_generator_of(g);
    }
    if (g.defined()) scan.host_gen = true;
  }
  return v;
}

c10::IValue to_device_ivalue(const c10::IValue& v, c10::DeviceIndex dev, const ViewCache& cache) {
  if (v.isTensor()) return as_device_in(v.toTensor(), dev, &cache);
  if (v.isList()) {
    c10::List<c10::IValue> in = v.toList();
    c10::impl::GenericList out(in.elementType());
    out.reserve(in.size());
    for (const c10::IValue& x : in) {
      out.push_back(x.isTensor() ? c10::IValue(as_device_in(x.toTensor(), dev, &cache)) : x);
    }
    return out;
  }
  return v;
}

void sync_back(const c10::IValue& orig, const c10::IValue& view, const ViewCache& cache) {
  if (orig.isTensor()) {
    if (is_dev(orig.toTensor())) sync_meta(orig.toTensor(), view.toTensor(), cache);
    return;
  }
  if (orig.isList() && view.isList()) {
    c10::List<c10::IValue> a = orig.toList();
    c10::List<c10::IValue> b = view.toList();
    for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
      c10::IValue x = a.get(i);
      if (x.isTensor() && is_dev(x.toTensor())) sync_meta(x.toTensor(), b.get(i).toTensor(), cache);
    }
  }
}

}  // namespace

// Judges one call before it runs: refused dtype -> the device's error; a fallback -> the vendor's
// warning (once per op) or, with --strict / on a target without fallback, the vendor's error.
// Non-native calls are counted per user call site.
std::string admit(OpEntry& e, c10::ScalarType bad) {
  if (bad != c10::ScalarType::Undefined) {
    record_dtype_violation(e.name, c10::toString(bad), user_site());
    TORCH_CHECK(false, refused_message(e.name, bad));
  }
  if (e.status == Status::Native) return "";
  std::string site = user_site();
  {
    std::lock_guard<std::mutex> lock(e.mu);
    e.sites[site] += 1;
  }
  if (e.status == Status::Fallback) {
    if (config().strict || config().fallback == "error") {
      e.calls += 1;
      raise_fallback_error(e);
    }
    warn_once(e);
  }
  return site;
}

c10::ScalarType refused_dtype(std::initializer_list<at::Tensor> ts) {
  for (const at::Tensor& t : ts) {
    // A 0-dim tensor is a scalar (see ArgScan).
    if (is_dev(t) && refused(t.scalar_type()) && t.dim() > 0) return t.scalar_type();
  }
  return c10::ScalarType::Undefined;
}

void count_call(OpEntry& e, std::chrono::steady_clock::time_point t0) {
  e.ns +=
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0)
          .count();
  e.calls += 1;
}

namespace {
constexpr const char* kNotRunMark = "[torchport rehearse: counted as refused";
}  // namespace

void raise_not_implemented(OpEntry& e, const std::string& site,
                           const c10::NotImplementedError& err) {
  const std::string& msg = err.msg();
  // Raised by an inner call of the device, already counted and worded: pass it on.
  if (msg.find(kNotRunMark) != std::string::npos) throw err;
  std::string first = msg.substr(0, msg.find('\n'));
  // The dispatcher's "Could not run 'aten::x' with arguments from the 'CPU' backend. This could
  // be because ...": its first sentence says it.
  const size_t cut = first.find(" backend. ");
  if (first.rfind("Could not run '", 0) == 0 && cut != std::string::npos)
    first = first.substr(0, cut + 9);
  std::string where = site.empty() ? user_site() : site;
  {
    std::lock_guard<std::mutex> lock(e.mu);
    if (!site.empty()) {  // admit counted it as a call of a non-native op: it did not run
      auto it = e.sites.find(site);
      if (it != e.sites.end() && --it->second <= 0) e.sites.erase(it);
    }
    e.failed_sites[where] += 1;
    if (e.failure.empty()) e.failure = "NotImplementedError: " + first;
  }
  e.failed += 1;
  TORCH_CHECK_NOT_IMPLEMENTED(
      false, qualified(e.name), " cannot run on the rehearsal ", config().target,
      " device, which runs operators with PyTorch's CPU kernels: ", first, " ", kNotRunMark,
      "; what the ", config().target, " lists say of it: ", e.reason, "]");
}

namespace {

// The element count of the first tensor among the `nret` values on top of the stack (0 if none).
int64_t first_tensor_numel(const torch::jit::Stack& stack, size_t nret) {
  for (size_t r = stack.size() - nret; r < stack.size(); ++r) {
    const c10::IValue& v = stack[r];
    if (v.isTensor()) return v.toTensor().numel();
    if (v.isTensorList() && !v.toTensorList().empty()) return v.toTensorList().get(0).numel();
  }
  return 0;
}

void rehearse_fallback(const c10::OperatorHandle& op, c10::DispatchKeySet /*ks*/,
                       torch::jit::Stack* stack) {
  OpEntry& e = op_entry(op);
  const auto& schema = op.schema();
  const size_t nargs = schema.arguments().size();
  const size_t base = stack->size() - nargs;

  // Keep the device arguments; replace them on the stack by CPU views.
  std::vector<c10::IValue> orig(stack->begin() + static_cast<std::ptrdiff_t>(base), stack->end());
  ArgScan scan;
  ViewCache cache;
  for (size_t i = 0; i < nargs; ++i) (*stack)[base + i] = to_cpu_ivalue(orig[i], scan, cache);

  const std::string site = admit(e, scan.bad);
  std::vector<c10::IValue> views(stack->begin() + static_cast<std::ptrdiff_t>(base), stack->end());
  const c10::DeviceIndex dev = scan.dev >= 0 ? scan.dev : current_device();
  auto t0 = std::chrono::steady_clock::now();
  try {
    RedirectGuard redirect(dev);
    op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), stack);
  } catch (const c10::NotImplementedError& err) {
    // No CPU kernel to run it with (e.g. an op torch implements only for CUDA-like devices): the
    // device cannot run it. Counted as refused, not as a call that ran.
    raise_not_implemented(e, site, err);
  }
  count_call(e, t0);
  // A seeded op drew from the generator passed in, else from the device's default one (whose
  // numbers are the host's default generator's): its Philox offset moves on by the output's size.
  if (!scan.host_gen && op.hasTag(at::Tag::nondeterministic_seeded)) {
    drew_from(scan.gen.defined() ? scan.gen : default_generator(dev),
              first_tensor_numel(*stack, schema.returns().size()));
  }

  // Mutated arguments: carry a resize or set_ of the view over to the device tensor.
  for (size_t i = 0; i < nargs; ++i) {
    const auto* alias = schema.arguments()[i].alias_info();
    if (alias != nullptr && alias->isWrite()) sync_back(orig[i], views[i], cache);
  }
  const auto& rets = schema.returns();
  const size_t nret = rets.size();
  const size_t rbase = stack->size() - nret;
  for (size_t r = 0; r < nret; ++r) {
    c10::IValue& out = (*stack)[rbase + r];
    const auto* alias = rets[r].alias_info();
    if (alias != nullptr && alias->isWrite()) {
      // returns a mutated argument: hand back the very device tensor that was passed in
      for (size_t i = 0; i < nargs; ++i) {
        const auto* a = schema.arguments()[i].alias_info();
        if (a != nullptr && a->isWrite() && a->beforeSets() == alias->beforeSets()) {
          out = orig[i];
          break;
        }
      }
      continue;
    }
    out = to_device_ivalue(out, dev, cache);
  }
}

// ---- kernels of the device itself ----

at::Tensor rh_empty(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype,
                    std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                    std::optional<bool> /*pin*/, std::optional<c10::MemoryFormat> mf) {
  TORCH_CHECK(!layout.has_value() || *layout == c10::Layout::Strided,
              "only strided tensors on the rehearsal device");
  const c10::Device d = device.value_or(c10::Device(kPU1, current_device()));
  const c10::DeviceIndex idx = d.index() < 0 ? current_device() : d.index();
  check_device(idx);
  const c10::ScalarType st = dtype.value_or(at::get_default_dtype_as_scalartype());
  c10::DeviceIndex prev = current_device();
  set_current_device(idx);
  at::Tensor t = at::detail::empty_generic(
      size, device_allocator(), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), st, mf);
  set_current_device(prev);
  return t;
}

at::Tensor rh_empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride,
                            std::optional<c10::ScalarType> dtype,
                            std::optional<c10::Layout> /*layout*/,
                            std::optional<c10::Device> device, std::optional<bool> /*pin*/) {
  const c10::Device d = device.value_or(c10::Device(kPU1, current_device()));
  const c10::DeviceIndex idx = d.index() < 0 ? current_device() : d.index();
  check_device(idx);
  const c10::ScalarType st = dtype.value_or(at::get_default_dtype_as_scalartype());
  c10::DeviceIndex prev = current_device();
  set_current_device(idx);
  at::Tensor t = at::detail::empty_strided_generic(
      size, stride, device_allocator(), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), st);
  set_current_device(prev);
  return t;
}

at::Tensor rh_copy_from(const at::Tensor& self, const at::Tensor& dst, bool /*non_blocking*/) {
  ViewCache cache;
  at::Tensor s = as_cpu_in(self, cache);
  at::Tensor d = as_cpu_in(dst, cache);
  d.copy_(s);
  return dst;
}

at::Tensor rh_copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  dst.resize_(self.sizes());
  return rh_copy_from(self, dst, false);
}

const at::Tensor& rh_resize(const at::Tensor& self, c10::IntArrayRef size,
                            std::optional<c10::MemoryFormat> mf) {
  c10::TensorImpl* impl = self.unsafeGetTensorImpl();
  impl->set_sizes_contiguous(size);
  if (mf.has_value() && *mf != c10::MemoryFormat::Preserve) impl->empty_tensor_restride(*mf);
  const size_t need =
      impl->numel() == 0
          ? 0
          : (static_cast<size_t>(impl->storage_offset()) + static_cast<size_t>(impl->numel())) *
                impl->itemsize();
  c10::StorageImpl* st = impl->storage().unsafeGetStorageImpl();
  if (need > st->nbytes()) {
    c10::DeviceIndex prev = current_device();
    set_current_device(self.device().index());
    c10::DataPtr fresh = device_allocator()->allocate(need);
    set_current_device(prev);
    if (st->nbytes()) std::memcpy(fresh.get(), st->data(), st->nbytes());
    st->set_data_ptr_noswap(std::move(fresh));
    st->set_nbytes(need);
  }
  return self;
}

at::Tensor& rh_set_storage(at::Tensor& self, c10::Storage source, int64_t offset,
                           c10::IntArrayRef size, c10::IntArrayRef stride) {
  TORCH_CHECK(source.device().type() == kPU1 || source.nbytes() == 0, "set_: the storage is on ",
              source.device(), ", the tensor on ", self.device());
  c10::TensorImpl* impl = self.unsafeGetTensorImpl();
  impl->set_storage_keep_dtype(std::move(source));
  impl->set_sizes_and_strides(size, stride, offset);
  return self;
}

at::Tensor& rh_set_storage_whole(at::Tensor& self, c10::Storage source) {
  const int64_t n = static_cast<int64_t>(source.nbytes() / self.dtype().itemsize());
  return rh_set_storage(self, std::move(source), 0, {n}, {1});
}

at::Tensor& rh_set_tensor(at::Tensor& self, const at::Tensor& src) {
  return rh_set_storage(self, src.storage(), src.storage_offset(), src.sizes(), src.strides());
}

at::Tensor& rh_set_empty(at::Tensor& self) {
  c10::Storage s(c10::Storage::use_byte_size_t(), 0, device_allocator(), true);
  return rh_set_storage(self, s, 0, {0}, {1});
}

at::Tensor rh_conv(const at::Tensor& input, const at::Tensor& weight,
                   const std::optional<at::Tensor>& bias, c10::IntArrayRef stride,
                   c10::IntArrayRef padding, c10::IntArrayRef dilation, bool transposed,
                   c10::IntArrayRef output_padding, int64_t groups) {
  static auto handle =
      c10::Dispatcher::singleton().findSchemaOrThrow("aten::convolution_overrideable", "");
  OpEntry& e = op_entry(handle);
  std::optional<at::Tensor> b =
      bias.has_value() ? std::optional<at::Tensor>(as_cpu(*bias)) : std::nullopt;
  const c10::DeviceIndex dev = input.device().index();
  at::Tensor out = run_own_kernel(e, refused_dtype({input}), dev, [&] {
    return at::convolution(as_cpu(input), as_cpu(weight), b, stride, padding, dilation, transposed,
                           output_padding, groups);
  });
  return as_device(out, dev);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> rh_conv_backward(
    const at::Tensor& grad, const at::Tensor& input, const at::Tensor& weight,
    c10::IntArrayRef stride, c10::IntArrayRef padding, c10::IntArrayRef dilation, bool transposed,
    c10::IntArrayRef output_padding, int64_t groups, std::array<bool, 3> mask) {
  static auto handle =
      c10::Dispatcher::singleton().findSchemaOrThrow("aten::convolution_backward_overrideable", "");
  OpEntry& e = op_entry(handle);
  const c10::DeviceIndex dev = input.device().index();
  auto r = run_own_kernel(e, refused_dtype({input}), dev, [&] {
    return at::convolution_backward(as_cpu(grad), as_cpu(input), as_cpu(weight), std::nullopt,
                                    stride, padding, dilation, transposed, output_padding, groups,
                                    mask);
  });
  return {as_device(std::get<0>(r), dev), as_device(std::get<1>(r), dev),
          as_device(std::get<2>(r), dev)};
}

}  // namespace

std::vector<std::string> register_listed_kernels() {
  // Library objects must outlive every registration: leaked on purpose (as TORCH_LIBRARY_IMPL's
  // static ones live to the end of the process).
  static std::vector<std::string> done;
  static bool ran = false;
  if (ran) return done;
  ran = true;
  auto* lib = new torch::Library(torch::Library::IMPL, "aten", c10::DispatchKey::PrivateUse1,
                                 __FILE__, static_cast<uint32_t>(__LINE__));
  auto& dispatcher = c10::Dispatcher::singleton();
  for (const c10::OperatorName& name : dispatcher.getAllOpNames()) {
    if (name.name.rfind("aten::", 0) != 0) continue;
    std::optional<c10::OperatorHandle> op = dispatcher.findOp(name);
    if (!op || !op->hasSchema()) continue;
    if (!op->hasKernelForDispatchKey(c10::DispatchKey::CPU)) continue;
    if (op->hasKernelForDispatchKey(c10::DispatchKey::PrivateUse1)) continue;
    if (!op->hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutograd) &&
        !op->hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutogradNonFunctional))
      continue;
    OpEntry& e = op_entry(*op);
    if (e.status != Status::Native) continue;
    std::string overload = name.name.substr(6);
    if (!name.overload_name.empty()) overload += "." + name.overload_name;
    lib->impl(overload.c_str(), torch::CppFunction::makeFromBoxedFunction<&rehearse_fallback>());
    done.push_back(e.name);
  }
  return done;
}

namespace {
// A dense tensor on the host or on the rehearsal device.
bool dense_host_or_device(c10::DispatchKeySet ks) {
  return ks.has_any(c10::DispatchKeySet(c10::DispatchKey::Dense)) &&
         ks.has_any(c10::DispatchKeySet(
             {c10::BackendComponent::CPUBit, c10::BackendComponent::PrivateUse1Bit}));
}

bool rh_has_compatible_shallow_copy_type(const at::Tensor& self, const at::Tensor& from) {
  const c10::DispatchKeySet a = self.key_set();
  const c10::DispatchKeySet b = from.key_set();
  return a == b || (dense_host_or_device(a) && dense_host_or_device(b));
}
}  // namespace

void register_cpu_shallow_copy() {
  static bool ran = false;
  if (ran) return;
  ran = true;
  // Leaked on purpose, as in register_listed_kernels. A call with a device tensor among its
  // arguments dispatches to AutogradPrivateUse1 (autograd comes before the backend), the
  // PrivateUse1 entry serves calls below autograd.
  for (c10::DispatchKey key :
       {c10::DispatchKey::AutogradPrivateUse1, c10::DispatchKey::PrivateUse1}) {
    auto* lib = new torch::Library(torch::Library::IMPL, "aten", key, __FILE__,
                                   static_cast<uint32_t>(__LINE__));
    lib->impl("_has_compatible_shallow_copy_type", TORCH_FN(rh_has_compatible_shallow_copy_type));
  }
}

}  // namespace torchport::rehearse

namespace {
namespace rh = torchport::rehearse;

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&rh::rehearse_fallback>());
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", TORCH_FN(rh::rh_empty));
  m.impl("empty_strided", TORCH_FN(rh::rh_empty_strided));
  m.impl("_copy_from", TORCH_FN(rh::rh_copy_from));
  m.impl("_copy_from_and_resize", TORCH_FN(rh::rh_copy_from_and_resize));
  m.impl("resize_", TORCH_FN(rh::rh_resize));
  m.impl("set_.source_Storage_storage_offset", TORCH_FN(rh::rh_set_storage));
  m.impl("set_.source_Storage", TORCH_FN(rh::rh_set_storage_whole));
  m.impl("set_.source_Tensor", TORCH_FN(rh::rh_set_tensor));
  m.impl("set_", TORCH_FN(rh::rh_set_empty));
  m.impl("convolution_overrideable", TORCH_FN(rh::rh_conv));
  m.impl("convolution_backward_overrideable", TORCH_FN(rh::rh_conv_backward));
}
}  // namespace
