#include <gtest/gtest.h>
#include <torchport/flow/project_values.h>
#include <torchport/syntax/parser.h>

#include <fstream>
#include <random>
#include <string>

namespace torchport::flow {
namespace {

namespace fs = std::filesystem;
using syntax::Node;
using syntax::NodeKind;

TEST(ProjectValues, ModuleNamesAreWhatImportWouldSay) {
  EXPECT_EQ(ProjectValues::module_of("train.py"), "train");
  EXPECT_EQ(ProjectValues::module_of("pkg/config.py"), "pkg.config");
  EXPECT_EQ(ProjectValues::module_of("pkg/__init__.py"), "pkg");
  EXPECT_EQ(ProjectValues::module_of("__init__.py"), "");
  EXPECT_EQ(ProjectValues::module_of("my-scripts/train.py"), "");  // not an identifier
  EXPECT_EQ(ProjectValues::module_of("2024/train.py"), "");
  EXPECT_EQ(ProjectValues::module_of("notes.ipynb"), "");
}

TEST(ProjectValues, RelativeImportsResolveAgainstTheImporter) {
  // from .config import X in pkg/train.py
  EXPECT_EQ(ProjectValues::resolve_relative("pkg.train", false, 1, "config"), "pkg.config");
  // from . import config in pkg/train.py
  EXPECT_EQ(ProjectValues::resolve_relative("pkg.train", false, 1, ""), "pkg");
  // from ..utils import X in pkg/sub/train.py
  EXPECT_EQ(ProjectValues::resolve_relative("pkg.sub.train", false, 2, "utils"), "pkg.utils");
  // from .config import X in pkg/__init__.py: the package is pkg itself
  EXPECT_EQ(ProjectValues::resolve_relative("pkg", true, 1, "config"), "pkg.config");
  // above the top
  EXPECT_EQ(ProjectValues::resolve_relative("pkg.train", false, 3, "x"), "");
  EXPECT_EQ(ProjectValues::resolve_relative("", false, 1, "x"), "");
}

class Project : public ::testing::Test {
 protected:
  void SetUp() override {
    std::random_device rd;
    root_ = fs::temp_directory_path() / ("tp_project_values_" + std::to_string(rd()));
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  void write(const std::string& rel, const std::string& text) {
    fs::create_directories((root_ / rel).parent_path());
    std::ofstream(root_ / rel, std::ios::binary) << text;
    files_.push_back(rel);
  }
  fs::path root_;
  std::vector<std::string> files_;
};

std::uint8_t bits(std::initializer_list<Source> ss) {
  Value v;
  for (Source s : ss) v.add(s);
  return v.sources;
}

TEST_F(Project, AModuleLevelValueIsKnownOnlyWhereNoRewriteIsNeededThere) {
  write("pkg/__init__.py", "");
  write("pkg/config.py",
        "import os\n"
        "GPU_ID = 0\n"
        "LOCAL = int(os.environ['LOCAL_RANK'])\n"
        "HOST = 'cpu'\n"
        "DEVICE = 'cuda:0'\n"  // rewritten or not in its own file: Unknown here
        "BACKEND = 'nccl'\n"
        "TWICE = 1\n"
        "TWICE = 'cuda'\n"
        "from torch import cuda\n");
  ProjectValues pv(root_, files_);
  EXPECT_EQ(pv.module_name("pkg.config", "GPU_ID")->sources, bits({Source::Index}));
  EXPECT_TRUE(pv.module_name("pkg.config", "GPU_ID")->literals.empty());
  EXPECT_EQ(pv.module_name("pkg.config", "LOCAL")->sources, bits({Source::Index}));
  EXPECT_EQ(pv.module_name("pkg.config", "HOST")->sources, bits({Source::HostString}));
  EXPECT_EQ(pv.module_name("pkg.config", "DEVICE")->sources, bits({Source::Unknown}));
  EXPECT_EQ(pv.module_name("pkg.config", "BACKEND")->sources, bits({Source::Unknown}));
  EXPECT_EQ(pv.module_name("pkg.config", "TWICE")->sources, bits({Source::Unknown}));
  EXPECT_FALSE(pv.module_name("pkg.config", "cuda"));     // an import, not a value
  EXPECT_FALSE(pv.module_name("pkg.config", "missing"));  // not defined there
  EXPECT_FALSE(pv.module_name("torch.cuda", "x"));        // not the project's
}

TEST_F(Project, ModulesAreFoundBesideTheImporterAndByAUniqueSuffix) {
  write("scripts/utils.py", "GPU = 1\n");
  write("src/lib/opts.py", "GPU = 2\n");
  write("a/common.py", "GPU = 3\n");
  write("b/common.py", "GPU = 'x'\n");
  ProjectValues pv(root_, files_);
  // `import utils` in scripts/train.py: the script's directory
  EXPECT_TRUE(pv.module_name("utils", "GPU", "scripts.train"));
  EXPECT_FALSE(pv.module_name("utils", "GPU", "other.train"));
  // `from lib.opts import GPU` in a project kept under src/
  EXPECT_TRUE(pv.module_name("lib.opts", "GPU", "src.lib.train"));
  EXPECT_TRUE(pv.module_name("lib.opts", "GPU"));
  // two modules named common: only the importer's own is taken
  EXPECT_FALSE(pv.module_name("common", "GPU"));
  EXPECT_EQ(pv.module_name("common", "GPU", "b.train")->sources, bits({Source::Text}));
}

TEST_F(Project, OptionsOfAnotherModuleCarryWhatTheirOwnFileMakesOfThem) {
  write("opts.py",
        "import argparse\n"
        "def build(parser, group):\n"
        "    parser.add_argument('--gpu', type=int, default=0)\n"
        "    parser.add_argument('--dist-backend', default='nccl')\n"
        "    parser.add_argument('--device', default='cuda')\n"
        "    parser.add_argument('--where', default='cuda')\n"
        "    parser.add_argument('--resume')\n"
        "    group.add(\n"
        "        '--gpu_backend',\n"
        "        '-gpu_backend',\n"
        "        default='nccl',\n"
        "    )\n"
        "    group.add('--accel', default='cuda')\n");
  write("train.py", "x = 1\n");
  ProjectValues pv(root_, files_);
  EXPECT_EQ(pv.option("gpu")->sources, bits({Source::Index}));
  EXPECT_EQ(pv.option("dist_backend")->sources, bits({Source::Backend}));
  EXPECT_EQ(pv.option("gpu_backend")->sources, bits({Source::Backend}));
  EXPECT_EQ(pv.option("device")->sources, bits({Source::DeviceString}));
  EXPECT_EQ(pv.option("where")->sources, bits({Source::Unknown}));  // "cuda", kept there
  EXPECT_EQ(pv.option("accel")->sources, bits({Source::Unknown}));  // `.add`: TP300 skips it
  EXPECT_EQ(pv.option("resume")->sources, bits({Source::None}));
  EXPECT_FALSE(pv.option("lr"));
}

/// The search as it was written before the one-pass scan: the judge of may_define_options.
bool two_searches(std::string_view text) {
  if (text.find("add_argument") != std::string_view::npos) return true;
  for (std::size_t at = text.find(".add("); at != std::string_view::npos;
       at = text.find(".add(", at + 5)) {
    std::size_t i = at + 5;
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    if (i + 1 < text.size() && (text[i] == '"' || text[i] == '\'') && text[i + 1] == '-')
      return true;
  }
  return false;
}

TEST(ProjectValues, MayDefineOptionsAgreesWithTwoPlainSearchesAtEveryOffset) {
  // Each call at every offset in and across the 16-byte blocks, and at the end of the text
  // (where the byte loop takes over), with text after it or not.
  const std::vector<std::pair<std::string, bool>> calls = {{"p.add_argument('--a')", true},
                                                           {"g.add( '-a')", true},
                                                           {"g.add(\n    \"--a\")", true},
                                                           {"add_argument", true},
                                                           {"g.add(x)", false},
                                                           {"add_argumen", false},
                                                           {"padding.address", false},
                                                           {".add('a')", false},
                                                           {"g.add(  ", false},
                                                           {".add('", false},
                                                           {"g.add(\"-", true},
                                                           {"aadd_argument", true}};
  std::size_t checked = 0;
  for (const auto& [call, want] : calls) {
    for (std::size_t before = 0; before < 40; ++before) {
      for (std::size_t after : {0, 1, 2, 3, 15, 16, 17, 33}) {
        const std::string text = std::string(before, 'd') + call + std::string(after, 'a');
        ASSERT_EQ(may_define_options(text), want) << '"' << text << '"';
        ASSERT_EQ(two_searches(text), want) << '"' << text << '"';
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, calls.size() * 40 * 8);
  // Random texts over the bytes that matter.
  std::mt19937 rng(35);
  const std::string_view pieces[] = {"a", "d", "dd", "add",       ".", "(",     "'",          "\"",
                                     "-", " ", "\n", "_argument", "x", ".add(", "add_argumen"};
  for (int round = 0; round < 20000; ++round) {
    std::string text;
    const std::size_t parts = rng() % 24;
    for (std::size_t k = 0; k < parts; ++k) text += pieces[rng() % std::size(pieces)];
    ASSERT_EQ(may_define_options(text), two_searches(text)) << '"' << text << '"';
  }
}

TEST_F(Project, AnUnparsableOrMissingModuleHasNoValues) {
  write("bad.py", "GPU = (\n");
  ProjectValues pv(root_, {"bad.py", "gone.py"});
  EXPECT_FALSE(pv.module_name("bad", "GPU"));
  EXPECT_FALSE(pv.module_name("gone", "GPU"));
  EXPECT_FALSE(pv.option("gpu"));
}

// The consumer's side: DeviceValues with the project follows imports and other modules'
// options; without it (a single file) the same names stay Unknown.
TEST_F(Project, ImportedNamesAndOptionsReachTheImportersDevicePositions) {
  write("pkg/__init__.py", "");
  write("pkg/config.py", "GPU_ID = 0\n");
  write("pkg/opts.py", "def add(p):\n    p.add_argument('--gpu', type=int)\n");
  const std::string src =
      "from pkg.config import GPU_ID\n"
      "from . import config\n"
      "import pkg.config as cfg\n"
      "def main(args):\n"
      "    model.to(GPU_ID)\n"
      "    model.to(config.GPU_ID)\n"
      "    model.to(cfg.GPU_ID)\n"
      "    model.to(args.gpu)\n"
      "    model.to(self.gpu)\n";
  write("pkg/train.py", src);
  ProjectValues pv(root_, files_);
  const syntax::Tree tree = syntax::parse("pkg/train.py", src);
  const DeviceValues with(tree, {&pv, "pkg.train", false});
  const DeviceValues without(tree);
  int n = 0;
  for (const Node* c : tree.find_all(NodeKind::Call)) {
    if (!tree.text(*c).starts_with("model.to(")) continue;
    const Node& a = **c->args().begin();
    const bool self = tree.text(a).starts_with("self.");
    EXPECT_EQ(with.is_index(a), !self) << tree.text(a);
    EXPECT_FALSE(without.is_index(a)) << tree.text(a);
    ++n;
  }
  EXPECT_EQ(n, 5);
}

}  // namespace
}  // namespace torchport::flow
