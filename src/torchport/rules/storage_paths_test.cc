#include <gtest/gtest.h>
#include <torchport/rules/storage_paths.h>
#include <torchport/syntax/parser.h>

namespace torchport::rules {
namespace {

StorageScan scan(const std::string& src) {
  const syntax::Tree tree = syntax::parse("train.py", src);
  EXPECT_TRUE(tree.ok());
  return scan_storage_paths(tree);
}

TEST(StoragePaths, ArgparseDefaultsAreInputsOrOutputsByTheirNames) {
  const StorageScan s = scan(
      "import argparse\n"
      "p = argparse.ArgumentParser()\n"
      "p.add_argument('--data-dir', default='./data', help='dataset root')\n"
      "p.add_argument('--out_dir', default='checkpoints/')\n"
      "p.add_argument('--resume', default='ckpt/last.pt')\n"
      "p.add_argument('--device', default='cuda')\n"
      "p.add_argument('--lr', default='0.1')\n"
      "p.add_argument('--url', default='s3://bucket/data')\n");
  ASSERT_EQ(s.paths.size(), 3u);
  EXPECT_EQ(s.paths[0].value, "./data");
  EXPECT_EQ(s.paths[0].role, StoragePath::Role::Input);
  EXPECT_EQ(s.paths[0].context, "--data-dir");
  EXPECT_EQ(s.paths[0].line, 3u);
  EXPECT_EQ(s.paths[1].value, "checkpoints/");
  EXPECT_EQ(s.paths[1].role, StoragePath::Role::Output);
  // A checkpoint that is resumed from is read: an input.
  EXPECT_EQ(s.paths[2].value, "ckpt/last.pt");
  EXPECT_EQ(s.paths[2].role, StoragePath::Role::Input);
}

TEST(StoragePaths, CallsThatReadAndWrite) {
  const StorageScan s = scan(
      "import torch, os\n"
      "import numpy as np\n"
      "from torchvision import datasets\n"
      "from torch.utils.tensorboard import SummaryWriter\n"
      "ds = datasets.ImageFolder('/data/imagenet/train')\n"
      "x = np.load('tokens.npy')\n"
      "with open('names.txt') as f: pass\n"
      "with open('log/out.txt', 'w') as f: pass\n"
      "os.makedirs('runs/exp1', exist_ok=True)\n"
      "w = SummaryWriter(log_dir='runs/tb')\n"
      "torch.save(model.state_dict(), 'ckpt/model.pt')\n"
      "print('see ./data for details')\n");
  std::vector<std::string> got;
  for (const StoragePath& p : s.paths)
    got.push_back((p.role == StoragePath::Role::Input ? "in " : "out ") + p.value);
  EXPECT_EQ(got, (std::vector<std::string>{"in /data/imagenet/train", "in tokens.npy",
                                           "in names.txt", "out log/out.txt", "out runs/exp1",
                                           "out runs/tb", "out ckpt/model.pt"}));
}

TEST(StoragePaths, InsertLineIsAfterDocstringAndFutureImports) {
  EXPECT_EQ(
      scan("#!/usr/bin/env python\n\"\"\"Doc.\n\nMore.\"\"\"\nfrom __future__ import annotations\n"
           "\nimport torch\n")
          .insert_line,
      6u);
  EXPECT_EQ(scan("# -*- coding: utf-8 -*-\n# comment\nimport torch\n").insert_line, 3u);
  EXPECT_EQ(scan("x = 1\n").insert_line, 1u);
}

TEST(StoragePaths, SpawnAndMainGuard) {
  const StorageScan s = scan(
      "import torch.multiprocessing as mp\n"
      "def main(): pass\n"
      "if __name__ == '__main__':\n"
      "    mp.spawn(main, nprocs=2)\n");
  EXPECT_EQ(s.spawn_lines, (std::vector<std::uint32_t>{4}));
  EXPECT_TRUE(s.has_main_guard);
  EXPECT_FALSE(scan("from multiprocessing import Pool\nPool(2)\n").has_main_guard);
  EXPECT_TRUE(scan("from torch.multiprocessing import spawn\nspawn(f)\n").spawn_lines.size() == 1);
}

}  // namespace
}  // namespace torchport::rules
