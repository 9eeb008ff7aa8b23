// Reading a whole file into memory: one open, one fstat and as few read calls as the file has
// bytes for, straight into the string that keeps them (no stream buffers in between).
#pragma once

#include <string>

namespace torchport::text {

/// Reads the whole file at `path` into `out`; false (and `error`: strerror's text, "No such
/// file or directory") on failure, `out` then unspecified.
bool read_whole_file(const char* path, std::string& out, std::string& error);

}  // namespace torchport::text
