// Python bindings of the rehearsal device (loaded by torchport.rehearse._ext).
#include <torch/extension.h>

#include "rehearse.h"

namespace rh = torchport::rehearse;
namespace py = pybind11;

namespace {

void configure(const std::string& target, const std::string& vendor, int devices, int64_t capacity,
               bool strict, const std::string& fallback, const std::string& strict_switch,
               const std::vector<std::string>& refused, py::function classify, py::function site,
               py::function warn) {
  rh::Config& c = rh::config();
  c.target = target;
  c.vendor = vendor;
  c.devices = devices;
  c.capacity = capacity;
  c.strict = strict;
  c.fallback = fallback;
  c.strict_switch = strict_switch;
  c.refused_dtypes = 0;
  for (const std::string& name : refused) {
    for (int i = 0; i < static_cast<int>(c10::ScalarType::NumOptions); ++i) {
      auto st = static_cast<c10::ScalarType>(i);
      if (name == c10::toString(st)) c.refused_dtypes |= (uint64_t{1} << i);
    }
  }
  c.configured = true;
  // The callbacks hold Python objects: leak them, so nothing is released after the interpreter is
  // gone.
  auto* cls = new py::function(std::move(classify));
  auto* st = new py::function(std::move(site));
  auto* wn = new py::function(std::move(warn));
  rh::callbacks().classify = [cls](const std::string& op) {
    py::gil_scoped_acquire gil;
    auto r = (*cls)(op).cast<std::pair<int, std::string>>();
    return r;
  };
  rh::callbacks().site = [st]() {
    py::gil_scoped_acquire gil;
    return (*st)().cast<std::string>();
  };
  rh::callbacks().warn = [wn](const std::string& msg) {
    py::gil_scoped_acquire gil;
    (*wn)(msg);
  };
  rh::install_cpu_redirect();
}

py::dict stats(int dev) {
  rh::DeviceStats s = rh::device_stats(dev);
  py::dict d;
  d["allocated_bytes.all.current"] = s.allocated;
  d["allocated_bytes.all.peak"] = s.peak_allocated;
  d["reserved_bytes.all.current"] = s.reserved;
  d["reserved_bytes.all.peak"] = s.peak_reserved;
  d["requested_bytes.all.current"] = s.requested;
  d["allocation.all.allocated"] = s.num_allocs;
  d["allocation.all.freed"] = s.num_frees;
  d["allocation.all.current"] = s.live_blocks;
  d["num_ooms"] = s.num_ooms;
  return d;
}

py::list op_stats() {
  py::list out;
  for (rh::OpEntry* e : rh::all_entries()) {
    py::dict sites;
    py::dict failed_sites;
    std::string failure;
    {
      std::lock_guard<std::mutex> lock(e->mu);
      for (auto& [k, n] : e->sites) sites[py::str(k)] = n;
      for (auto& [k, n] : e->failed_sites) failed_sites[py::str(k)] = n;
      failure = e->failure;
    }
    // (name, status, reason, calls, ns, sites, failed, failure, failed_sites): `failed` calls
    // raised NotImplementedError (the device could not run the op) and are not in `calls`.
    out.append(py::make_tuple(e->name, static_cast<int>(e->status), e->reason, e->calls.load(),
                              e->ns.load(), sites, e->failed.load(), failure, failed_sites));
  }
  return out;
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "torchport rehearsal device (PrivateUse1 on host memory with CPU kernels)";
  m.def("configure", &configure);
  m.def("memory_stats", &stats);
  m.def("reset_peak_memory_stats", [](int dev) { rh::reset_peak(dev); });
  m.def("empty_cache", []() { rh::empty_cache(); });
  m.def("capacity", []() { return rh::config().capacity; });
  m.def("device_count", []() { return rh::config().devices; });
  m.def("current_device", []() { return static_cast<int>(rh::current_device()); });
  m.def("set_device", [](int d) { rh::set_current_device(static_cast<c10::DeviceIndex>(d)); });
  m.def("op_stats", &op_stats);
  m.def("reset_op_stats", []() { rh::reset_op_stats(); });
  m.def("register_listed_kernels", []() { return rh::register_listed_kernels(); });
  m.def("register_cpu_shallow_copy", []() { rh::register_cpu_shallow_copy(); });
  m.def("dtype_violations", []() { return rh::dtype_violations(); });
  m.def(
      "as_cpu", [](const at::Tensor& t) { return rh::as_cpu(t); },
      "a CPU tensor on the same memory");
  m.def("default_generator",
        [](int d) { return rh::default_generator(static_cast<c10::DeviceIndex>(d)); });
  m.def("host_owns", [](const at::Tensor& t) { return rh::host_owns(t.storage().data()); });
}
