// The data files embedded into the executable at build time (see cmake/embed_data.cmake).
#pragma once

#include <cstddef>
#include <string_view>

namespace torchport::catalogue::embedded {

struct Blob {
  std::string_view name;  ///< path relative to data/, e.g. "catalogue/cuda_module.json"
  std::string_view data;
};

/// Every embedded file, sorted by name.
const Blob* begin();
const Blob* end();

}  // namespace torchport::catalogue::embedded
