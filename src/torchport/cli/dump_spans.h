// The record `torchport dev dump-spans` prints for one file (see cmd_dev_parse.cc).
#pragma once

#include <string>
#include <string_view>

namespace torchport::cli {

/// One JSON line (without the newline) for the file `path` with raw contents `bytes`: its
/// node spans, or the syntax/decode error.
std::string dump_spans_json(const std::string& path, std::string_view bytes);

}  // namespace torchport::cli
