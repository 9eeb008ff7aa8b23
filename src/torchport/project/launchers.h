// The launchers `migrate --distributed` writes next to the converted entry script:
// run_distributed.sh (torchrun, every target) and the target's rank_loop_launcher
// (data/targets.json; npu: Ascend's run_distributed_npu.sh, one process per device with RANK_ID /
// DEVICE_ID, as Ascend's own samples do). Both run as written: the number of processes is the
// target's device count, read at launch time through the target's device module (data/targets.json
// "module" and "import"), unless --nproc says otherwise; --nnodes, --node-rank, --master-addr and
// --master-port make a multi-node run.
#pragma once

#include <string>
#include <vector>

namespace torchport::catalogue {
struct Target;
}

namespace torchport::project {

struct Launcher {
  std::string name;  ///< file name in the result root
  std::string text;
};

/// The launchers for `target`, starting `main_rel` (relative to the result root).
std::vector<Launcher> distributed_launchers(const catalogue::Target& target,
                                            const std::string& main_rel);

}  // namespace torchport::project
