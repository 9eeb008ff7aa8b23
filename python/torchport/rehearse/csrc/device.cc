// The device: DeviceGuard with streams and host-timed events, the PrivateUse1 hooks, generators,
// autocast.
#include <ATen/autocast_mode.h>
#include <ATen/core/GeneratorForPrivateuseone.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/library.h>

#include <chrono>
#include <cstring>

#include "rehearse.h"

namespace torchport::rehearse {

Config& config() {
  static Config c;
  return c;
}

namespace {

constexpr int kMaxDevices = 64;
constexpr c10::StreamId kPoolSize = 32;  // STREAMS_PER_DEVICE default (reference §1.1)

thread_local c10::DeviceIndex tls_device = 0;
thread_local c10::StreamId tls_stream[kMaxDevices] = {};
std::atomic<c10::StreamId> g_next_stream{kPoolSize + 1};
std::atomic<c10::StreamId> g_pool_next{0};

struct HostEvent {
  std::chrono::steady_clock::time_point at;
  bool recorded = false;
};

c10::Device dev_of(c10::DeviceIndex i) { return c10::Device(c10::DeviceType::PrivateUse1, i); }

struct GuardImpl final : public c10::impl::DeviceGuardImplInterface {
  c10::DeviceType type() const override { return c10::DeviceType::PrivateUse1; }
  c10::Device exchangeDevice(c10::Device d) const override {
    c10::Device old = getDevice();
    if (d.index() >= 0) setDevice(d);
    return old;
  }
  c10::Device getDevice() const override { return dev_of(tls_device); }
  void setDevice(c10::Device d) const override {
    check_device(d.index());
    tls_device = d.index();
  }
  void uncheckedSetDevice(c10::Device d) const noexcept override {
    if (d.index() >= 0 && d.index() < kMaxDevices) tls_device = d.index();
  }
  c10::Stream getStream(c10::Device d) const override {
    c10::DeviceIndex i = d.index() < 0 ? tls_device : d.index();
    return c10::Stream(c10::Stream::UNSAFE, dev_of(i), tls_stream[i]);
  }
  c10::Stream getDefaultStream(c10::Device d) const override {
    return c10::Stream(c10::Stream::UNSAFE, dev_of(d.index() < 0 ? tls_device : d.index()), 0);
  }
  c10::Stream getStreamFromGlobalPool(c10::Device d, bool /*high*/) const override {
    c10::StreamId id = 1 + (g_pool_next++ % kPoolSize);
    return c10::Stream(c10::Stream::UNSAFE, dev_of(d.index() < 0 ? tls_device : d.index()), id);
  }
  c10::Stream getNewStream(c10::Device d, int /*priority*/) const override {
    return c10::Stream(c10::Stream::UNSAFE, dev_of(d.index() < 0 ? tls_device : d.index()),
                       g_next_stream++);
  }
  c10::Stream exchangeStream(c10::Stream s) const override {
    c10::DeviceIndex i = s.device_index();
    c10::Stream old = getStream(dev_of(i));
    tls_stream[i] = s.id();
    return old;
  }
  c10::DeviceIndex deviceCount() const noexcept override {
    return static_cast<c10::DeviceIndex>(config().devices);
  }
  // Streams are ordered and every op runs to completion on the host before it returns: an event is
  // complete once recorded, and waiting on it or on a stream returns at once.
  void record(void** event, const c10::Stream& /*s*/, const c10::DeviceIndex /*i*/,
              const c10::EventFlag /*flag*/) const override {
    if (*event == nullptr) *event = new HostEvent();
    auto* e = static_cast<HostEvent*>(*event);
    e->at = std::chrono::steady_clock::now();
    e->recorded = true;
  }
  void block(void* /*event*/, const c10::Stream& /*s*/) const override {}
  bool queryEvent(void* /*event*/) const override { return true; }
  void destroyEvent(void* event, const c10::DeviceIndex /*i*/) const noexcept override {
    delete static_cast<HostEvent*>(event);
  }
  bool queryStream(const c10::Stream& /*s*/) const override { return true; }
  void synchronizeStream(const c10::Stream& /*s*/) const override {}
  void synchronizeEvent(void* /*event*/) const override {}
  void synchronizeDevice(const c10::DeviceIndex /*i*/) const override {}
  void recordDataPtrOnStream(const c10::DataPtr& /*p*/, const c10::Stream& /*s*/) const override {}
  double elapsedTime(void* a, void* b, const c10::DeviceIndex /*i*/) const override {
    auto* ea = static_cast<HostEvent*>(a);
    auto* eb = static_cast<HostEvent*>(b);
    TORCH_CHECK(ea != nullptr && eb != nullptr && ea->recorded && eb->recorded,
                "Both events must be recorded before calculating elapsed time.");
    return std::chrono::duration<double, std::milli>(eb->at - ea->at).count();
  }
};

// A device generator. Its numbers come from a CPU generator, so that a rehearsed run draws exactly
// the numbers the --target cpu migration draws: the default generator of every device is the host's
// default generator (as `torch.cuda.manual_seed` becomes `torch.manual_seed` on cpu); a generator
// the user makes with torch.Generator(device=...) has a CPU generator of its own.
struct DeviceGenerator final : public c10::GeneratorImpl {
  DeviceGenerator(c10::DeviceIndex i, at::Generator host)
      : c10::GeneratorImpl(dev_of(i), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)),
        host_(std::move(host)) {}
  void set_current_seed(uint64_t seed) override { host_.set_current_seed(seed); }
  void set_offset(uint64_t offset) override { host_.set_offset(offset); }
  uint64_t get_offset() const override { return host_.get_offset(); }
  uint64_t current_seed() const override { return host_.current_seed(); }
  uint64_t seed() override { return host_.seed(); }
  void set_state(const c10::TensorImpl& st) override {
    host_.unsafeGetGeneratorImpl()->set_state(st);
  }
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override {
    return host_.unsafeGetGeneratorImpl()->get_state();
  }
  DeviceGenerator* clone_impl() const override {
    return new DeviceGenerator(device().index(), host_.clone());
  }
  at::Generator host_;
};

struct Hooks final : public at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return config().devices > 0; }
  bool hasPrimaryContext(c10::DeviceIndex /*i*/) const override { return true; }
  void init() const override {}
  const at::Generator& getDefaultGenerator(c10::DeviceIndex i) const override {
    return default_generator(i < 0 ? tls_device : i);
  }
  at::Generator getNewGenerator(c10::DeviceIndex i) const override {
    return new_generator(i < 0 ? tls_device : i);
  }
  c10::Device getDeviceFromPtr(void* /*data*/) const override { return dev_of(tls_device); }
  bool isPinnedPtr(const void* /*data*/) const override { return false; }
  at::Allocator* getPinnedMemoryAllocator() const override { return c10::GetCPUAllocator(); }
  c10::DeviceIndex deviceCount() const override {
    return static_cast<c10::DeviceIndex>(config().devices);
  }
  void setCurrentDevice(c10::DeviceIndex d) const override { set_current_device(d); }
  c10::DeviceIndex getCurrentDevice() const override { return tls_device; }
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex d) const override {
    c10::DeviceIndex old = tls_device;
    set_current_device(d);
    return old;
  }
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex d) const override {
    return exchangeDevice(d);
  }
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t newsize) const override {
    c10::StorageImpl* impl = storage.unsafeGetStorageImpl();
    c10::DataPtr fresh = device_allocator()->allocate(newsize);
    size_t keep = std::min(newsize, impl->nbytes());
    if (keep) std::memcpy(fresh.get(), impl->data(), keep);
    impl->set_data_ptr_noswap(std::move(fresh));
    impl->set_nbytes(newsize);
  }
};

}  // namespace

c10::DeviceIndex current_device() { return tls_device; }

void check_device(c10::DeviceIndex d) {
  TORCH_CHECK(d >= 0 && d < config().devices, "Invalid device ordinal ", static_cast<int>(d), " (",
              config().target, " has ", config().devices,
              " device(s) in this rehearsal; torchport rehearse --devices N gives more)");
}

void set_current_device(c10::DeviceIndex d) {
  check_device(d);
  tls_device = d;
}

const at::Generator& default_generator(c10::DeviceIndex d) {
  static std::vector<at::Generator>* gens = [] {
    auto* v = new std::vector<at::Generator>();
    for (int i = 0; i < kMaxDevices; ++i) {
      v->push_back(at::make_generator<DeviceGenerator>(static_cast<c10::DeviceIndex>(i),
                                                       at::detail::getDefaultCPUGenerator()));
    }
    return v;
  }();
  check_device(d);
  return (*gens)[static_cast<size_t>(d)];
}

at::Generator new_generator(c10::DeviceIndex d) {
  check_device(d);
  return at::make_generator<DeviceGenerator>(d, at::detail::createCPUGenerator());
}

at::Generator host_generator_of(const at::Generator& g) {
  auto* impl = dynamic_cast<DeviceGenerator*>(g.unsafeGetGeneratorImpl());
  TORCH_CHECK(impl != nullptr, "not a generator of the rehearsal device");
  return impl->host_;
}

// C10_REGISTER_GUARD_IMPL for PrivateUse1 (a static registerer, as vendors do).
C10_REGISTER_GUARD_IMPL(PrivateUse1, GuardImpl);

namespace {
struct RegisterHooks {
  RegisterHooks() { at::RegisterPrivateUse1HooksInterface(new Hooks()); }
};
RegisterHooks g_register_hooks;
}  // namespace

}  // namespace torchport::rehearse

// Autocast on AutocastPrivateUse1 with torch's own op lists (the lists vendors reuse: torch_npu's
// AutoCastOps.cpp registers KERNEL_PRIVATEUSEONE entries; its own list is not in
// ../shared/upstream).
namespace {
using at::Tensor;
TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) { m.fallback(torch::CppFunction::makeFallthrough()); }

TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
#define RH_LOWER(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, lower_precision_fp)
#define RH_FP32(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32)
#define RH_FP32_OPT(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32_set_opt_dtype)
#define RH_PROMOTE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, promote)
  AT_FORALL_LOWER_PRECISION_FP(RH_LOWER)
  AT_FORALL_FP32(RH_FP32)
  AT_FORALL_FP32_SET_OPT_DTYPE(RH_FP32_OPT)
  AT_FORALL_PROMOTE(RH_PROMOTE)
#undef RH_LOWER
#undef RH_FP32
#undef RH_FP32_OPT
#undef RH_PROMOTE
}
}  // namespace
