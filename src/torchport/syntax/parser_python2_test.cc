// Python 2 code is rejected with a message that says so.
#include <gtest/gtest.h>
#include <torchport/syntax/parser_test_util.h>

namespace torchport::syntax {
namespace {

using testing::error_of;

constexpr const char* kPy2 = "(this file looks like Python 2 code)";

bool says_python2(const std::string& src) { return error_of(src).find(kPy2) != std::string::npos; }

TEST(ParserPython2, PrintAndExecStatements) {
  EXPECT_EQ(error_of("print \"x\"\n"),
            "t.py:1:7: Missing parentheses in call to 'print'. Did you mean print(...)? " +
                std::string(kPy2));
  EXPECT_TRUE(says_python2("print x\n"));
  EXPECT_TRUE(says_python2("if a:\n    print a, b\n"));
  EXPECT_NE(error_of("exec \"code\"\n").find("Missing parentheses in call to 'exec'"),
            std::string::npos);
  // print as a function, or as a name, is Python 3.
  EXPECT_EQ(error_of("print('x')\nprint\nprint >> f, x\n"), "");
}

TEST(ParserPython2, OtherPython2Syntax) {
  // `except Exception, e:` alone is valid Python 3.14 (PEP 758, see parser_statements_test.cc);
  // in a file that fails for another reason, the error still says Python 2.
  EXPECT_TRUE(says_python2("try:\n    pass\nexcept Exception, e:\n    print e\n"));
  EXPECT_TRUE(says_python2("raise E, 'v'\n"));
  EXPECT_TRUE(says_python2("x = `1`\n"));
  EXPECT_TRUE(says_python2("if a <> b: pass\n"));
  EXPECT_TRUE(says_python2("x = 0777\n"));
  EXPECT_TRUE(says_python2("x = ur'abc'\n"));
  EXPECT_TRUE(says_python2("x = 10L\n"));
}

TEST(ParserPython2, Python3ErrorsAreNotBlamedOnPython2) {
  EXPECT_FALSE(says_python2("x = = 1\n"));
  EXPECT_FALSE(says_python2("def f(:\n"));
  EXPECT_FALSE(says_python2("f(a=1, b)\n"));
}

}  // namespace
}  // namespace torchport::syntax
