#include <fcntl.h>
#include <gtest/gtest.h>
#include <torchport/text/file.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace torchport::text {
namespace {

namespace fs = std::filesystem;

TEST(ReadWholeFile, ReadsEveryByteOfAnyFile) {
  const fs::path dir = fs::temp_directory_path() / ("tp_read_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string big;
  for (int i = 0; big.size() < 300000; ++i) big += "line " + std::to_string(i) + "\r\n";
  big += std::string("\0tail\xff", 6);  // a NUL and a byte that is no UTF-8
  std::ofstream(dir / "big.py", std::ios::binary) << big;
  std::ofstream(dir / "empty.py", std::ios::binary);
  std::string out = "left over", error;
  ASSERT_TRUE(read_whole_file((dir / "big.py").c_str(), out, error)) << error;
  EXPECT_EQ(out, big);
  ASSERT_TRUE(read_whole_file((dir / "empty.py").c_str(), out, error)) << error;
  EXPECT_EQ(out, "");  // the buffer of the last file is reused, its bytes are not
  EXPECT_FALSE(read_whole_file((dir / "missing.py").c_str(), out, error));
  EXPECT_EQ(error, "No such file or directory");
  fs::remove_all(dir);
}

TEST(ReadWholeFile, ReadsAFileThatReportsNoSize) {
  // /proc files say size 0 and have text: the file is read to its end, not to its size.
  std::string out, error;
  ASSERT_TRUE(read_whole_file("/proc/self/status", out, error)) << error;
  EXPECT_NE(out.find("Name:"), std::string::npos);
  EXPECT_EQ(out.back(), '\n');
}

TEST(ReadWholeFile, ReadsAFileWithFewerBytesThanItReports) {
  // A /sys file says 4096 bytes and has a few: it is read to its end, not cut at the first read.
  const char* path = "/sys/kernel/mm/transparent_hugepage/enabled";
  std::string out, error;
  if (!read_whole_file(path, out, error)) GTEST_SKIP() << path << ": " << error;
  EXPECT_LT(out.size(), 4096u);
  EXPECT_NE(out.find('['), std::string::npos);
  EXPECT_EQ(out.back(), '\n');
}

TEST(ReadWholeFile, ASizeMeasuredEarlierIsAHintNotALimit) {
  // The walk measured the file; it changed before it was read: every byte is still read.
  const fs::path dir = fs::temp_directory_path() / ("tp_read_hint_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string text;
  for (int i = 0; text.size() < 70000; ++i) text += "x = " + std::to_string(i) + "\n";
  std::ofstream(dir / "m.py", std::ios::binary) << text;
  for (std::size_t hint : {text.size(), text.size() - 1, text.size() + 1, std::size_t{1},
                           text.size() / 2, text.size() * 3}) {
    std::string out, error;
    ASSERT_TRUE(read_whole_file_at(AT_FDCWD, (dir / "m.py").c_str(), out, error, hint)) << error;
    EXPECT_EQ(out, text) << "hint " << hint;
    const OpenDirectory root(dir.c_str());
    out.clear();
    ASSERT_TRUE(root.read("m.py", out, error, hint)) << error;
    EXPECT_EQ(out, text) << "hint " << hint;
  }
  fs::remove_all(dir);
}

TEST(ReadWholeFile, ReadsAFileRelativeToAnOpenDirectory) {
  const fs::path dir = fs::temp_directory_path() / ("tp_read_at_" + std::to_string(::getpid()));
  fs::create_directories(dir / "pkg" / "sub");
  std::ofstream(dir / "pkg" / "sub" / "m.py", std::ios::binary) << "import torch\n";
  const OpenDirectory root(dir.c_str());
  ASSERT_GE(root.fd(), 0);
  std::string out, error;
  ASSERT_TRUE(read_whole_file_at(root.fd(), "pkg/sub/m.py", out, error)) << error;
  EXPECT_EQ(out, "import torch\n");
  // an absolute path is its own, whatever the directory
  ASSERT_TRUE(read_whole_file_at(root.fd(), (dir / "pkg/sub/m.py").c_str(), out, error));
  EXPECT_EQ(out, "import torch\n");
  EXPECT_FALSE(read_whole_file_at(root.fd(), "pkg/m.py", out, error));
  EXPECT_EQ(error, "No such file or directory");
  out.clear();
  ASSERT_TRUE(root.read("pkg/sub/m.py", out, error)) << error;
  EXPECT_EQ(out, "import torch\n");
  // a file is not a directory to hold open, nor is a path that is not there
  EXPECT_EQ(OpenDirectory((dir / "pkg/sub/m.py").c_str()).fd(), -1);
  const OpenDirectory gone((dir / "gone").c_str());
  EXPECT_EQ(gone.fd(), -1);
  EXPECT_FALSE(gone.read("m.py", out, error));
  EXPECT_EQ(error, "No such file or directory");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace torchport::text
