// The device: DeviceGuard with streams and host-timed events, the PrivateUse1 hooks, generators,
// autocast.
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/EmptyTensor.h>
#include <ATen/autocast_mode.h>
#include <ATen/core/GeneratorForPrivateuseone.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/library.h>

#include <chrono>
#include <cstring>
#include <list>
#include <unordered_map>
#include <utility>

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

// A device generator with the vendors' (and CUDA's) Philox state: get_state() is 16 bytes, the
// seed (uint64) then the offset (int64), as torch_npu's NPUGeneratorImpl::get_state writes them
// (torch_npu 2.13.0 wheel, libtorch_npu.so) and as DTensor's RNG tracker reads them
// (torch/distributed/tensor/_random.py, _PhiloxState); set_state takes those 16 bytes or the seed
// alone (8), and an offset must be a multiple of 4, as on both.
//
// Its numbers come from a CPU generator (`host_`), so that a rehearsed run draws exactly the
// numbers the --target cpu migration draws: the default generator of every device draws from the
// host's default generator (as `torch.cuda.manual_seed` becomes `torch.manual_seed` on cpu); a
// generator the user makes with torch.Generator(device=...) has a CPU generator of its own. An
// offset names a position of that CPU stream (docs/rehearse.md, "Random numbers"):
// - seeding puts the offset at 0, the start of the seed's stream;
// - every draw of a device op (an operator tagged nondeterministic_seeded, through the fallback)
//   moves the offset on by its output's element count rounded up to a multiple of 4 (the unit in
//   which DTensor moves offsets) and remembers the CPU generator's state at the new offset;
// - reading the state (get_state, get_offset, current_seed) after the CPU stream moved without a
//   device draw (CPU draws on the shared host generator, torch.set_rng_state) names the new
//   position offset + 4 (or offset 0 of the new seed, when the host was seeded anew);
// - setting (seed, offset) to a position it remembers puts the CPU stream back there: a saved state
//   replays its numbers, and DTensor's "old offset + numel" after a local draw continues the stream
//   where the draw left it; offset 0 of a seed is the start of that seed's stream;
// - any other offset starts a CPU stream of its own, seeded by mix(seed, offset): the same on every
//   rank, different per offset, not the numbers a device would draw there. Positions its draws
//   reach are forgotten when the generator moves elsewhere, unless the state was read there: so an
//   offset means the same on every rank whatever path a rank took to it (on 2 ranks, the last
//   shard's draw ends where DTensor then sets every rank).
class Labels {
 public:
  using Key = std::pair<uint64_t, uint64_t>;  // (seed, offset)
  using State = c10::intrusive_ptr<c10::TensorImpl>;
  struct Label {
    State state;
    bool main = true;   // reached from a seed's start by draws (not from an offset set by hand)
    bool read = false;  // handed out by get_state
  };
  Labels() = default;
  Labels(const Labels& o) { *this = o; }
  Labels& operator=(const Labels& o) {
    if (this == &o) return *this;
    order_.clear();
    index_.clear();
    for (auto it = o.order_.rbegin(); it != o.order_.rend(); ++it) put(it->first, it->second);
    return *this;
  }
  Label* find(Key k) {
    auto it = index_.find(k);
    if (it == index_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second);  // most recently used first
    return &it->second->second;
  }
  void put(Key k, Label l) {
    auto it = index_.find(k);
    if (it != index_.end()) {
      it->second->second = std::move(l);
      order_.splice(order_.begin(), order_, it->second);
      return;
    }
    order_.emplace_front(k, std::move(l));
    index_[k] = order_.begin();
    if (order_.size() > kLabels) {
      index_.erase(order_.back().first);
      order_.pop_back();
    }
  }
  // Forgets the positions off the main streams that were never read.
  void forget_unread_side_positions() {
    for (auto it = order_.begin(); it != order_.end();) {
      if (!it->second.main && !it->second.read) {
        index_.erase(it->first);
        it = order_.erase(it);
      } else {
        ++it;
      }
    }
  }
  // Each state is a CPU generator state of 5,056 bytes: at most about 10 MB per generator.
  static constexpr size_t kLabels = 2048;

 private:
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return std::hash<uint64_t>()(k.first) ^
             (std::hash<uint64_t>()(k.second) * 0x9e3779b97f4a7c15ULL);
    }
  };
  std::list<std::pair<Key, Label>> order_;
  std::unordered_map<Key, std::list<std::pair<Key, Label>>::iterator, KeyHash> index_;
};

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

bool same_bytes(const c10::TensorImpl& a, const c10::TensorImpl& b) {
  return a.numel() == b.numel() &&
         std::memcmp(a.data(), b.data(), static_cast<size_t>(a.numel())) == 0;
}

constexpr size_t kSeedBytes = sizeof(uint64_t);
constexpr size_t kOffsetBytes = sizeof(int64_t);

struct DeviceGenerator final : public c10::GeneratorImpl {
  DeviceGenerator(c10::DeviceIndex i, at::Generator host)
      : c10::GeneratorImpl(dev_of(i), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)),
        host_(std::move(host)) {
    {
      std::lock_guard<std::mutex> lock(host_.mutex());
      seed_ = host_seed_ = host_.current_seed();
    }
    labels_.put({seed_, 0}, {fresh(seed_), true, false});
    sync(false);  // the host may have drawn already: then offset 4 names where it is
  }
  void set_current_seed(uint64_t seed) override {
    std::lock_guard<std::mutex> lock(host_.mutex());
    labels_.forget_unread_side_positions();
    host_.set_current_seed(seed);
    start(seed);
  }
  uint64_t seed() override {
    std::lock_guard<std::mutex> lock(host_.mutex());
    labels_.forget_unread_side_positions();
    const uint64_t s = host_.seed();
    start(s);
    return s;
  }
  uint64_t current_seed() const override {
    sync(false);
    return seed_;
  }
  uint64_t get_offset() const override {
    sync(true);
    return offset_;
  }
  void set_offset(uint64_t offset) override {
    std::lock_guard<std::mutex> lock(host_.mutex());
    move_to(seed_, offset);
  }
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override {
    sync(true);
    at::Tensor t = at::detail::empty_cpu({static_cast<int64_t>(kSeedBytes + kOffsetBytes)},
                                         c10::ScalarType::Byte, std::nullopt, std::nullopt,
                                         std::nullopt, std::nullopt);
    auto* p = t.data_ptr<uint8_t>();
    const int64_t off = static_cast<int64_t>(offset_);
    std::memcpy(p, &seed_, kSeedBytes);
    std::memcpy(p + kSeedBytes, &off, kOffsetBytes);
    return t.getIntrusivePtr();
  }
  void set_state(const c10::TensorImpl& st) override {
    at::detail::check_rng_state(st);
    const int64_t n = st.numel();
    TORCH_CHECK(n == static_cast<int64_t>(kSeedBytes) ||
                    n == static_cast<int64_t>(kSeedBytes + kOffsetBytes),
                "RNG state is wrong size");
    const auto* p = static_cast<const uint8_t*>(st.data());
    uint64_t seed = 0;
    int64_t off = 0;
    std::memcpy(&seed, p, kSeedBytes);
    if (n == static_cast<int64_t>(kSeedBytes + kOffsetBytes))
      std::memcpy(&off, p + kSeedBytes, kOffsetBytes);
    std::lock_guard<std::mutex> lock(host_.mutex());
    move_to(seed, static_cast<uint64_t>(off));
  }
  DeviceGenerator* clone_impl() const override {
    auto* g = new DeviceGenerator(device().index(), host_.clone());
    g->seed_ = seed_;
    g->offset_ = offset_;
    g->host_seed_ = host_seed_;
    g->main_ = main_;
    g->labels_ = labels_;
    return g;
  }
  // A device op drew `numel` numbers from this generator's CPU stream (the caller holds mutex_).
  void drew(int64_t numel) {
    const uint64_t step = (static_cast<uint64_t>(numel) + 3) / 4 * 4;
    if (step == 0) return;
    std::lock_guard<std::mutex> lock(host_.mutex());
    offset_ += step;
    labels_.put({seed_, offset_}, {snapshot(), main_, false});
  }

  at::Generator host_;

 private:
  Labels::State snapshot() const { return host_.unsafeGetGeneratorImpl()->get_state(); }
  // The state of a CPU generator just seeded with `s`: offset 0 of seed s.
  static Labels::State fresh(uint64_t s) {
    return at::detail::createCPUGenerator(s).unsafeGetGeneratorImpl()->get_state();
  }
  // The host was just seeded with `s`: offset 0 of seed s.
  void start(uint64_t s) {
    seed_ = host_seed_ = s;
    offset_ = 0;
    main_ = true;
    labels_.put({s, 0}, {snapshot(), true, false});
  }
  void move_to(uint64_t seed, uint64_t offset) {
    TORCH_CHECK(offset % 4 == 0, "offset must be a multiple of 4");
    labels_.forget_unread_side_positions();
    if (Labels::Label* l = labels_.find({seed, offset})) {
      host_.unsafeGetGeneratorImpl()->set_state(*l->state);
      main_ = l->main;
    } else if (offset == 0) {
      host_.set_current_seed(seed);
      main_ = true;
      labels_.put({seed, 0}, {snapshot(), true, false});
    } else {
      host_.set_current_seed(splitmix64(seed ^ splitmix64(offset)));
      main_ = false;
      labels_.put({seed, offset}, {snapshot(), false, false});
    }
    seed_ = seed;
    offset_ = offset;
    host_seed_ = host_.current_seed();
  }
  // Names the CPU stream's position when it moved without a device draw (see above); `read`: the
  // state is handed out there.
  void sync(bool read) const {
    std::lock_guard<std::mutex> lock(const_cast<at::Generator&>(host_).mutex());
    Labels::State live = snapshot();
    const uint64_t hs = host_.current_seed();
    if (hs != host_seed_) {  // seeded anew behind this generator (torch.random.default_generator)
      seed_ = host_seed_ = hs;
      offset_ = 0;
      main_ = true;
      labels_.put({hs, 0}, {fresh(hs), true, false});
    }
    if (Labels::Label* named = labels_.find({seed_, offset_})) {
      if (same_bytes(*named->state, *live)) {
        named->read = named->read || read;
        return;
      }
      offset_ += 4;
    }
    labels_.put({seed_, offset_}, {std::move(live), main_, read});
  }

  mutable uint64_t seed_ = 0;
  mutable uint64_t offset_ = 0;
  mutable uint64_t host_seed_ = 0;  // the CPU generator's seed when this generator last moved it
  mutable bool main_ = true;        // the position is on a seed's own stream (see Labels::Label)
  mutable Labels labels_;
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

void drew_from(const at::Generator& g, int64_t numel) {
  auto* impl = dynamic_cast<DeviceGenerator*>(g.unsafeGetGeneratorImpl());
  if (impl == nullptr) return;
  std::lock_guard<std::mutex> lock(impl->mutex_);
  impl->drew(numel);
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
