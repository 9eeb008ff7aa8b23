// Local paths a training script reads its data from and writes its results to, found on the
// syntax tree, for `torchport migrate --object-storage` / `--modelarts`: they are the
// suggestions pre-filled (commented) in the generated path-mapping config.
//
// What counts (string literals only; nothing is evaluated):
//   - argparse `add_argument("--data-dir", default="./data")` whose option names or help talk
//     about data, roots, checkpoints, outputs, logs or files;
//   - the first argument (or `root=`) of dataset constructors (`ImageFolder`, `*Dataset`,
//     `datasets.CIFAR10(...)`), `open(path, mode)`, `np.load`, `torch.load`, `torch.save(obj,
//     path)`, `os.makedirs`, `SummaryWriter(log_dir)`.
// Reads are inputs (downloaded before training), writes are outputs (uploaded after it).
//
// It also says where one activating import line goes in an entry script (after the shebang,
// the encoding line, the module docstring and `from __future__` imports) and where the script
// starts one process per device with torch.multiprocessing.spawn, which a platform that starts
// one process per device itself does not support.
#pragma once

#include <torchport/syntax/tree.h>

#include <cstdint>
#include <string>
#include <vector>

namespace torchport::rules {

struct StoragePath {
  enum class Role : std::uint8_t { Input, Output };
  Role role = Role::Input;
  std::string value;       ///< the path literal as the program sees it ("./data")
  std::string kind;        ///< "argparse", "dataset", "open", "load", "save", "makedirs", "log_dir"
  std::string context;     ///< what the path belongs to: "--data-dir", "ImageFolder", "torch.save"
  std::uint32_t line = 0;  ///< 1-based
  std::uint32_t column = 0;  ///< 1-based, in bytes
};

struct StorageScan {
  std::vector<StoragePath> paths;
  /// 1-based line before which an activating import goes (after docstring / __future__).
  std::uint32_t insert_line = 1;
  /// 1-based lines of torch.multiprocessing.spawn calls.
  std::vector<std::uint32_t> spawn_lines;
  /// The module has an `if __name__ == "__main__":` block.
  bool has_main_guard = false;
};

/// Scans one parsed module. `tree.ok()` must be true.
StorageScan scan_storage_paths(const syntax::Tree& tree);

}  // namespace torchport::rules
