#include <gtest/gtest.h>
#include <torchport/catalogue/catalogue.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>

namespace torchport::catalogue {
namespace {

const Catalogue& cat() { return Catalogue::builtin(); }

TEST(Catalogue, HasTheEightTargetsOfTheGuide) {
  std::set<std::string> names;
  for (const Target& t : cat().targets()) names.insert(t.name);
  EXPECT_EQ(names, (std::set<std::string>{"npu", "mlu", "musa", "xpu", "mps", "hpu", "cpu",
                                          "accelerator"}));
}

TEST(Catalogue, TargetFactsMatchTheGuideTable) {
  ASSERT_NE(cat().target("npu"), nullptr);
  EXPECT_EQ(cat().target("npu")->backend, "hccl");
  EXPECT_EQ(cat().target("npu")->visible_devices, "ASCEND_RT_VISIBLE_DEVICES");
  EXPECT_EQ(cat().target("npu")->import_stmt, "import torch_npu");
  EXPECT_EQ(cat().target("mlu")->backend, "cncl");
  EXPECT_EQ(cat().target("musa")->backend, "mccl");
  EXPECT_EQ(cat().target("xpu")->backend, "xccl");
  EXPECT_EQ(cat().target("xpu")->import_stmt, "");
  // MPS has no collective backend of its own: torch's default_device_backend_map["mps"] is gloo.
  EXPECT_EQ(cat().target("mps")->backend, "gloo");
  EXPECT_FALSE(cat().target("mps")->device_index) << "one device";
  EXPECT_TRUE(cat().target("cpu")->host);
  EXPECT_EQ(cat().target("cpu")->amp_dtype, "bfloat16") << "torch.get_autocast_dtype('cpu')";
  EXPECT_EQ(cat().target("cpu")->backend, "gloo");
  EXPECT_EQ(cat().target("accelerator")->min_torch, "2.6");
  EXPECT_EQ(cat().target("nope"), nullptr);
}

TEST(Catalogue, TorchNpuSynchronizeExists) {
  const Mapping* m = cat().lookup("torch.cuda.synchronize", "npu");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->replacement, "torch_npu.npu.synchronize");
  EXPECT_EQ(m->status, Status::Supported);
  EXPECT_NE(m->source.find("torch_npu.npu.__all__"), std::string::npos);
}

// Facts read from the vendor's torch-npu wheels (tools/check_vendor_npu.py, issue 31).
TEST(Catalogue, NpuFactsFromTheVendorWheels) {
  const Mapping* cap = cat().lookup("torch.cuda.get_device_capability", "npu");
  ASSERT_NE(cap, nullptr);
  EXPECT_EQ(cap->returns, "None");  // None unless TORCH_NPU_DEVICE_CAPABILITY is set
  EXPECT_EQ(cap->status, Status::Partial);
  EXPECT_EQ(cat().lookup("torch.cuda.synchronize", "npu")->returns, "");

  const Mapping* tf32 = cat().lookup("torch.backends.cuda.matmul.allow_tf32", "npu");
  ASSERT_NE(tf32, nullptr);
  EXPECT_EQ(tf32->replacement, "torch_npu.npu.matmul.allow_hf32");  // allow_tf32 is ignored there
  EXPECT_EQ(tf32->changes.rfind("changes numerics", 0), 0u) << tf32->changes;

  const Mapping* gens = cat().lookup("torch.cuda.default_generators", "npu");
  ASSERT_NE(gens, nullptr);
  EXPECT_EQ(gens->replacement, "torch_npu.npu.default_generators");

  const Mapping* prof = cat().lookup("torch.profiler.ProfilerActivity.CUDA", "npu");
  ASSERT_NE(prof, nullptr);
  ASSERT_EQ(prof->moves_with.size(), 5u);
  EXPECT_EQ(prof->moves_with[0].first, "torch.profiler.ProfilerAction");
  EXPECT_EQ(prof->moves_with[0].second, "torch_npu.profiler.ProfilerAction");
  EXPECT_TRUE(cat().lookup("torch.profiler.ProfilerActivity.CUDA", "xpu")->moves_with.empty());

  EXPECT_NE(cat().lookup("NCCL_SOCKET_IFNAME", "npu")->read_by, "");
}

TEST(Catalogue, MpsHasNoCollectiveBackend) {
  const Mapping* m = cat().lookup("nccl", "mps");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->replacement, "gloo");
  EXPECT_EQ(m->status, Status::Partial);
}

TEST(Catalogue, StarMappingsTakeTheTargetsFields) {
  EXPECT_EQ(cat().lookup("nccl", "mlu")->replacement, "cncl");
  EXPECT_EQ(cat().lookup("nccl", "npu")->replacement, "hccl");
  EXPECT_EQ(cat().lookup("cuda", "musa")->replacement, "musa");
  EXPECT_EQ(cat().lookup("CUDA_VISIBLE_DEVICES", "xpu")->replacement, "ZE_AFFINITY_MASK");
}

TEST(Catalogue, RenamedClassesAndIntrospectedFacts) {
  EXPECT_EQ(cat().lookup("torch.cuda.CUDAGraph", "npu")->replacement, "torch_npu.npu.NPUGraph");
  EXPECT_EQ(cat().lookup("torch.cuda.CUDAGraph", "mlu")->replacement, "torch.mlu.MLUGraph");
  // torch.mps has no peak-memory statistic: as on cpu, the call becomes 0, labelled as a
  // changed value (an unsafe fix), never a name that does not exist.
  const Mapping* mps = cat().lookup("torch.cuda.max_memory_allocated", "mps");
  EXPECT_EQ(mps->status, Status::Partial);
  EXPECT_EQ(mps->replacement, "");
  EXPECT_EQ(mps->without_device, "0");
  EXPECT_FALSE(mps->changes.empty());
  // torch.accelerator's memory API appeared in 2.9; set_device_index in 2.7.
  EXPECT_EQ(cat().lookup("torch.cuda.max_memory_allocated", "accelerator")->min_torch, "2.9");
  EXPECT_EQ(cat().lookup("torch.cuda.set_device", "accelerator")->replacement,
            "torch.accelerator.set_device_index");
  EXPECT_EQ(cat().lookup("torch.cuda.set_device", "accelerator")->min_torch, "2.7");
  // No accelerator on cpu: availability is what a machine without CUDA answers.
  EXPECT_EQ(cat().lookup("torch.cuda.is_available", "cpu")->without_device, "False");
  EXPECT_EQ(cat().lookup("torch.cuda.device_count", "cpu")->without_device, "0");
  // RNG on CPU goes through torch itself.
  EXPECT_EQ(cat().lookup("torch.cuda.manual_seed_all", "cpu")->replacement, "torch.manual_seed");
}

TEST(Catalogue, EveryEntryCoversEveryTargetWithASource) {
  ASSERT_GT(cat().entries().size(), 150u);
  for (const Entry& e : cat().entries()) {
    for (const Target& t : cat().targets()) {
      auto it = e.targets.find(t.name);
      ASSERT_NE(it, e.targets.end()) << e.api << " has no mapping for " << t.name;
      EXPECT_FALSE(it->second.source.empty()) << e.api << " / " << t.name;
      if (it->second.status == Status::Supported) {
        // Supported means a replacement, or a value where there is no device (cpu's
        // torch.cuda.is_available() is False).
        EXPECT_FALSE(it->second.replacement.empty() && it->second.without_device.empty())
            << e.api << " / " << t.name;
      }
    }
  }
}

TEST(Catalogue, AscendListsJudgeGeneralApisPerVersion) {
  auto s = cat().api_support("torch.optim.Adam.step", "npu", "2.8");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->status, Status::Unsupported);
  auto ok = cat().api_support("torch.cuda.synchronize", "npu", "2.8");
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(ok->status, Status::Supported);
  // A torch API no list names is "unknown", as Ascend's tool reports it.
  auto unk = cat().api_support("torch.no_such_function_xyz", "npu", "2.8");
  ASSERT_TRUE(unk.has_value());
  EXPECT_EQ(unk->status, Status::Unknown);
  EXPECT_FALSE(cat().api_support("numpy.zeros", "npu", "").has_value());
  EXPECT_FALSE(cat().api_support("torch.zeros", "xpu", "").has_value()) << "no list for xpu";
  EXPECT_EQ(cat().support_versions("npu"), (std::vector<std::string>{"2.1", "2.6", "2.7", "2.8"}));
  EXPECT_TRUE(cat().has_support_lists("npu"));
  EXPECT_FALSE(cat().has_support_lists("xpu"));  // no vendor list: the list rules do not run
  EXPECT_FALSE(cat().has_support_lists("no-such-target"));
}

// A SupportQuery (TP950's list chosen once per file) answers what api_support() answers, for
// every version a run can ask (exact, between two lists, before and after all, the default)
// and a target without lists.
TEST(Catalogue, ASupportQueryAnswersAsApiSupport) {
  const std::vector<std::string> apis = {"torch.optim.Adam.step",
                                         "torch.cuda.synchronize",
                                         "torch.no_such_function_xyz",
                                         "numpy.zeros",
                                         "torch.sparse.check_sparse_tensor_invariants",
                                         "torch.nn.Linear",
                                         "torch.zeros",
                                         "torch.sparse.mm",
                                         "",
                                         "torch"};
  std::size_t answered = 0;
  for (const std::string target : {"npu", "mlu", "xpu", "no-such-target"}) {
    for (const std::string version :
         {"", "2.1", "2.5", "2.6", "2.7.1", "2.8", "2.10", "1.0", "9"}) {
      const SupportQuery query = cat().support_query(target, version);
      for (const std::string& api : apis) {
        const auto want = cat().api_support(api, target, version);
        const auto got = query.find(api);
        ASSERT_EQ(got.has_value(), want.has_value()) << api << " " << target << " " << version;
        if (!want) continue;
        ++answered;
        EXPECT_EQ(got->status, want->status) << api << " " << target << " " << version;
        EXPECT_EQ(got->tip, want->tip) << api << " " << target << " " << version;
        EXPECT_EQ(got->source, want->source) << api << " " << target << " " << version;
      }
    }
  }
  EXPECT_GT(answered, 50u);  // the lists do answer (npu and mlu)
}

TEST(Catalogue, VersionSelectionPicksTheNewestListNotNewerThanAsked) {
  // torch.sparse.check_sparse_tensor_invariants is unsupported in the 2.8 list; 2.9 and 2.10
  // fall back to it, 2.0 to the oldest list.
  auto v = cat().api_support("torch.sparse.check_sparse_tensor_invariants", "npu", "2.10");
  ASSERT_TRUE(v.has_value());
  EXPECT_NE(v->source.find("torch 2.8"), std::string::npos) << v->source;
  auto old = cat().api_support("torch.sparse.check_sparse_tensor_invariants", "npu", "2.0");
  ASSERT_TRUE(old.has_value());
  EXPECT_NE(old->source.find("torch 2.1"), std::string::npos) << old->source;
}

TEST(Catalogue, MluListsCarryCambriconLimits) {
  auto p = cat().api_support("torch.cuda.Event", "mlu", "");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->status, Status::Partial);
  EXPECT_FALSE(p->tip.empty());
}

Catalogue::Documents minimal_docs(std::string entries) {
  Catalogue::Documents d;
  d.targets = {"targets.json",
               R"({"targets": [{"name": "npu", "vendor": "v", "module": "torch.npu",
                   "device": "npu", "install": "x", "sources": ["s"]},
                  {"name": "mps", "vendor": "v", "module": "torch.mps", "device": "mps",
                   "install": "x", "sources": ["s"]}]})"};
  d.entries.push_back({"catalogue/x.json", std::move(entries)});
  return d;
}

TEST(CatalogueParse, ErrorsNameTheDocumentEntryAndField) {
  std::string error;
  auto c = Catalogue::parse(minimal_docs(R"({"entries": [{"api": "torch.cuda.x", "kind": "function",
          "family": "device", "targets": {"npu": {"replacement": "a", "status": "supported"}}}]})"),
                            &error);
  EXPECT_FALSE(c.has_value());
  EXPECT_EQ(error,
            "catalogue/x.json: entries[0] (torch.cuda.x).targets.npu: missing field \"source\"");

  c = Catalogue::parse(minimal_docs(R"({"entries": [{"api": "a", "kind": "function", "family": "f",
          "targets": {"npu": {"replacement": "a", "status": "great", "source": "s"}}}]})"),
                       &error);
  EXPECT_FALSE(c.has_value());
  EXPECT_NE(error.find("targets.npu.status: unknown status \"great\""), std::string::npos) << error;

  c = Catalogue::parse(minimal_docs(R"({"entries": [{"api": "a", "kind": "function",
          "family": "f", "targets": {"tpu": {"status": "unsupported", "source": "s"}}}]})"),
                       &error);
  EXPECT_FALSE(c.has_value());
  EXPECT_NE(error.find("unknown target \"tpu\""), std::string::npos) << error;

  c = Catalogue::parse(minimal_docs("{not json"), &error);
  EXPECT_FALSE(c.has_value());
  EXPECT_EQ(error.rfind("catalogue/x.json: ", 0), 0u) << error;
}

TEST(CatalogueParse, StarNeedsEveryPlaceholderFilled) {
  std::string error;
  auto c =
      Catalogue::parse(minimal_docs(R"({"entries": [{"api": "nccl", "kind": "string", "family": "d",
          "targets": {"*": {"replacement": "{backend}", "status": "supported", "source": "s"}}}]})"),
                       &error);
  EXPECT_FALSE(c.has_value());
  EXPECT_NE(error.find("{backend} is empty for target npu"), std::string::npos) << error;

  c = Catalogue::parse(minimal_docs(R"({"entries": [{"api": "cuda", "kind": "string", "family": "d",
          "targets": {"*": {"replacement": "{device}", "status": "supported", "source": "s"},
                      "mps": {"replacement": "cpu", "status": "partial", "source": "t"}}}]})"),
                       &error);
  ASSERT_TRUE(c.has_value()) << error;
  EXPECT_EQ(c->lookup("cuda", "npu")->replacement, "npu");
  EXPECT_EQ(c->lookup("cuda", "mps")->replacement, "cpu");
  EXPECT_EQ(c->lookup("cuda", "mps")->source, "t");
}

}  // namespace
}  // namespace torchport::catalogue

namespace torchport::catalogue {
namespace {

TEST(CustomRules, AscendLegacyFormatBecomesEntriesForTheTarget) {
  std::string error;
  auto c = Catalogue::builtin().with_rules(
      "r.json",
      R"({"rules": {"FuncNameModifyRule": [{"old_name": "CC.DD.old_name", "new_name": "AA.BB.new_name"}],
                    "ModuleNameModifyRule": [{"old_name": "cuda", "new_name": "npu", "parent_module": "torch"}]}})",
      "npu", &error);
  ASSERT_TRUE(c.has_value()) << error;
  const Mapping* f = c->lookup("CC.DD.old_name", "npu");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->replacement, "AA.BB.new_name");
  EXPECT_EQ(f->source, "custom rules r.json (FuncNameModifyRule[0])");
  EXPECT_EQ(c->lookup("CC.DD.old_name", "mlu"), nullptr) << "legacy rules apply to one target";
  EXPECT_EQ(c->lookup("torch.cuda", "npu")->replacement, "torch.npu");
  // The built-in catalogue itself is untouched.
  EXPECT_EQ(Catalogue::builtin().find("CC.DD.old_name"), nullptr);
}

TEST(CustomRules, TorchportFormatOverridesBuiltinEntries) {
  std::string error;
  auto c = Catalogue::builtin().with_rules(
      "mine.json",
      R"({"entries": [{"api": "torch.cuda.synchronize", "kind": "function", "family": "device",
          "targets": {"npu": {"replacement": "my_sync", "status": "supported", "source": "me"}}}]})",
      "npu", &error);
  ASSERT_TRUE(c.has_value()) << error;
  EXPECT_EQ(c->lookup("torch.cuda.synchronize", "npu")->replacement, "my_sync");
  EXPECT_EQ(c->entries().size(), Catalogue::builtin().entries().size());
}

TEST(CustomRules, BadFilesNameTheField) {
  std::string error;
  const Catalogue& b = Catalogue::builtin();
  EXPECT_FALSE(b.with_rules("r.json", R"({"rules": {"Bogus": []}})", "npu", &error));
  EXPECT_EQ(error,
            "r.json: rules.Bogus: is not a rule kind torchport can run (expected "
            "InsertMainFileRule, InsertGlobalRule, ArgsModifyRule, FuncNameModifyRule, "
            "ModuleNameModifyRule, ReplaceStringRule or ReplaceAttributeRule)");
  EXPECT_FALSE(b.with_rules("r.json", R"({"rules": {"FuncNameModifyRule": [{"old_name": "a.b"}]}})",
                            "npu", &error));
  EXPECT_EQ(error, "r.json: rules.FuncNameModifyRule[0]: missing field \"new_name\"");
  EXPECT_FALSE(b.with_rules(
      "r.json", R"({"rules": {"FuncNameModifyRule": [{"old_name": "f", "new_name": "g.h"}]}})",
      "npu", &error));
  EXPECT_EQ(error,
            "r.json: rules.FuncNameModifyRule[0]: FuncNameModifyRule cannot be expressed: \"f\" "
            "matches a name on any object, which cannot become the dotted \"g.h\"");
  EXPECT_FALSE(b.with_rules("r.json", R"({"something": 1})", "npu", &error));
  EXPECT_NE(error.find("expected a top-level \"rules\" object"), std::string::npos);
  EXPECT_FALSE(b.with_rules("r.json", "[1,", "npu", &error));
  EXPECT_EQ(error.rfind("r.json: ", 0), 0u);
  EXPECT_FALSE(b.with_rules(
      "r.json",
      R"({"entries": [{"api": "x.y", "kind": "function", "family": "f", "targets": {"npu": {"status": "supported", "replacement": "z"}}}]})",
      "npu", &error));
  EXPECT_EQ(error, "r.json: entries[0] (x.y).targets.npu: missing field \"source\"");
}

// Ascend's rule tables (builtin_rules.json): the kinds beyond the legacy three.
TEST(CustomRules, AscendRuleTableKindsBecomeCustomRules) {
  std::string error;
  auto c = Catalogue::builtin().with_rules("t.json", R"({"rules": {
      "FuncNameModifyRule": [{"old_name": "cuda", "new_name": "npu"}],
      "ReplaceStringRule": [{"str_old": "cuda:", "str_new": "npu:", "strict": false}],
      "ReplaceAttributeRule": [{"old_name": "is_cuda", "new_name": "is_npu"},
                               {"old_name": "a.B", "new_name": "c.B"}],
      "InsertGlobalRule": [{"import_key_word": "torch", "insert_content": ["import os"]}]}})",
                                           "npu", &error);
  ASSERT_TRUE(c.has_value()) << error;
  const CustomRules& r = c->custom_rules();
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].new_name, "npu");
  EXPECT_EQ(r.calls[0].source, "custom rules t.json (FuncNameModifyRule[0])");
  ASSERT_EQ(r.strings.size(), 1u);
  EXPECT_FALSE(r.strings[0].strict);
  ASSERT_EQ(r.attributes.size(), 1u) << "a dotted attribute is a catalogue entry";
  EXPECT_EQ(c->lookup("a.B", "npu")->replacement, "c.B");
  ASSERT_EQ(r.inserts.size(), 1u);
  EXPECT_EQ(r.inserts[0].import_key_word, "torch");
  EXPECT_TRUE(Catalogue::builtin().custom_rules().calls.empty());
}

// A rule is used when its feature_switch names a switch that is on: normal and 2.1.0 always,
// specify_device with -s, distributed never.
TEST(CustomRules, FeatureSwitchesSelectRules) {
  const std::string text = R"({"rules": {"ArgsModifyRule": [
      {"func_name": "a", "arg_idx": 0, "arg_new": "1", "feature_switch": ["specify_device"]},
      {"func_name": "b", "arg_idx": 0, "arg_new": "1", "feature_switch": ["distributed"]},
      {"func_name": "c", "arg_idx": 0, "arg_new": "1", "feature_switch": ["normal"]},
      {"func_name": "d", "arg_idx": 0, "arg_new": "1", "feature_switch": ["2.1.0"]},
      {"func_name": "e", "arg_idx": 0, "arg_new": "1"}]}})";
  auto names = [](const Catalogue& c) {
    std::string out;
    for (const ArgRule& r : c.arg_rules()) out += r.func_name;
    return out;
  };
  std::string error;
  auto plain = Catalogue::builtin().with_rules("t.json", text, "npu", false, &error);
  ASSERT_TRUE(plain) << error;
  EXPECT_EQ(names(*plain), "cde");
  auto pinned = Catalogue::builtin().with_rules("t.json", text, "npu", true, &error);
  ASSERT_TRUE(pinned) << error;
  EXPECT_EQ(names(*pinned), "acde");
  EXPECT_FALSE(Catalogue::builtin().with_rules(
      "t.json",
      R"({"rules": {"ArgsModifyRule": [{"func_name": "a", "arg_idx": 0, "arg_new": "1", "feature_switch": "normal"}]}})",
      "npu", &error));
  EXPECT_EQ(error, "t.json: rules.ArgsModifyRule[0].feature_switch: expected a list of strings");
}

// InsertMainFileRule needs Ascend's main file (`distributed -m FILE`): skipped when only the
// distributed switch selects it, a clear error otherwise.
TEST(CustomRules, InsertMainFileRuleIsSkippedOrRefused) {
  std::string error;
  auto c = Catalogue::builtin().with_rules(
      "t.json",
      R"({"rules": {"InsertMainFileRule": [{"insert_content": ["import torch.npu"], "feature_switch": ["distributed"]}]}})",
      "npu", &error);
  ASSERT_TRUE(c) << error;
  EXPECT_TRUE(c->custom_rules().inserts.empty());
  EXPECT_FALSE(Catalogue::builtin().with_rules(
      "t.json", R"({"rules": {"InsertMainFileRule": [{"insert_content": ["import torch.npu"]}]}})",
      "npu", &error));
  EXPECT_EQ(error,
            "t.json: rules.InsertMainFileRule[0]: InsertMainFileRule cannot be expressed: it "
            "inserts into the main file of Ascend's `distributed -m FILE` mode, and torchport "
            "has no main file (rules whose feature_switch is only \"distributed\" are skipped)");
}

TEST(CustomRules, BadRuleTableEntriesNameTheField) {
  std::string error;
  const Catalogue& b = Catalogue::builtin();
  EXPECT_FALSE(b.with_rules("t.json",
                            R"({"rules": {"InsertGlobalRule": [{"insert_content": ["if x:"]}]}})",
                            "npu", &error));
  EXPECT_EQ(error.rfind("t.json: rules.InsertGlobalRule[0].insert_content[0]: \"if x:\" is not "
                        "Python statements",
                        0),
            0u)
      << error;
  EXPECT_FALSE(b.with_rules(
      "t.json", R"({"rules": {"ReplaceStringRule": [{"str_old": "a'b", "str_new": "c"}]}})", "npu",
      &error));
  EXPECT_EQ(error,
            "t.json: rules.ReplaceStringRule[0]: \"a'b\" cannot be expressed: quotes, "
            "backslashes, braces and line breaks would change the string literal's syntax");
  EXPECT_FALSE(b.with_rules(
      "t.json",
      R"({"rules": {"ReplaceStringRule": [{"str_old": "a", "str_new": "b", "strict": 1}]}})", "npu",
      &error));
  EXPECT_EQ(error, "t.json: rules.ReplaceStringRule[0].strict: expected true or false");
}

TEST(CustomRules, ArgsModifyRuleBecomesAnArgRuleForTheTarget) {
  std::string error;
  auto c = Catalogue::builtin().with_rules("r.json",
                                           R"({"rules": {"ArgsModifyRule": [
          {"func_name": "to", "arg_idx": 0, "arg_new": "f'npu:{DEVICE_ID}'"},
          {"func_name": "torch.zeros", "arg_keyword": "device", "arg_new": "",
           "white_list": ["cpu", "^\"npu"]}]}})",
                                           "npu", &error);
  ASSERT_TRUE(c.has_value()) << error;
  ASSERT_EQ(c->arg_rules().size(), 2u);
  const ArgRule& a = c->arg_rules()[0];
  EXPECT_EQ(a.func_name, "to");
  EXPECT_EQ(a.arg_idx, 0u);
  EXPECT_EQ(a.arg_keyword, "");
  EXPECT_EQ(a.arg_new, "f'npu:{DEVICE_ID}'");
  EXPECT_EQ(a.target, "npu");
  EXPECT_EQ(a.source, "custom rules r.json (ArgsModifyRule[0])");
  const ArgRule& b = c->arg_rules()[1];
  EXPECT_FALSE(b.arg_idx.has_value());
  EXPECT_EQ(b.arg_keyword, "device");
  EXPECT_EQ(b.arg_new, "");
  EXPECT_EQ(b.white_list, (std::vector<std::string>{"cpu", "^\"npu"}));
  EXPECT_TRUE(Catalogue::builtin().arg_rules().empty());
}

TEST(CustomRules, BadArgsModifyRulesNameTheField) {
  const Catalogue& b = Catalogue::builtin();
  auto error_of = [&](const std::string& rule) {
    std::string error;
    EXPECT_FALSE(
        b.with_rules("r.json", R"({"rules": {"ArgsModifyRule": [)" + rule + "]}}", "npu", &error))
        << rule;
    return error;
  };
  EXPECT_EQ(error_of(R"({"arg_idx": 0, "arg_new": "x"})"),
            "r.json: rules.ArgsModifyRule[0]: missing field \"func_name\"");
  EXPECT_EQ(error_of(R"({"func_name": "f", "arg_idx": 0})"),
            "r.json: rules.ArgsModifyRule[0]: missing field \"arg_new\"");
  EXPECT_EQ(error_of(R"({"func_name": "f", "arg_new": "x"})"),
            "r.json: rules.ArgsModifyRule[0]: missing field \"arg_idx\" or \"arg_keyword\"");
  EXPECT_EQ(error_of(R"({"func_name": "f", "arg_idx": 0, "arg_keyword": "d", "arg_new": "x"})"),
            "r.json: rules.ArgsModifyRule[0]: give \"arg_idx\" or \"arg_keyword\", not both");
  for (const char* bad : {"-1", "1.5", "\"0\"", "true"}) {
    EXPECT_EQ(
        error_of(R"({"func_name": "f", "arg_new": "x", "arg_idx": )" + std::string(bad) + "}"),
        "r.json: rules.ArgsModifyRule[0].arg_idx: expected a non-negative integer, got " +
            std::string(bad));
  }
  EXPECT_EQ(error_of(R"({"func_name": "f", "arg_new": "x", "arg_keyword": 3})"),
            "r.json: rules.ArgsModifyRule[0].arg_keyword: expected a string");
  EXPECT_EQ(error_of(R"({"func_name": "f", "arg_new": "x", "arg_keyword": "a.b"})"),
            "r.json: rules.ArgsModifyRule[0].arg_keyword: \"a.b\" is not a Python name");
  EXPECT_EQ(error_of(R"({"func_name": "torch..zeros", "arg_idx": 0, "arg_new": "x"})"),
            "r.json: rules.ArgsModifyRule[0].func_name: \"torch..zeros\" is not a name (\"to\") "
            "or a dotted name (\"torch.zeros\")");
  EXPECT_EQ(error_of(R"({"func_name": "f", "arg_idx": 0, "arg_new": "x", "white_list": "cpu"})"),
            "r.json: rules.ArgsModifyRule[0].white_list: expected a list");
  EXPECT_EQ(error_of(R"({"func_name": "f", "arg_idx": 0, "arg_new": "x", "white_list": ["a", 1]})"),
            "r.json: rules.ArgsModifyRule[0].white_list: expected a list of strings");
  const std::string regex = error_of(
      R"({"func_name": "f", "arg_idx": 0, "arg_new": "x", "white_list": ["cpu", "(npu"]})");
  EXPECT_EQ(regex.rfind("r.json: rules.ArgsModifyRule[0].white_list[1]: \"(npu\" is not a valid "
                        "regular expression (",
                        0),
            0u)
      << regex;
  const std::string expr = error_of(R"({"func_name": "f", "arg_idx": 0, "arg_new": "a b"})");
  EXPECT_EQ(expr.rfind("r.json: rules.ArgsModifyRule[0].arg_new: \"a b\" is not one Python "
                       "expression",
                       0),
            0u)
      << expr;
  EXPECT_EQ(error_of(R"({"func_name": "f", "arg_idx": 0, "arg_new": "a, b"})"),
            "r.json: rules.ArgsModifyRule[0].arg_new: \"a, b\" is not one Python expression");
  EXPECT_EQ(error_of(R"({"func_name": "f", "arg_idx": 0, "arg_new": "x"}, 7)"),
            "r.json: rules.ArgsModifyRule[1]: expected an object");
}

}  // namespace
}  // namespace torchport::catalogue

namespace torchport::catalogue {
namespace {

Catalogue::Documents one_target(const std::string& extra) {
  Catalogue::Documents d;
  d.targets = {"targets.json", R"({"targets": [{"name": "foo", "vendor": "v", "module": "torch.foo",
                   "device": "foo", "install": "x", "sources": ["s"])" +
                                   extra + "}]}"};
  return d;
}

TEST(CatalogueParse, TargetFactsAndTheirSources) {
  std::string error;
  auto c = Catalogue::parse(one_target(R"(, "device_index": false, "host": true,
      "amp_dtype": "bfloat16", "fallback": {"default": "error", "env": "X=1"},
      "facts": {"device": "installed torch 2.13.0", "host": "unverified: a guess"})"),
                            &error);
  ASSERT_TRUE(c.has_value()) << error;
  const Target* t = c->target("foo");
  EXPECT_FALSE(t->device_index);
  EXPECT_TRUE(t->host);
  EXPECT_EQ(t->amp_dtype, "bfloat16");
  EXPECT_EQ(t->fallback.default_behaviour, "error");
  EXPECT_EQ(t->fallback.env, "X=1");
  EXPECT_EQ(t->unverified(), std::vector<std::string>{"host"});

  // A source for a field the target does not have, an empty source, a non-boolean flag.
  EXPECT_FALSE(Catalogue::parse(one_target(R"(, "facts": {"backend": "s"})"), &error));
  EXPECT_EQ(error, "targets.json: targets[0].facts.backend: names no field of the target");
  EXPECT_FALSE(Catalogue::parse(one_target(R"(, "facts": {"device": ""})"), &error));
  EXPECT_EQ(error, "targets.json: targets[0].facts.device: expected a source (a non-empty string)");
  EXPECT_FALSE(Catalogue::parse(one_target(R"(, "host": "yes")"), &error));
  EXPECT_EQ(error, "targets.json: targets[0].host: expected true or false");
}

TEST(CatalogueParse, EveryBuiltinTargetNamesTheSourceOfItsFacts) {
  for (const Target& t : Catalogue::builtin().targets()) {
    EXPECT_GE(t.facts.size(), 12u) << t.name;
    for (const auto& [fact, source] : t.facts)
      EXPECT_FALSE(source.empty()) << t.name << "." << fact;
  }
}

TEST(CatalogueParse, EmbeddedSupportListsParsedOnFirstUseAgreeWithTheDataDirectory) {
  // The embedded catalogue parses a target's support lists when they are first asked for;
  // data/ read and parsed at once must give every target the same versions and answers.
  std::string error;
  auto docs = Catalogue::read_dir(std::string(TORCHPORT_SOURCE_DIR) + "/data", &error);
  ASSERT_TRUE(docs.has_value()) << error;
  auto eager = Catalogue::parse(*docs, &error);
  ASSERT_TRUE(eager.has_value()) << error;
  const Catalogue& lazy = Catalogue::builtin();
  std::size_t judged = 0;
  for (const Target& t : lazy.targets()) {
    EXPECT_EQ(lazy.support_versions(t.name), eager->support_versions(t.name)) << t.name;
    for (const std::string& version : {std::string(), std::string("2.1"), std::string("2.8")})
      for (const char* api : {"torch.optim.Adam.step", "torch.cuda.synchronize", "torch.cuda.Event",
                              "torch.no_such_function_xyz", "numpy.zeros",
                              "torch.sparse.check_sparse_tensor_invariants"}) {
        auto a = lazy.api_support(api, t.name, version),
             b = eager->api_support(api, t.name, version);
        ASSERT_EQ(a.has_value(), b.has_value()) << t.name << " " << api << " " << version;
        if (!a) continue;
        ++judged;
        EXPECT_EQ(a->status, b->status) << t.name << " " << api;
        EXPECT_EQ(a->tip, b->tip) << t.name << " " << api;
        EXPECT_EQ(a->source, b->source) << t.name << " " << api;
      }
  }
  EXPECT_GE(judged, 20u) << "npu and mlu have lists";
  // Every API of every list of every version: the same answer both ways.
  std::size_t listed = 0;
  for (const auto& [name, text] : docs->support) {
    const nlohmann::json doc = nlohmann::json::parse(text);
    const std::string target = doc["target"];
    for (const auto& [version, body] : doc["versions"].items()) {
      std::vector<std::string> apis;
      for (const auto& [key, list] : body.items()) {
        if (list.is_array())
          for (const auto& api : list) apis.push_back(api);
        else if (list.is_object())
          for (const auto& [api, tip] : list.items()) apis.push_back(api);
      }
      for (const std::string& api : apis) {
        auto a = lazy.api_support(api, target, version),
             b = eager->api_support(api, target, version);
        ASSERT_TRUE(a && b) << name << " " << version << " " << api;
        ++listed;
        EXPECT_EQ(a->status, b->status) << name << " " << version << " " << api;
        EXPECT_EQ(a->tip, b->tip) << name << " " << version << " " << api;
        EXPECT_EQ(a->source, b->source) << name << " " << version << " " << api;
      }
    }
  }
  EXPECT_GE(listed, 10000u);
}

TEST(CatalogueParse, AdviceTableNamesEveryCallItAdvisesOn) {
  // rules/advice.cc skips a call whose name is in neither set: each table entry must be there.
  const AdviceTable* t = Catalogue::builtin().advice("npu");
  ASSERT_NE(t, nullptr);
  EXPECT_TRUE(t->indexed);
  for (const auto* table : {&t->precision, &t->performance, &t->affinity_calls})
    for (const auto& [api, _] : *table) EXPECT_TRUE(t->call_names.contains(api)) << api;
  for (const AdviceTable::Suggest& s : t->suggest)
    for (const std::string& dep : s.dependency) EXPECT_TRUE(t->call_names.contains(dep)) << dep;
  std::size_t methods = 0;
  for (const AdviceParameter& p : t->parameters) {
    const bool dotted = p.api.find('.') != std::string::npos;
    methods += !dotted;
    EXPECT_TRUE((dotted ? t->call_names : t->method_names).contains(p.api)) << p.api;
  }
  EXPECT_EQ(t->method_names.size() > 0, methods > 0);
  AdviceTable by_hand;
  by_hand.parameters.push_back({"to", "non_blocking", {2}, "True", "", "False", "tip"});
  by_hand.precision.emplace("torch.sum", "tip");
  by_hand.index();
  EXPECT_TRUE(by_hand.indexed);
  EXPECT_EQ(by_hand.call_names, AdviceTable::Names{"torch.sum"});
  EXPECT_EQ(by_hand.method_names, AdviceTable::Names{"to"});
}

TEST(CatalogueReadDir, ReadsADataDirectoryLaidOutAsData) {
  std::string error;
  auto docs = Catalogue::read_dir(std::string(TORCHPORT_SOURCE_DIR) + "/data", &error);
  ASSERT_TRUE(docs.has_value()) << error;
  auto c = Catalogue::parse(*docs, &error);
  ASSERT_TRUE(c.has_value()) << error;
  EXPECT_EQ(c->targets().size(), Catalogue::builtin().targets().size());
  EXPECT_EQ(c->entries().size(), Catalogue::builtin().entries().size());
  EXPECT_EQ(c->support_versions("npu"), Catalogue::builtin().support_versions("npu"));
  EXPECT_FALSE(Catalogue::read_dir("/nonexistent/dir", &error).has_value());
  EXPECT_EQ(error, "/nonexistent/dir/targets.json: cannot read");
}

}  // namespace
}  // namespace torchport::catalogue
