// The rule fixtures' cases (tests/fixtures/rules/<case>/, rules_fixture_test.cc has the layout),
// shared by the layout checks there and the driver's run of every case
// (project/fixtures_test.cc). Test code only.
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

namespace torchport::rules::fixtures {

namespace fs = std::filesystem;

inline std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Case {
  fs::path dir;
  std::string target;
  fs::path input;  ///< input.py, or input.<ext> for a project file (see <target>.options path=)
};

inline fs::path fixtures_root() {
  return fs::path(TORCHPORT_SOURCE_DIR) / "tests" / "fixtures" / "rules";
}

// The one input.* file of a fixture directory ("" when there is none or several).
inline fs::path input_of(const fs::path& dir) {
  fs::path found;
  int n = 0;
  for (const auto& f : fs::directory_iterator(dir)) {
    if (f.path().stem() == "input") {
      found = f.path();
      ++n;
    }
  }
  return n == 1 ? found : fs::path();
}

// Every (fixture, target) pair that has an expected output, in a fixed order.
inline std::vector<Case> cases() {
  std::vector<Case> out;
  const fs::path root = fixtures_root();
  if (!fs::exists(root)) return out;
  for (const auto& d : fs::directory_iterator(root)) {
    if (!d.is_directory()) continue;
    const fs::path input = input_of(d.path());
    if (input.empty()) continue;  // reported by FixtureDirectoriesAreComplete
    for (const auto& f : fs::directory_iterator(d.path())) {
      if (f.path().extension() == input.extension() && f.path().stem() != "input") {
        out.push_back({d.path(), f.path().stem().string(), input});
      }
    }
  }
  std::sort(out.begin(), out.end(), [](const Case& a, const Case& b) {
    return std::tie(a.dir, a.target) < std::tie(b.dir, b.target);
  });
  return out;
}

}  // namespace torchport::rules::fixtures
