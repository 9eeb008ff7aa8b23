// The rehearsal device: a PrivateUse1 backend whose memory is host memory and whose kernels are
// PyTorch's CPU kernels. Shared declarations of the allocator, the device state and the op table.
#pragma once

#include <ATen/ATen.h>
#include <c10/core/Allocator.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace torchport::rehearse {

// ---- configuration (set once by configure(), read everywhere) ----
struct Config {
  std::string target = "npu";    // npu | mlu | musa
  std::string vendor = "NPU";    // upper-case device name used in messages
  int devices = 1;               // --devices
  int64_t capacity = -1;         // bytes per device, -1: unlimited
  bool strict = false;           // every fallback is an error
  std::string fallback = "cpu";  // "cpu": run on the CPU (with a warning on npu/mlu); "error"
  std::string strict_switch;     // "TORCH_NPU_FALLBACK_CPU_DISABLE=1" ...
  uint64_t refused_dtypes = 0;   // bit per c10::ScalarType
  bool configured = false;
};
Config& config();

// ---- allocator ----
struct DeviceStats {
  int64_t allocated = 0;       // bytes in live blocks
  int64_t requested = 0;       // bytes asked for by live allocations
  int64_t reserved = 0;        // allocated + cached
  int64_t peak_allocated = 0;  // since the last reset
  int64_t peak_reserved = 0;
  int64_t num_allocs = 0;
  int64_t num_frees = 0;
  int64_t num_ooms = 0;
  int64_t live_blocks = 0;
};

// Allocates host memory for device `dev`; the DataPtr is labelled with `label` (PrivateUse1:dev for
// device tensors; CPU while a CPU kernel runs for the device, relabelled when the output is
// wrapped).
c10::DataPtr host_allocate(int dev, size_t nbytes, c10::Device label);
bool host_owns(const void* ptr);
DeviceStats device_stats(int dev);
void reset_peak(int dev);
void empty_cache();
c10::Allocator* device_allocator();
void install_cpu_redirect();

// While alive on this thread, CPU allocations (outputs and temporaries of the CPU kernel that runs
// a device op) come from device `dev`'s memory.
struct RedirectGuard {
  explicit RedirectGuard(int dev);
  ~RedirectGuard();
  RedirectGuard(const RedirectGuard&) = delete;
  RedirectGuard& operator=(const RedirectGuard&) = delete;

 private:
  int prev_;
};

// ---- device state ----
c10::DeviceIndex current_device();
void set_current_device(c10::DeviceIndex d);
void check_device(c10::DeviceIndex d);
const at::Generator& default_generator(c10::DeviceIndex d);
at::Generator new_generator(c10::DeviceIndex d);
// the CPU generator that draws the numbers of a device generator
at::Generator host_generator_of(const at::Generator& g);
// A device op drew from device generator `g` (its output has `numel` elements): its Philox offset
// moves on (device.cc, DeviceGenerator). A generator of another device is ignored.
void drew_from(const at::Generator& g, int64_t numel);

// ---- op table ----
enum class Status : int { Native = 0, Fallback = 1, Unknown = 2, Refused = 3 };

struct OpEntry {
  std::string name;  // "add.Tensor"
  Status status = Status::Native;
  std::string reason;
  std::atomic<int64_t> calls{0};
  std::atomic<int64_t> ns{0};
  std::atomic<bool> warned{false};
  std::mutex mu;                         // guards sites, failure and failed_sites
  std::map<std::string, int64_t> sites;  // "file:line" -> calls (not recorded for native ops)
  // Calls that raised NotImplementedError on the device (the rehearsal could not run the op: a CPU
  // kernel it forwards to does not exist): not in `calls`, reported as refused.
  std::atomic<int64_t> failed{0};
  std::string failure;                          // the first such error's message (one line)
  std::map<std::string, int64_t> failed_sites;  // "file:line" -> failed calls
};

// Python callbacks (set by configure()).
struct Callbacks {
  std::function<std::pair<int, std::string>(const std::string&)> classify;
  std::function<std::string()> site;
  std::function<void(const std::string&)> warn;
};
Callbacks& callbacks();

OpEntry& op_entry(const c10::OperatorHandle& op);
std::vector<OpEntry*> all_entries();
void record_dtype_violation(const std::string& op, const std::string& dtype,
                            const std::string& site);
std::vector<std::tuple<std::string, std::string, std::string, int64_t>> dtype_violations();
void reset_op_stats();
// Gives the device the CPU kernel (through the boxed fallback) of every operator that has a CPU
// kernel and a generic composite one (CompositeExplicitAutograd), no kernel of the device, and a
// "native" verdict from the target's lists: the vendor ships its own kernel for it, so the device
// must not run torch's decomposition instead (other numerics, many small ops, and no verdict for
// the op itself). Returns the names registered.
std::vector<std::string> register_listed_kernels();
// Makes a CPU tensor and a device tensor compatible for a shallow copy
// (aten::_has_compatible_shallow_copy_type), as the vendors whose data/targets.json says
// "cpu_shallow_copy" do: `param.data = param.to(device)` then keeps the Parameter, so
// Module.to() keeps tied weights tied. Torch's own answer for PrivateUse1 is "not compatible",
// under which Module.to() makes a new Parameter per module and unties them.
void register_cpu_shallow_copy();

// ---- calls of the device's own kernels (fallback.cc) ----
// Judges one call of `e` before it runs, as the boxed fallback does: `bad` (a refused dtype among
// its tensors, else Undefined) raises the device's error; a fallback verdict warns once or, with
// --strict or on a target without CPU fallback, raises the vendor's error. Returns the user's call
// site it recorded for a non-native call ("" for a native one).
std::string admit(OpEntry& e, c10::ScalarType bad);
// The first dtype of a device tensor among `ts` that the target refuses (0-dim scalars excepted),
// or Undefined.
c10::ScalarType refused_dtype(std::initializer_list<at::Tensor> ts);
// Counts a call that ran, with its time since t0.
void count_call(OpEntry& e, std::chrono::steady_clock::time_point t0);
// A call of `e` raised NotImplementedError: counts it as failed at the user's call site (`site`,
// recorded by admit for a non-native op, moves from the op's sites to its failed ones) and raises
// NotImplementedError naming the op, the device and the CPU kernel's error. An error already
// reported this way by an inner call is raised again as it is.
[[noreturn]] void raise_not_implemented(OpEntry& e, const std::string& site,
                                        const c10::NotImplementedError& err);
// Runs `body` (CPU ATen ops on CPU views of the device tensors; their allocations come from device
// `dev`'s memory) as the device's own kernel of `e`: judged first, then timed and counted; a
// NotImplementedError is counted and reported as above.
template <class F>
auto run_own_kernel(OpEntry& e, c10::ScalarType bad, c10::DeviceIndex dev, F&& body) {
  const std::string site = admit(e, bad);
  const auto t0 = std::chrono::steady_clock::now();
  try {
    RedirectGuard redirect(dev);
    auto r = body();
    count_call(e, t0);
    return r;
  } catch (const c10::NotImplementedError& err) {
    raise_not_implemented(e, site, err);
  }
}

// ---- zero-copy views ----
// A CPU tensor on the same storage (no copy); for a CPU tensor, itself.
at::Tensor as_cpu(const at::Tensor& t);
// A device tensor for a CPU kernel's output `t` (no copy when its memory is device memory).
at::Tensor as_device(const at::Tensor& t, c10::DeviceIndex dev);
std::string refused_message(const std::string& op, c10::ScalarType st);
std::string user_site();

}  // namespace torchport::rehearse
