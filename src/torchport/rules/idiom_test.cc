// TP310: the command line's device flags, ported as one unit (the second pass, idiom.cc).
#include <gtest/gtest.h>
#include <torchport/catalogue/catalogue.h>
#include <torchport/fix/apply.h>
#include <torchport/rules/engine.h>
#include <torchport/semantic/model.h>
#include <torchport/syntax/parser.h>

#include <string>
#include <vector>

namespace torchport::rules {
namespace {

/// Runs only the second pass on `src` (as the driver does on the first pass's output).
std::string port(const std::string& src, const std::string& target = "accelerator",
                 bool enabled = true, std::vector<Finding>* out = nullptr) {
  syntax::Tree tree = syntax::parse("t.py", src);
  EXPECT_TRUE(tree.ok());
  const semantic::Model model(tree);
  Options o;
  o.target = target;
  o.port_idiom = enabled;
  std::vector<Finding> fs = port_device_idiom(tree, model, catalogue::Catalogue::builtin(), o);
  std::vector<fix::Fix> fixes;
  for (const Finding& f : fs)
    if (f.fix) fixes.push_back(*f.fix);
  fix::ApplyResult ar = fix::apply_fixes(src, fixes);
  for (fix::FixOutcome oc : ar.outcomes) EXPECT_EQ(oc, fix::FixOutcome::Applied);
  EXPECT_TRUE(syntax::parse("out.py", ar.text).ok()) << ar.text;
  if (out) *out = fs;
  return ar.text;
}

const std::string kHead =
    "import argparse\n"
    "import torch\n"
    "p = argparse.ArgumentParser()\n";

TEST(DeviceFlags, UnderscoreSpellingKeepsItsStyleAndTheRowIsLabelled) {
  std::vector<Finding> fs;
  std::string out = port(kHead +
                             "p.add_argument('--use_cuda', action='store_true')\n"
                             "opt = p.parse_args()\n"
                             "if opt.use_cuda:\n"
                             "    print('on the GPU')\n",
                         "mlu", true, &fs);
  EXPECT_EQ(out, kHead +
                     "p.add_argument('--use_mlu', action='store_true')\n"
                     "p.add_argument('--use_cuda', dest='use_mlu', action='store_true', "
                     "help='deprecated alias of --use_mlu')\n"
                     "opt = p.parse_args()\n"
                     "if opt.use_mlu:\n"
                     "    print('on the GPU')\n");
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].code, "TP310");
  EXPECT_NE(fs[0].changes.find("changes the command line"), std::string::npos);
}

/// The one finding of a refused flag: an UNKNOWN row, no fix, its reason in the message.
std::string kept_reason(const std::vector<Finding>& fs) {
  EXPECT_EQ(fs.size(), 1u);
  if (fs.size() != 1) return {};
  EXPECT_EQ(fs[0].op, Operation::Unknown);
  EXPECT_FALSE(fs[0].fix.has_value());
  return fs[0].message;
}

TEST(DeviceFlags, TheFlagsMayBeParsedInAFunctionOfTheFile) {
  std::string out = port(kHead +
                             "def get_args():\n"
                             "    p.add_argument('--no-cuda', action='store_true')\n"
                             "    args, _ = p.parse_known_args()\n"
                             "    return args\n"
                             "def train(args):\n"
                             "    return not args.no_cuda\n"
                             "opt = get_args()\n"
                             "use_cuda = not opt.no_cuda\n"
                             "train(opt)\n",
                         "mlu");
  EXPECT_EQ(out, kHead +
                     "def get_args():\n"
                     "    p.add_argument('--no-mlu', action='store_true')\n"
                     "    p.add_argument('--no-cuda', dest='no_mlu', action='store_true', "
                     "help='deprecated alias of --no-mlu')\n"
                     "    args, _ = p.parse_known_args()\n"
                     "    return args\n"
                     "def train(args):\n"
                     "    return not args.no_mlu\n"
                     "opt = get_args()\n"
                     "use_mlu = not opt.no_mlu\n"
                     "train(opt)\n");
}

TEST(DeviceFlags, NothingWhenTheDestIsReachedByGetattr) {
  std::string src = kHead +
                    "p.add_argument('--no-cuda', action='store_true')\n"
                    "args = p.parse_args()\n"
                    "off = getattr(args, 'no_cuda')\n";
  std::vector<Finding> fs;
  EXPECT_EQ(port(src, "accelerator", true, &fs), src);
  EXPECT_NE(kept_reason(fs).find("its dest is also reached by name"), std::string::npos);
}

TEST(DeviceFlags, AFlagOfAnotherTypeIsKeptAndSaidSo) {
  // dino's style: a bool-valued option, not a store_true flag.
  std::string src = kHead +
                    "p.add_argument('--use_cuda', default=True, type=bool_flag, help='use cuda')\n"
                    "args = p.parse_args()\n"
                    "x = args.use_cuda\n";
  std::vector<Finding> fs;
  EXPECT_EQ(port(src, "npu", true, &fs), src);
  const std::string why = kept_reason(fs);
  EXPECT_NE(why.find("keeps --use_cuda as it is (its default is not False)"), std::string::npos)
      << why;
  EXPECT_NE(why.find("it now switches the NPU"), std::string::npos) << why;
}

TEST(DeviceFlags, NothingWithoutStoreTrueOrWithTwoCudaFlags) {
  std::string counted = kHead +
                        "p.add_argument('--cuda', type=int, default=1)\n"
                        "args = p.parse_args()\n"
                        "x = args.cuda\n";
  std::vector<Finding> fs;
  EXPECT_EQ(port(counted, "accelerator", true, &fs), counted);
  EXPECT_NE(kept_reason(fs).find("it has type=, not only action=\"store_true\""),
            std::string::npos);
  std::string two = kHead +
                    "p.add_argument('--cuda', action='store_true')\n"
                    "p.add_argument('--no-cuda', action='store_true')\n"
                    "args = p.parse_args()\n"
                    "x = args.cuda and not args.no_cuda\n";
  EXPECT_EQ(port(two, "accelerator", true, &fs), two);
  ASSERT_EQ(fs.size(), 2u);
  EXPECT_NE(fs[0].message.find("more than one CUDA flag"), std::string::npos) << fs[0].message;
}

TEST(DeviceFlags, NothingForTheHostTargetOrWithKeepDeviceFlags) {
  std::string src = kHead +
                    "p.add_argument('--no-cuda', action='store_true')\n"
                    "args = p.parse_args()\n"
                    "use_cuda = not args.no_cuda\n";
  EXPECT_EQ(port(src, "cpu"), src);
  EXPECT_EQ(port(src, "accelerator", false), src);
}

TEST(DeviceFlags, ANameBoundTwiceOrAKeywordNameIsNotRenamed) {
  std::string out = port(kHead +
                         "p.add_argument('--no-cuda', action='store_true')\n"
                         "args = p.parse_args()\n"
                         "use_cuda = not args.no_cuda\n"
                         "cuda_kwargs = {}\n"
                         "if use_cuda:\n"
                         "    cuda_kwargs = {'pin_memory': True}\n"
                         "def run(use_cuda=False):\n"
                         "    return use_cuda\n"
                         "run(use_cuda=use_cuda)\n");
  // use_cuda is also a parameter: bound twice, kept; cuda_kwargs is assigned twice: kept.
  EXPECT_NE(out.find("use_cuda = not args.no_accel\n"), std::string::npos) << out;
  EXPECT_NE(out.find("    cuda_kwargs = {'pin_memory': True}\n"), std::string::npos) << out;
  EXPECT_NE(out.find("run(use_cuda=use_cuda)\n"), std::string::npos) << out;
}

TEST(DeviceFlags, AVendorFlagUsedElsewhereIsNotFolded) {
  std::string out = port(kHead +
                         "p.add_argument('--no-cuda', action='store_true')\n"
                         "p.add_argument('--no-mps', action='store_true')\n"
                         "args = p.parse_args()\n"
                         "use_mps = not args.no_mps and torch.backends.mps.is_available()\n"
                         "print('mps' if use_mps else 'no mps')\n");
  EXPECT_NE(out.find("p.add_argument('--no-mps', action='store_true')\n"), std::string::npos)
      << out;
  EXPECT_NE(out.find("use_mps = not args.no_mps"), std::string::npos) << out;
  EXPECT_NE(out.find("p.add_argument('--no-cuda', dest='no_accel'"), std::string::npos) << out;
}

TEST(DeviceFlags, VendorFlagsAreNotFoldedIntoAVendorTarget) {
  std::string out = port(kHead +
                             "p.add_argument('--cuda', action='store_true')\n"
                             "p.add_argument('--mps', action='store_true')\n"
                             "args = p.parse_args()\n"
                             "if args.cuda:\n"
                             "    d = 'npu'\n"
                             "elif args.mps:\n"
                             "    d = 'mps'\n",
                         "musa");
  EXPECT_NE(out.find("elif args.mps:\n"), std::string::npos) << out;
  EXPECT_NE(out.find("if args.musa:\n"), std::string::npos) << out;
}

TEST(DeviceFlags, ElifInTheMiddleOfAChainGoesUpToTheNextClause) {
  std::string out = port(kHead +
                         "p.add_argument('--cuda', action='store_true')\n"
                         "p.add_argument('--xpu', action='store_true')\n"
                         "args = p.parse_args()\n"
                         "if args.cuda:\n"
                         "    d = 1\n"
                         "elif args.xpu:  # Intel\n"
                         "    d = 2\n"
                         "    # still xpu\n"
                         "elif torch.backends.mps.is_available():\n"
                         "    d = 3\n"
                         "else:\n"
                         "    d = 4\n");
  EXPECT_EQ(out, kHead +
                     "p.add_argument('--accel', action='store_true')\n"
                     "p.add_argument('--cuda', '--xpu', dest='accel', action='store_true', "
                     "help='deprecated alias of --accel')\n"
                     "args = p.parse_args()\n"
                     "if args.accel:\n"
                     "    d = 1\n"
                     "elif torch.backends.mps.is_available():\n"
                     "    d = 3\n"
                     "else:\n"
                     "    d = 4\n");
}

}  // namespace
}  // namespace torchport::rules
