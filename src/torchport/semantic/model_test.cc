#include <gtest/gtest.h>
#include <torchport/semantic/model.h>
#include <torchport/syntax/lexer.h>
#include <torchport/syntax/parser.h>

namespace torchport::semantic {
namespace {

struct Parsed {
  syntax::Tree tree;
  std::string_view text;
  const std::vector<syntax::Token>& tokens;
  Model model;
  explicit Parsed(std::string src)
      : tree(syntax::parse("t.py", std::move(src))),
        text(tree.text()),
        tokens(tree.tokens()),
        model(tree) {}
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

// The head of every reference spelled `chain`, with its resolution ("<unresolved>" when the
// head is not an import or alias), in source order.
std::vector<std::string> refs(const Parsed& p, std::string_view chain) {
  std::vector<std::string> out;
  for (const Reference& r : p.model.references()) {
    std::string s;
    for (TokenIndex n : r.names) s += (s.empty() ? "" : ".") + std::string(p.model.token_text(n));
    if (s == chain) out.push_back(r.qualified.empty() ? "<unresolved>" : r.qualified);
  }
  return out;
}

TEST(SemanticModel, ComprehensionTargetsShadowInTheirOwnScope) {
  Parsed p(
      "from torch import cuda\n"
      "xs = [cuda.x for cuda in range(3)]\n"
      "ys = {cuda.y: 1 for _ in cuda.items()}\n"
      "n = cuda.device_count()\n");
  // Inside the comprehension `cuda` is the loop variable; its first iterable and the rest of
  // the module still see the import.
  EXPECT_EQ(refs(p, "cuda.x"), std::vector<std::string>{"<unresolved>"});
  EXPECT_EQ(refs(p, "cuda.y"), std::vector<std::string>{"torch.cuda.y"});
  EXPECT_EQ(refs(p, "cuda.items"), std::vector<std::string>{"torch.cuda.items"});
  EXPECT_EQ(refs(p, "cuda.device_count"), std::vector<std::string>{"torch.cuda.device_count"});
  // The loop target is a store, never a reference.
  EXPECT_EQ(refs(p, "cuda"), std::vector<std::string>{});
}

TEST(SemanticModel, LambdaWalrusAndMatchCaptures) {
  Parsed p(
      "import torch\n"
      "f = lambda torch: torch.cuda.is_available()\n"
      "def g():\n"
      "    if any((torch := t) for t in range(2)):\n"
      "        return torch.cuda.synchronize()\n"
      "match 1:\n"
      "    case [cuda, *rest]:\n"
      "        cuda.empty_cache()\n"
      "torch.cuda.empty_cache()\n");
  EXPECT_EQ(refs(p, "torch.cuda.is_available"), std::vector<std::string>{"<unresolved>"});
  // The walrus binds `torch` in g, not in the generator's scope.
  EXPECT_EQ(refs(p, "torch.cuda.synchronize"), std::vector<std::string>{"<unresolved>"});
  EXPECT_EQ(refs(p, "cuda.empty_cache"), std::vector<std::string>{"<unresolved>"});
  EXPECT_EQ(refs(p, "torch.cuda.empty_cache"), std::vector<std::string>{"torch.cuda.empty_cache"});
}

TEST(SemanticModel, GlobalNonlocalAndImportsInFunctions) {
  Parsed p(
      "def setup():\n"
      "    global torch\n"
      "    import torch\n"
      "def use():\n"
      "    return torch.cuda.device_count()\n"
      "def local():\n"
      "    import torch as t\n"
      "    return t.cuda.current_device()\n"
      "def outer():\n"
      "    from torch import cuda\n"
      "    def inner():\n"
      "        nonlocal cuda\n"
      "        return cuda.is_available()\n"
      "    return inner\n"
      "t.cuda.synchronize()\n");
  EXPECT_EQ(qualified(p, "torch"), "torch");  // the global import lands in the module
  EXPECT_EQ(refs(p, "torch.cuda.device_count"),
            std::vector<std::string>{"torch.cuda.device_count"});
  EXPECT_EQ(refs(p, "t.cuda.current_device"),
            std::vector<std::string>{"torch.cuda.current_device"});
  EXPECT_EQ(refs(p, "cuda.is_available"), std::vector<std::string>{"torch.cuda.is_available"});
  EXPECT_EQ(refs(p, "t.cuda.synchronize"), std::vector<std::string>{"<unresolved>"});
}

TEST(SemanticModel, ClassBodiesDoNotEncloseComprehensions) {
  Parsed p(
      "import torch\n"
      "class C:\n"
      "    torch = None\n"
      "    xs = [torch.cuda.is_available() for _ in range(2)]\n");
  EXPECT_EQ(refs(p, "torch.cuda.is_available"),
            std::vector<std::string>{"torch.cuda.is_available"});
}

TEST(SemanticModel, StoreContext) {
  Parsed p(
      "import torch\n"
      "class M:\n"
      "    def __init__(self, device):\n"
      "        self.is_cuda = device.type == 'cuda' and torch.cuda.is_available()\n"
      "        self.x.cuda, y = 1, 2\n"
      "        f(cuda=1)\n");
  std::vector<std::string> stored;
  for (TokenIndex i = 0; i < p.tokens.size(); ++i)
    if (p.model.is_store(i)) stored.emplace_back(p.model.token_text(i));
  EXPECT_EQ(stored,
            (std::vector<std::string>{"M", "__init__", "self", "device", "is_cuda", "cuda", "y"}));
  for (const Reference& r : p.model.references()) {
    const std::string last(p.model.token_text(r.last));
    EXPECT_EQ(r.store, last == "is_cuda" || last == "cuda") << last;
  }
}

TEST(SemanticModel, RunTimeDeviceStringsMakeDeviceVariables) {
  Parsed p(
      "import torch\n"
      "device = f'cuda:{rank}'\n"
      "dev2_device = 'cuda:%d' % rank\n"
      "gpu_device = 'cuda:{}'.format(gpu)\n"
      "main_device = 'cuda:' + str(i)\n"
      "label = 'cuda:' + str(i)\n"
      "device_type = device.type\n");
  EXPECT_EQ(qualified(p, "device"), "<device>");
  EXPECT_EQ(qualified(p, "dev2_device"), "<device>");
  EXPECT_EQ(qualified(p, "gpu_device"), "<device>");
  EXPECT_EQ(qualified(p, "main_device"), "<device>");
  EXPECT_EQ(qualified(p, "label"), "<other>");
  EXPECT_EQ(qualified(p, "device_type"), "<device>");
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

// fstring_middle_tokens() is every FStringMiddle token of the file, in order, as a walk of all
// the tokens finds them: nested f-strings, format specs, doubled braces, raw and triple-quoted
// f-strings; not a t-string's literal text, nor a plain string.
TEST(SemanticModel, FStringMiddleTokensAreEveryOne) {
  Parsed p(
      "a = f\"cuda:{i}\" + f'{x}cuda' + f\"{x:cuda}\"\n"
      "b = f\"{f'cuda:{i}'}\" + rf\"cuda:{i}\" + f\"\"\"\ncuda\n{i}\"\"\"\n"
      "c = t\"cuda:{i}\" + \"f'cuda'\" + f\"{{cuda}}\" + f\"\" + F'x{y!r:>{w}}z'\n"
      "# f\"cuda\"\n");
  std::vector<TokenIndex> walk;
  for (std::size_t i = 0; i < p.tokens.size(); ++i)
    if (p.tokens[i].kind == syntax::TokenKind::FStringMiddle)
      walk.push_back(static_cast<TokenIndex>(i));
  EXPECT_GE(walk.size(), 10u);
  const auto listed = p.model.fstring_middle_tokens();
  EXPECT_EQ(std::vector<TokenIndex>(listed.begin(), listed.end()), walk);
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

// References skip the scope walk for names that no binding of the file makes a qualified name
// or a device (a filter of the names, set as bindings are made, with collisions past its 2048
// bits). The filter must never hide one: with thousands of names (so that many share a bit),
// every reference's qualified name is what lookup() says of its head, and a device alias of a
// device alias is still a device.
TEST(SemanticModel, ReferencesAgreeWithLookupWhateverTheNumberOfNames) {
  std::string src = "import torch\nimport torch.cuda as tc\n";
  for (int i = 0; i < 600; ++i) {
    const std::string n = std::to_string(i);
    src += "import pkg" + n + ".sub as m" + n + "\n";
    src += "v" + n + " = m" + n + ".api\n";
    src += "dev" + n + " = torch.device(\"cuda:" + n + "\")\n";
    src += "device_b" + n + " = dev" + n + "\n";
    src += "def f" + n + "(x" + n + ", m" + n + "):\n";
    src += "    y" + n + " = x" + n + " + v" + n + ".call(m" + n + ".a, tc.synchronize)\n";
    src += "    return m" + (i > 0 ? std::to_string(i - 1) : n) + ".b.c, device_b" + n + "\n";
  }
  Parsed p(src);
  ASSERT_TRUE(p.tree.ok());
  std::size_t qualified_refs = 0;
  for (const Reference& r : p.model.references()) {
    std::string expected;
    if (auto b = p.model.lookup(p.model.token_text(r.first), r.scope);
        b && b->kind == Binding::Kind::Qualified) {
      expected = b->target;
      for (std::size_t k = 1; k < r.names.size(); ++k)
        expected += "." + std::string(p.model.token_text(r.names[k]));
    }
    EXPECT_EQ(r.qualified, expected) << p.model.token_text(r.first);
    if (!expected.empty()) ++qualified_refs;
  }
  // Each i: m<i>.api, torch.device, v<i>.call, tc.synchronize and (but in f0, whose parameter
  // m0 shadows the import) m<i-1>.b.c; m<i>.a is the parameter's.
  EXPECT_EQ(qualified_refs, 600u * 5 - 1);
  EXPECT_EQ(qualified(p, "v7"), "pkg7.sub.api");
  EXPECT_EQ(qualified(p, "dev599"), "<device>");
  EXPECT_EQ(qualified(p, "device_b599"), "<device>");
  EXPECT_EQ(qualified(p, "m3", 4), "<other>");  // f3's parameter
}

// A scope of many names answers from an index kept as names are bound; a small one by reading
// its names. Both merge a name's bindings the same way: rebound to another target or to a value
// is not trusted, the same target twice is, and a device binding makes a device.
TEST(SemanticModel, ManyNamesMergeAsFewDo) {
  const std::string tail =
      "import os as a\nimport sys as a\n"
      "import os as b\nimport os as b\n"
      "import os as c\nc = 3\n"
      "d = torch.device('cuda')\nimport os as d\n"
      "e = 1\n";
  for (int fillers : {0, 40, 3000}) {
    std::string src = "import torch\n";
    for (int i = 0; i < fillers; ++i) src += "n" + std::to_string(i) + " = 1\n";
    Parsed p(src + tail);
    EXPECT_EQ(qualified(p, "a"), "<other>") << fillers;
    EXPECT_EQ(qualified(p, "b"), "os") << fillers;
    EXPECT_EQ(qualified(p, "c"), "<other>") << fillers;
    EXPECT_EQ(qualified(p, "d"), "<device>") << fillers;
    EXPECT_EQ(qualified(p, "e"), "<other>") << fillers;
    EXPECT_EQ(qualified(p, "torch"), "torch") << fillers;
    EXPECT_EQ(qualified(p, "zz"), "<unbound>") << fillers;
    if (fillers > 0) {
      EXPECT_EQ(qualified(p, "n" + std::to_string(fillers - 1)), "<other>");
    }
  }
}

}  // namespace
}  // namespace torchport::semantic
