#include <gtest/gtest.h>
#include <torchport/callgraph/callgraph.h>

#include <string>

namespace torchport::callgraph {
namespace {

TEST(ThirdPartyResults, ReadsAscendsLayout) {
  // As Ascend writes it: names one a line, each message line ending in " \n".
  const std::string text =
      "File,3rd-party API,Message\r\n"
      "/s/m/a.py,\"m.a.f\nm.f\",\"file_path:/s/m/a.py, start_line:7, api_name:torch.cuda.sync \n"
      "file_path:/s/m/b, c.py, start_line:12, api_name:flash_attn.f \n\"\r\n";
  std::string error;
  auto rows = read_results("r.csv", text, &error);
  ASSERT_TRUE(rows) << error;
  ASSERT_EQ(rows->size(), 1u);
  const KnownApi& k = rows->front();
  EXPECT_EQ(k.file, "/s/m/a.py");
  EXPECT_EQ(k.names, (std::vector<std::string>{"m.a.f", "m.f"}));
  ASSERT_EQ(k.reached.size(), 2u);
  EXPECT_EQ(k.reached[0].file, "/s/m/a.py");
  EXPECT_EQ(k.reached[0].line, 7u);
  EXPECT_EQ(k.reached[0].api, "torch.cuda.sync");
  // A path holding ", " is split from the right.
  EXPECT_EQ(k.reached[1].file, "/s/m/b, c.py");
  EXPECT_EQ(k.reached[1].line, 12u);
  EXPECT_EQ(k.reached[1].api, "flash_attn.f");
}

TEST(ThirdPartyResults, RefusesMalformedFilesWithTheirLine) {
  std::string error;
  EXPECT_FALSE(read_results("r.csv", "Torch API,Affected 3rd-party API\n", &error));
  EXPECT_EQ(error.rfind("r.csv:1: not a full_unsupported_results.csv", 0), 0u) << error;
  EXPECT_FALSE(read_results("r.csv", "File,3rd-party API,Message\na,b\n", &error));
  EXPECT_EQ(error, "r.csv:2: a row needs 3 cells (File,3rd-party API,Message)");
  EXPECT_FALSE(read_results(
      "r.csv", "File,3rd-party API,Message\na,b,\"file_path:x, start_line:z, api_name:t\"\n",
      &error));
  EXPECT_EQ(error, "r.csv:2: start_line 'z' is not a number");
  EXPECT_FALSE(read_results("r.csv", "File,3rd-party API,Message\n\"a,b,c\n", &error));
  EXPECT_EQ(error, "r.csv:2: unterminated quoted cell");
  EXPECT_FALSE(read_results("r.csv", "File,3rd-party API,Message\na,,m\n", &error));
  EXPECT_NE(error.find("message line 'm'"), std::string::npos) << error;
}

TEST(ThirdPartyResults, WrittenCsvsReadBack) {
  Result r;
  r.leaves = {{"torch.cuda.synchronize", Category::MigrationNeeded, ""},
              {"torch.xpu.is_available", Category::Unknown, ""},
              {"apex.amp.initialize", Category::CudaOp, ""}};
  LibraryApi api;
  api.name = "lib.mod.f";
  api.names = {"lib.f"};
  api.file = "/site/lib/mod.py";
  api.reaches = {{0, "/site/lib/mod.py", 3}, {1, "/site/lib/mod.py", 4}, {2, "/site/lib/x.py", 9}};
  r.apis.push_back(api);
  auto files = ascend_csvs(r);
  ASSERT_EQ(files.size(), 5u);
  std::string full, migration, unknown, cuda;
  for (const auto& [name, content] : files) {
    if (name == "full_unsupported_results.csv") full = content;
    if (name == "migration_needed_op.csv") migration = content;
    if (name == "unknown_op.csv") unknown = content;
    if (name == "cuda_op.csv") cuda = content;
  }
  EXPECT_EQ(migration,
            "Torch API,Affected 3rd-party API\ntorch.cuda.synchronize,\"lib.f\nlib.mod.f\"\n");
  EXPECT_EQ(unknown,
            "Torch API,Affected 3rd-party API\ntorch.xpu.is_available,\"lib.f\nlib.mod.f\"\n");
  EXPECT_EQ(cuda, "OP Name,Affected 3rd-party API\napex.amp.initialize,\"lib.f\nlib.mod.f\"\n");
  // The unknown one stays out of the full results, as in Ascend's.
  std::string error;
  auto rows = read_results("full.csv", full, &error);
  ASSERT_TRUE(rows) << error;
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ(rows->front().names, (std::vector<std::string>{"lib.mod.f", "lib.f"}));
  ASSERT_EQ(rows->front().reached.size(), 2u);
  EXPECT_EQ(rows->front().reached[0].api, "torch.cuda.synchronize");
  EXPECT_EQ(rows->front().reached[0].line, 3u);
  EXPECT_EQ(rows->front().reached[1].api, "apex.amp.initialize");
  EXPECT_EQ(rows->front().reached[1].file, "/site/lib/x.py");
}

}  // namespace
}  // namespace torchport::callgraph
