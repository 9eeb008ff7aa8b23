// Host-memory caching allocator with per-device accounting and a capacity limit, and the CPU
// allocator redirect that makes CPU kernels running a device op allocate device memory.
#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

#include "rehearse.h"

namespace torchport::rehearse {
namespace {

constexpr size_t kAlign = 64;
constexpr size_t kRound = 512;
constexpr int kMaxDevices = 64;

struct Block {
  size_t size;       // bytes of the block (rounded)
  size_t requested;  // bytes asked for
  int dev;
};

struct DevicePool {
  std::multimap<size_t, void*> free_blocks;  // size -> ptr, cached
  DeviceStats stats;
};

struct State {
  std::mutex mu;
  std::unordered_map<void*, Block> live;    // handed out
  std::unordered_map<void*, Block> cached;  // in a free list
  DevicePool pools[kMaxDevices];
};

State& state() {
  static State* s = new State();  // leaked: frees can run during interpreter teardown
  return *s;
}

size_t round_size(size_t n) { return n == 0 ? kRound : (n + kRound - 1) / kRound * kRound; }

std::string fmt_bytes(int64_t b) {
  char buf[64];
  double v = static_cast<double>(b);
  if (v >= 1024.0 * 1024 * 1024) {
    std::snprintf(buf, sizeof buf, "%.2f GiB", v / (1024.0 * 1024 * 1024));
  } else {
    std::snprintf(buf, sizeof buf, "%.2f MiB", v / (1024.0 * 1024));
  }
  return buf;
}

void release_cached(DevicePool& pool, State& s) {
  for (auto& [size, ptr] : pool.free_blocks) {
    s.cached.erase(ptr);
    pool.stats.reserved -= static_cast<int64_t>(size);
    std::free(ptr);
  }
  pool.free_blocks.clear();
}

void host_free(void* ptr) {
  if (ptr == nullptr) return;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.live.find(ptr);
  if (it == s.live.end()) {
    std::free(ptr);  // not ours (cannot happen through our DataPtrs)
    return;
  }
  Block b = it->second;
  s.live.erase(it);
  DevicePool& pool = s.pools[b.dev];
  pool.stats.allocated -= static_cast<int64_t>(b.size);
  pool.stats.requested -= static_cast<int64_t>(b.requested);
  pool.stats.num_frees += 1;
  pool.stats.live_blocks -= 1;
  pool.free_blocks.emplace(b.size, ptr);
  s.cached.emplace(ptr, b);
}

void host_delete(void* ctx) { host_free(ctx); }

class DeviceAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t n) override {
    c10::DeviceIndex d = current_device();
    return host_allocate(d, n, c10::Device(c10::DeviceType::PrivateUse1, d));
  }
  c10::DeleterFnPtr raw_deleter() const override { return &host_delete; }
  void copy_data(void* dest, const void* src, std::size_t count) const final {
    if (count) std::memcpy(dest, src, count);
  }
};

DeviceAllocator g_device_alloc;
thread_local int tls_redirect = -1;

// Frees a pointer from either allocator: ours by lookup, otherwise the original CPU allocator's
// deleter.
c10::DeleterFnPtr g_orig_raw_deleter = nullptr;
void any_delete(void* p) {
  if (host_owns(p)) {
    host_free(p);
  } else if (g_orig_raw_deleter != nullptr) {
    g_orig_raw_deleter(p);
  }
}

class RedirectCpuAllocator final : public c10::Allocator {
 public:
  explicit RedirectCpuAllocator(c10::Allocator* orig) : orig_(orig) {}
  c10::DataPtr allocate(size_t n) override {
    if (tls_redirect >= 0) return host_allocate(tls_redirect, n, c10::Device(c10::DeviceType::CPU));
    return orig_->allocate(n);
  }
  c10::DeleterFnPtr raw_deleter() const override { return &any_delete; }
  void copy_data(void* dest, const void* src, std::size_t count) const final {
    if (count) std::memcpy(dest, src, count);
  }

 private:
  c10::Allocator* orig_;
};

}  // namespace

c10::DataPtr host_allocate(int dev, size_t nbytes, c10::Device label) {
  TORCH_CHECK(dev >= 0 && dev < kMaxDevices, "rehearsal device index out of range: ", dev);
  const size_t size = round_size(nbytes);
  State& s = state();
  void* ptr = nullptr;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    DevicePool& pool = s.pools[dev];
    // best fit among cached blocks, wasting at most 1/8 of the block
    auto it = pool.free_blocks.lower_bound(size);
    if (it != pool.free_blocks.end() && it->first <= size + size / 8) {
      ptr = it->second;
      Block b = s.cached[ptr];
      s.cached.erase(ptr);
      pool.free_blocks.erase(it);
      b.requested = nbytes;
      s.live.emplace(ptr, b);
      pool.stats.allocated += static_cast<int64_t>(b.size);
    } else {
      const int64_t cap = config().capacity;
      if (cap >= 0 && pool.stats.reserved + static_cast<int64_t>(size) > cap) {
        release_cached(pool, s);  // as the caching allocators do before giving up
      }
      if (cap >= 0 && pool.stats.reserved + static_cast<int64_t>(size) > cap) {
        pool.stats.num_ooms += 1;
        const std::string& v = config().vendor;
        TORCH_CHECK_WITH(
            OutOfMemoryError, false, v, " out of memory. Tried to allocate ",
            fmt_bytes(static_cast<int64_t>(size)), " (", v, " ", dev, "; ", fmt_bytes(cap),
            " total capacity; ", fmt_bytes(pool.stats.allocated), " already allocated; ",
            fmt_bytes(cap - pool.stats.reserved), " free; ", fmt_bytes(pool.stats.reserved),
            " reserved in total by PyTorch) [torchport rehearse --memory ", fmt_bytes(cap), "]");
      }
      ptr = std::aligned_alloc(kAlign, size);
      TORCH_CHECK_WITH(OutOfMemoryError, ptr != nullptr, "host out of memory allocating ", size,
                       " bytes");
      s.live.emplace(ptr, Block{size, nbytes, dev});
      pool.stats.reserved += static_cast<int64_t>(size);
      pool.stats.allocated += static_cast<int64_t>(size);
    }
    pool.stats.requested += static_cast<int64_t>(nbytes);
    pool.stats.num_allocs += 1;
    pool.stats.live_blocks += 1;
    pool.stats.peak_allocated = std::max(pool.stats.peak_allocated, pool.stats.allocated);
    pool.stats.peak_reserved = std::max(pool.stats.peak_reserved, pool.stats.reserved);
  }
  return c10::DataPtr(ptr, ptr, &host_delete, label);
}

bool host_owns(const void* ptr) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.live.count(const_cast<void*>(ptr)) != 0;
}

DeviceStats device_stats(int dev) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  TORCH_CHECK(dev >= 0 && dev < kMaxDevices, "device index out of range: ", dev);
  return s.pools[dev].stats;
}

void reset_peak(int dev) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  DeviceStats& st = s.pools[dev].stats;
  st.peak_allocated = st.allocated;
  st.peak_reserved = st.reserved;
}

void empty_cache() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  for (auto& pool : s.pools) release_cached(pool, s);
}

c10::Allocator* device_allocator() { return &g_device_alloc; }

void install_cpu_redirect() {
  static bool done = false;
  if (done) return;
  done = true;
  c10::Allocator* orig = c10::GetCPUAllocator();
  g_orig_raw_deleter = orig->raw_deleter();
  static RedirectCpuAllocator redirect(orig);
  c10::SetCPUAllocator(&redirect, /*priority=*/100);
}

RedirectGuard::RedirectGuard(int dev) : prev_(tls_redirect) { tls_redirect = dev; }
RedirectGuard::~RedirectGuard() { tls_redirect = prev_; }

}  // namespace torchport::rehearse

REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, &torchport::rehearse::g_device_alloc);
