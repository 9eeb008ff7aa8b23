#include <gtest/gtest.h>
#include <torchport/semantic/model.h>
#include <torchport/syntax/lexer.h>

namespace torchport::semantic {
namespace {

struct Parsed {
  std::string text;
  std::vector<syntax::Token> tokens;
  Model model;
  explicit Parsed(std::string src)
      : text(std::move(src)), tokens(syntax::tokenize(text).tokens), model(text, tokens) {}
};

std::string qualified(const Parsed& p, std::string_view name, std::uint32_t scope = 0) {
  auto b = p.model.lookup(name, scope);
  if (!b) return "<unbound>";
  switch (b->kind) {
    case Binding::Kind::Qualified:
      return b->target;
    case Binding::Kind::Device:
      return "<device>";
    case Binding::Kind::Other:
      return "<other>";
  }
  return "?";
}

// The qualified name of the reference whose chain spells `chain` (first match).
std::string ref(const Parsed& p, std::string_view chain) {
  for (const Reference& r : p.model.references()) {
    std::string s;
    for (TokenIndex n : r.names) s += (s.empty() ? "" : ".") + std::string(p.model.token_text(n));
    if (s == chain) return r.qualified.empty() ? "<unresolved>" : r.qualified;
  }
  return "<none>";
}

TEST(SemanticModel, ImportsAndAliases) {
  Parsed p(
      "import torch as t\n"
      "from torch import cuda\n"
      "import torch.cuda.amp as amp\n"
      "from torch.cuda.amp import autocast, GradScaler as GS\n"
      "import torch.distributed\n"
      "from . import sibling\n"
      "from os import *\n");
  EXPECT_EQ(qualified(p, "t"), "torch");
  EXPECT_EQ(qualified(p, "cuda"), "torch.cuda");
  EXPECT_EQ(qualified(p, "amp"), "torch.cuda.amp");
  EXPECT_EQ(qualified(p, "autocast"), "torch.cuda.amp.autocast");
  EXPECT_EQ(qualified(p, "GS"), "torch.cuda.amp.GradScaler");
  EXPECT_EQ(qualified(p, "GradScaler"), "<unbound>");
  EXPECT_EQ(qualified(p, "torch"), "torch");     // `import torch.distributed` binds torch
  EXPECT_EQ(qualified(p, "path"), "<unbound>");  // star imports bind nothing we know
  EXPECT_EQ(p.model.module_alias("torch"), "t");
  ASSERT_EQ(p.model.imports().size(), 7u);
  EXPECT_EQ(p.model.imports()[3].name, "autocast");
  EXPECT_EQ(p.model.imports()[4].bound, "GS");
}

TEST(SemanticModel, QualifiedNamesOfReferences) {
  Parsed p(
      "import torch as t\n"
      "from torch import cuda\n"
      "t.cuda.synchronize()\n"
      "n = cuda.device_count()\n"
      "x = t.ones(2).cuda()\n");
  EXPECT_EQ(ref(p, "t.cuda.synchronize"), "torch.cuda.synchronize");
  EXPECT_EQ(ref(p, "cuda.device_count"), "torch.cuda.device_count");
  EXPECT_EQ(ref(p, "t.ones"), "torch.ones");
  // `.cuda` after a call is a method, not part of a dotted reference.
  EXPECT_EQ(ref(p, "cuda"), "<none>");
}

TEST(SemanticModel, ScopesShadowImports) {
  Parsed p(
      "import torch\n"
      "def f(torch, *, cuda=None):\n"
      "    return torch.cuda.is_available()\n"
      "class C:\n"
      "    torch = 3\n"
      "    def m(self):\n"
      "        return torch.cuda.device_count()\n"
      "torch.cuda.synchronize()\n");
  EXPECT_EQ(ref(p, "torch.cuda.is_available"), "<unresolved>");
  // A method does not see the class body's `torch`: the module's import applies.
  EXPECT_EQ(ref(p, "torch.cuda.device_count"), "torch.cuda.device_count");
  EXPECT_EQ(ref(p, "torch.cuda.synchronize"), "torch.cuda.synchronize");
}

TEST(SemanticModel, SimpleAssignments) {
  Parsed p(
      "import torch\n"
      "c = torch.cuda\n"
      "dev = torch.device(\"cuda\")\n"
      "device = \"cuda\" if torch.cuda.is_available() else \"cpu\"\n"
      "name = \"cuda\"\n"
      "train_device: str = \"cuda:0\"\n"
      "a, b = torch.cuda, 1\n"
      "c.synchronize()\n");
  EXPECT_EQ(qualified(p, "c"), "torch.cuda");
  EXPECT_EQ(ref(p, "c.synchronize"), "torch.cuda.synchronize");
  EXPECT_EQ(qualified(p, "dev"), "<device>");
  EXPECT_EQ(qualified(p, "device"), "<device>");
  EXPECT_EQ(qualified(p, "name"), "<other>");
  EXPECT_EQ(qualified(p, "train_device"), "<device>");
  EXPECT_EQ(qualified(p, "a"), "<other>");
}

TEST(SemanticModel, ParameterNamesAreNotUses) {
  // In a class body `device` is bound to torch.cuda.device; a method's parameter of the same
  // name is a new binding, not a use (its annotation is a use).
  Parsed p(
      "import torch\n"
      "class I:\n"
      "    device = torch.cuda.device\n"
      "    def f(device: torch.types.Device = None, *rest, **kw):\n"
      "        return device\n");
  EXPECT_EQ(ref(p, "torch.types.Device"), "torch.types.Device");
  for (const Reference& r : p.model.references()) {
    if (p.model.token_text(r.first) == "device") {
      EXPECT_EQ(r.line, 4u) << "only the return (line index 4), not the def";
    }
  }
}

TEST(SemanticModel, ConflictingRebindingIsNotTrusted) {
  Parsed p("import torch\nimport numpy as torch\ntorch.cuda.synchronize()\n");
  EXPECT_EQ(ref(p, "torch.cuda.synchronize"), "<unresolved>");
}

TEST(SemanticModel, InsertionPoints) {
  const std::string src =
      "\"\"\"Doc.\"\"\"\n"
      "from __future__ import annotations\n"
      "import os\n"
      "import torch  # the framework\n"
      "\n"
      "x = 1\n"
      "import sys\n";
  Parsed p(src);
  const auto after_torch = src.find("\n\nx = 1") + 1;
  EXPECT_EQ(p.model.import_block_end(), after_torch);
  EXPECT_EQ(p.model.after_first_torch_import(), after_torch);
  Parsed crlf("import torch\r\nx = 1\r\n");
  EXPECT_EQ(crlf.model.newline(), "\r\n");
  EXPECT_EQ(crlf.model.import_block_end(), 14u);
  Parsed none("x = 1\n");
  EXPECT_EQ(none.model.import_block_end(), 0u);
  EXPECT_FALSE(none.model.after_first_torch_import().has_value());
}

TEST(SemanticModel, BracketsAndLines) {
  Parsed p("f(a, [b,\n   c])\ny = 2\n");
  ASSERT_EQ(p.model.lines().size(), 2u);
  const auto& toks = p.model.lines()[0].tokens;
  // f ( a , [ b , c ] )
  EXPECT_EQ(p.model.match(toks[1]), toks[9]);
  EXPECT_EQ(p.model.match(toks[4]), toks[8]);
  EXPECT_EQ(p.model.enclosing_open(toks[5]), toks[4]);
  EXPECT_EQ(p.model.enclosing_open(toks[2]), toks[1]);
  EXPECT_FALSE(p.model.enclosing_open(toks[0]).has_value());
}

TEST(SemanticModel, DeviceStrings) {
  EXPECT_TRUE(is_cuda_device_string("cuda"));
  EXPECT_TRUE(is_cuda_device_string("cuda:0"));
  EXPECT_TRUE(is_cuda_device_string("cuda:12"));
  EXPECT_FALSE(is_cuda_device_string("cuda:"));
  EXPECT_FALSE(is_cuda_device_string("cuda:x"));
  EXPECT_FALSE(is_cuda_device_string("cudnn"));
  EXPECT_FALSE(is_cuda_device_string("CUDA"));
  Parsed p("a = r'cuda'\nb = b\"cuda\"\nc = '''cuda:1'''\nd = \"cu\\x64a\"\n");
  std::vector<std::string> values;
  for (std::size_t i = 0; i < p.tokens.size(); ++i) {
    if (auto v = string_value(p.text, p.tokens[i])) values.emplace_back(v->value);
  }
  // Bytes are not strings; a value with escapes is not read.
  EXPECT_EQ(values, (std::vector<std::string>{"cuda", "cuda:1"}));
}

}  // namespace
}  // namespace torchport::semantic
