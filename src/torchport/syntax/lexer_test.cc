// Lexer basics: operators, names, keywords, comments, NEWLINE vs NL, continuations, errors, and
// the tiling invariant on awkward inputs.
#include <gtest/gtest.h>
#include <torchport/syntax/lexer.h>
#include <torchport/text/source.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "lexer_test_util.h"

namespace torchport::syntax {
namespace {

using testing::all_kinds;
using testing::kinds;
using testing::lex;
using testing::messages;
using testing::texts;

TEST(LexerTest, EmptyInputIsJustEndMarker) {
  EXPECT_EQ(all_kinds(""), "EndMarker");
  EXPECT_EQ(messages(""), "");
}

TEST(LexerTest, SimpleAssignmentWithTrivia) {
  EXPECT_EQ(all_kinds("x = 1\n"), "Name Whitespace Equal Whitespace Number Newline EndMarker");
  EXPECT_EQ(texts("x = 1\n"), "x|=|1|\n|");
}

TEST(LexerTest, EveryOperatorByMaximalMunch) {
  const char* src =
      "( ) [ ] { } : , ; . ... -> := ! + - * / // % ** @ | & ^ ~ << >> < > == != <= >= = += -= "
      "*= /= //= %= **= @= |= &= ^= <<= >>=\n";
  EXPECT_EQ(kinds(src),
            "LPar RPar LSqb RSqb LBrace RBrace Colon Comma Semi Dot Ellipsis RArrow ColonEqual "
            "Exclamation Plus Minus Star Slash DoubleSlash Percent DoubleStar At VBar Amper "
            "Circumflex Tilde LeftShift RightShift Less Greater EqEqual NotEqual LessEqual "
            "GreaterEqual Equal PlusEqual MinusEqual StarEqual SlashEqual DoubleSlashEqual "
            "PercentEqual DoubleStarEqual AtEqual VBarEqual AmperEqual CircumflexEqual "
            "LeftShiftEqual RightShiftEqual Newline EndMarker");
  EXPECT_EQ(messages(src), "");
}

// lex_normal() lexes '.', '...', ',' and the brackets itself (a byte class each): runs of dots
// are cut into '...' and '.' by maximal munch at every distance from the end of the text, a dot
// before a digit starts a number, and each bracket and comma is one token with its kind.
TEST(LexerTest, DotsCommasAndBracketsAtEveryDistanceFromTheEnd) {
  for (std::size_t n = 1; n <= 8; ++n) {
    for (const std::string tail : {"", " ", "x", ")", ",", "\n"}) {
      std::string want;
      for (std::size_t i = 0; i < n / 3; ++i) want += "Ellipsis ";
      for (std::size_t i = 0; i < n % 3; ++i) want += "Dot ";
      const std::string src = "a" + std::string(n, '.') + tail;
      std::string got = kinds(src);
      EXPECT_EQ(got.substr(0, 5 + want.size()), "Name " + want) << src;
    }
    // A dot before a digit starts a number; the dots before it are cut from the left.
    std::string want;
    for (std::size_t r = n; r > 1;) {
      want += r >= 3 ? "Ellipsis " : "Dot ";
      r -= r >= 3 ? 3 : 1;
    }
    EXPECT_EQ(kinds(std::string(n, '.') + "5"), want + "Number Newline EndMarker") << n;
  }
  EXPECT_EQ(kinds("([{,}]),"), "LPar LSqb LBrace Comma RBrace RSqb RPar Comma Newline EndMarker");
  // '=' and ':' (lex_normal()'s too, ':' outside f-strings), with what may follow them, at the
  // end of the text and before other bytes.
  for (const std::string tail : {"", " ", "x", "\n"}) {
    EXPECT_EQ(texts("a=" + tail).substr(0, 4), "a|=|") << tail;
    EXPECT_EQ(texts("a:" + tail).substr(0, 4), "a|:|") << tail;
    EXPECT_EQ(texts("a==" + tail).substr(0, 5), "a|==|") << tail;
    EXPECT_EQ(texts("a:=" + tail).substr(0, 5), "a|:=|") << tail;
    EXPECT_EQ(texts("a===" + tail).substr(0, 7), "a|==|=|") << tail;
    EXPECT_EQ(texts("a=:" + tail).substr(0, 6), "a|=|:|") << tail;
    EXPECT_EQ(texts("a::=" + tail).substr(0, 7), "a|:|:=|") << tail;
  }
  EXPECT_EQ(kinds("x[a:b] == (y := 1)"),
            "Name LSqb Name Colon Name RSqb EqEqual LPar Name ColonEqual Number RPar Newline "
            "EndMarker");
  EXPECT_EQ(kinds("f'{x:>{w}}' f'{x:=}' f'{(y:=1)}'"),
            "FStringStart LBrace Name Colon FStringMiddle LBrace Name RBrace RBrace FStringEnd "
            "FStringStart LBrace Name Colon FStringMiddle RBrace FStringEnd FStringStart LBrace "
            "LPar Name ColonEqual Number RPar RBrace FStringEnd Newline EndMarker");
  EXPECT_EQ(texts("f(a,b)[0]{.5}"), "f|(|a|,|b|)|[|0|]|{|.5|}||");
  EXPECT_EQ(messages("(]"), "closing parenthesis ']' does not match opening parenthesis '('");
  EXPECT_EQ(messages(")"), "unmatched ')'");
}

TEST(LexerTest, OperatorsWithoutSpaces) {
  EXPECT_EQ(texts("a**=b//c->d\n"), "a|**=|b|//|c|->|d|\n|");
  EXPECT_EQ(texts("x[1:-1]..."), "x|[|1|:|-|1|]|...||");
  EXPECT_EQ(texts("a....b"), "a|...|.|b||");
}

TEST(LexerTest, HardKeywordsGetTheirKinds) {
  EXPECT_EQ(kinds("False None True and as assert async await break class continue def del elif "
                  "else except finally for from global if import in is lambda nonlocal not or "
                  "pass raise return try while with yield"),
            "KwFalse KwNone KwTrue KwAnd KwAs KwAssert KwAsync KwAwait KwBreak KwClass KwContinue "
            "KwDef KwDel KwElif KwElse KwExcept KwFinally KwFor KwFrom KwGlobal KwIf KwImport "
            "KwIn KwIs KwLambda KwNonlocal KwNot KwOr KwPass KwRaise KwReturn KwTry KwWhile "
            "KwWith KwYield Newline EndMarker");
}

// The keyword lookup reads a name's bytes with one 8-byte load (a byte copy within eight bytes
// of the end of the text) and hashes them: compared with a plain map, for every keyword, its
// prefixes, extensions and one-byte changes, every two-byte name and many others, each at the
// start of the text and after other tokens, with 0 to 9 bytes after it.
TEST(LexerTest, KeywordLookupAgreesWithAPlainMapAtEveryDistanceFromTheEnd) {
  const std::map<std::string, TokenKind, std::less<>> plain = {
      {"False", TokenKind::KwFalse},
      {"None", TokenKind::KwNone},
      {"True", TokenKind::KwTrue},
      {"and", TokenKind::KwAnd},
      {"as", TokenKind::KwAs},
      {"assert", TokenKind::KwAssert},
      {"async", TokenKind::KwAsync},
      {"await", TokenKind::KwAwait},
      {"break", TokenKind::KwBreak},
      {"class", TokenKind::KwClass},
      {"continue", TokenKind::KwContinue},
      {"def", TokenKind::KwDef},
      {"del", TokenKind::KwDel},
      {"elif", TokenKind::KwElif},
      {"else", TokenKind::KwElse},
      {"except", TokenKind::KwExcept},
      {"finally", TokenKind::KwFinally},
      {"for", TokenKind::KwFor},
      {"from", TokenKind::KwFrom},
      {"global", TokenKind::KwGlobal},
      {"if", TokenKind::KwIf},
      {"import", TokenKind::KwImport},
      {"in", TokenKind::KwIn},
      {"is", TokenKind::KwIs},
      {"lambda", TokenKind::KwLambda},
      {"nonlocal", TokenKind::KwNonlocal},
      {"not", TokenKind::KwNot},
      {"or", TokenKind::KwOr},
      {"pass", TokenKind::KwPass},
      {"raise", TokenKind::KwRaise},
      {"return", TokenKind::KwReturn},
      {"try", TokenKind::KwTry},
      {"while", TokenKind::KwWhile},
      {"with", TokenKind::KwWith},
      {"yield", TokenKind::KwYield},
  };
  std::vector<std::string> names;
  const std::string changes = "aeilnorstyAFNTZ_09";
  for (const auto& [word, kind] : plain) {
    for (std::size_t n = 1; n <= word.size(); ++n) names.push_back(word.substr(0, n));
    for (const char* more : {"a", "s", "_", "0", "Z", "xx", "\xc3\xa9"})
      names.push_back(word + more);
    names.push_back("_" + word);
    for (std::size_t i = 0; i < word.size(); ++i) {
      for (char c : changes) {
        std::string w = word;
        w[i] = c;
        if (i == 0 && c >= '0' && c <= '9') continue;
        names.push_back(w);
      }
      std::string w = word;
      w[i] = static_cast<char>(w[i] ^ 0x20);  // the other case
      names.push_back(w);
    }
  }
  const std::string alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789";
  for (char a : alphabet.substr(0, 53))
    for (char b : alphabet) names.push_back(std::string{a, b});
  std::uint32_t state = 4242;
  auto next = [&state] {
    state = state * 1103515245u + 12345u;
    return state >> 16;
  };
  const std::string letters = "acdefghilmnoprstuwyFNT_";
  for (int i = 0; i < 3000; ++i) {
    std::string w(1 + next() % 10, ' ');
    for (char& c : w) c = letters[next() % letters.size()];
    names.push_back(w);
  }
  int keywords = 0;
  for (const std::string& name : names) {
    const auto it = plain.find(name);
    const TokenKind want = it == plain.end() ? TokenKind::Name : it->second;
    keywords += want != TokenKind::Name ? 1 : 0;
    for (const std::string lead : {"", "x=("}) {
      for (std::size_t after = 0; after <= 9; ++after) {
        const std::string src = lead + name + std::string(after, after % 2 == 0 ? ' ' : ')');
        const LexResult r = tokenize(src);
        const auto tok = std::find_if(r.tokens.begin(), r.tokens.end(),
                                      [&](const Token& t) { return t.begin == lead.size(); });
        ASSERT_NE(tok, r.tokens.end()) << src;
        ASSERT_EQ(tok->end, lead.size() + name.size()) << src;
        EXPECT_EQ(tok->kind, want)
            << "name '" << name << "' in '" << src << "': " << token_kind_name(tok->kind);
      }
    }
  }
  EXPECT_GE(keywords, 35);
}

TEST(LexerTest, SoftKeywordsAndKeywordLookalikesAreNames) {
  EXPECT_EQ(kinds("match case type _ print exec iff Def none TRUE"),
            "Name Name Name Name Name Name Name Name Name Name Newline EndMarker");
}

TEST(LexerTest, NonAsciiIdentifiers) {
  EXPECT_EQ(texts("变量 = été_1 + ℌx\n"), "变量|=|été_1|+|ℌx|\n|");
  EXPECT_EQ(kinds("变量 = 1\n"), "Name Equal Number Newline EndMarker");
}

TEST(LexerTest, InvalidCharactersAreWordedAsCPython) {
  EXPECT_EQ(messages("a€ = 1\n"), "invalid character '€' (U+20AC)");
  EXPECT_EQ(kinds("a€ = 1\n"), "Name Error Equal Number Newline EndMarker");
  EXPECT_EQ(messages("a\u00a0= 1\n"), "invalid non-printable character U+00A0");
  EXPECT_EQ(messages("x = $\n"), "invalid syntax");
  EXPECT_EQ(messages("x = ?\n"), "invalid syntax");
  EXPECT_EQ(messages("x\x01\n"), "invalid non-printable character U+0001");
}

TEST(LexerTest, InvalidUtf8IsAnErrorNotACrash) {
  const std::string src = "x = \xff\xfe + \xe4\xb8\n";
  const LexResult r = lex(src);
  ASSERT_FALSE(r.diagnostics.empty());
  EXPECT_EQ(r.diagnostics[0].message, "invalid utf-8 byte 0xFF");
}

TEST(LexerTest, NulBytesAreReportedOnce) {
  const std::string src("a = 1\0\0\n", 8);
  EXPECT_EQ(messages(src), "source code cannot contain null bytes");
  const LexResult r = lex(src);
  EXPECT_EQ(r.diagnostics[0].offset, 5u);
}

TEST(LexerTest, CommentsAreTokensWithoutTheLineBreak) {
  EXPECT_EQ(all_kinds("x  # hi\n"), "Name Whitespace Comment Newline EndMarker");
  EXPECT_EQ(texts("# only\n"), "");  // Comment and NL are trivia; only EndMarker is left
  EXPECT_EQ(all_kinds("# only\n"), "Comment NonLogicalNewline EndMarker");
}

TEST(LexerTest, NewlineEndsLogicalLinesAndNlMarksBlankOnes) {
  EXPECT_EQ(all_kinds("x\n\n  \n# c\ny\n"),
            "Name Newline NonLogicalNewline Whitespace NonLogicalNewline Comment "
            "NonLogicalNewline Name Newline EndMarker");
}

TEST(LexerTest, LineBreaksInsideBracketsAreNonLogical) {
  EXPECT_EQ(all_kinds("f(a,\n  b)\n"),
            "Name LPar Name Comma NonLogicalNewline Whitespace Name RPar Newline EndMarker");
  EXPECT_EQ(all_kinds("[\n{\n}\n]\n"),
            "LSqb NonLogicalNewline LBrace NonLogicalNewline RBrace NonLogicalNewline RSqb "
            "Newline EndMarker");
}

TEST(LexerTest, CrlfAndLoneCrAreSingleLineBreaks) {
  const std::string src = "a = 1\r\nb = 2\rc = 3\r\n";
  const LexResult r = lex(src);
  std::vector<std::string> breaks;
  for (const Token& t : r.tokens) {
    if (t.kind == TokenKind::Newline) breaks.emplace_back(t.text(src));
  }
  EXPECT_EQ(breaks, (std::vector<std::string>{"\r\n", "\r", "\r\n"}));
}

TEST(LexerTest, ZeroWidthNewlineAtEofWithoutLineBreak) {
  const std::string src = "x = 1";
  const LexResult r = lex(src);
  ASSERT_EQ(r.tokens.size(), 7u);
  EXPECT_EQ(r.tokens[5].kind, TokenKind::Newline);
  EXPECT_EQ(r.tokens[5].begin, 5u);
  EXPECT_EQ(r.tokens[5].end, 5u);
  // A final comment-only line gets no Newline at all.
  EXPECT_EQ(all_kinds("x\n# c"), "Name Newline Comment EndMarker");
  // Trailing whitespace after the last line is just whitespace.
  EXPECT_EQ(all_kinds("x\n   "), "Name Newline Whitespace EndMarker");
}

TEST(LexerTest, BackslashContinuation) {
  EXPECT_EQ(all_kinds("x = 1 + \\\n    2\n"),
            "Name Whitespace Equal Whitespace Number Whitespace Plus Whitespace Continuation "
            "Whitespace Number Newline EndMarker");
  EXPECT_EQ(texts("x = \\\r\n2\n"), "x|=|2|\n|");
  const LexResult r = lex("x = \\\r\n2\n");
  EXPECT_EQ(r.tokens[4].kind, TokenKind::Continuation);
  EXPECT_EQ(r.tokens[4].text("x = \\\r\n2\n"), "\\\r\n");
}

TEST(LexerTest, BackslashErrors) {
  EXPECT_EQ(messages("x = \\ 1\n"), "unexpected character after line continuation character");
  EXPECT_EQ(messages("x = 1 \\\n"), "unexpected EOF while parsing");
  EXPECT_EQ(messages("x = 1 \\"), "unexpected EOF while parsing");
  EXPECT_EQ(messages("x = 1\n\\\n"), "unexpected EOF while parsing");
}

TEST(LexerTest, BracketMismatchesAreReported) {
  EXPECT_EQ(messages(")\n"), "unmatched ')'");
  EXPECT_EQ(messages("(]\n"), "closing parenthesis ']' does not match opening parenthesis '('");
  EXPECT_EQ(messages("([{}])\n"), "");
}

TEST(LexerTest, UnclosedBracketAtEofStillEndsTheLine) {
  // The parser reports "'(' was never closed"; the lexer still closes the stream.
  EXPECT_EQ(kinds("f(1,\n"), "Name LPar Number Comma Newline EndMarker");
}

TEST(LexerTest, Python2Tokens) {
  EXPECT_EQ(kinds("`x` <> 1\n"), "Backtick Name Backtick LessGreater Number Newline EndMarker");
}

TEST(LexerTest, TokenKindNamesAreStable) {
  EXPECT_EQ(token_kind_name(TokenKind::Whitespace), "Whitespace");
  EXPECT_EQ(token_kind_name(TokenKind::KwYield), "KwYield");
  EXPECT_EQ(token_kind_name(TokenKind::RightShiftEqual), "RightShiftEqual");
  EXPECT_EQ(token_kind_name(TokenKind::Error), "Error");
}

TEST(LexerTest, DeepNestingIsDiagnosedNotACrash) {
  std::string src(300, '(');
  src += std::string(300, ')') + "\n";
  EXPECT_EQ(messages(src), "too many nested parentheses");
}

// Names are scanned sixteen bytes at a time where sixteen remain: every length around the block
// size, every identifier byte class in the name, and every byte that can end a name.
TEST(LexerTest, NameEndsAtTheFirstNonIdentifierByte) {
  const std::string pattern = "aZ_09zA9_b";
  for (int end = 0; end < 256; ++end) {
    const char c = static_cast<char>(end);
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')
      continue;
    for (std::size_t n = 1; n <= 40; ++n) {
      std::string name;
      for (std::size_t i = 0; i < n; ++i) name += pattern[i % pattern.size()];
      for (const std::string& tail : {std::string(), std::string(24, ' ')}) {
        const std::string src = name + c + tail;
        const LexResult r = lex(src);
        ASSERT_FALSE(r.tokens.empty());
        EXPECT_EQ(r.tokens[0].kind, TokenKind::Name) << "byte " << end << ", length " << n;
        EXPECT_EQ(r.tokens[0].size(), n) << "byte " << end << ", length " << n;
      }
    }
  }
}

TEST(LexerTest, AnyByteSequenceTiles) {
  // A small deterministic fuzz: every prefix of a nasty input must tile.
  const std::string nasty =
      "if x:\n\tf'{a!r:{b}}' rb'''\\\r\n' 0x_ 1e+ 1__0 \\ \x00 \xff `<> f\"{\n\"\"\" \r\x0c#\n"
      "  t'{x}' u'\\N{DASH}' )]} \xe2\x82\xac";
  for (std::size_t n = 0; n <= nasty.size(); ++n) lex(std::string_view(nasty).substr(0, n));
  for (std::size_t i = 0; i < nasty.size(); ++i) lex(std::string_view(nasty).substr(i));
}

TEST(LexerTest, RandomTextsTileAndFindEveryLineStart) {
  // Random texts over the bytes that start, end or escape strings, f-strings, comments,
  // continuations and line breaks: lex() checks the tiling, the String flags and that the line
  // starts are LineIndex's (CRLF split between tokens, escaped and lone CRs, unterminated
  // literals, format specs).
  static constexpr char kBytes[] = {'\n', '\r', '\r', '\\', '\'', '"', 'f', 'r',  'b', '{',
                                    '}',  ':',  '#',  ' ',  'x',  '(', ')', '\t', '='};
  std::uint32_t state = 12345;
  auto next = [&state] {
    state = state * 1103515245u + 12345u;
    return state >> 16;
  };
  for (int n = 0; n < 20000; ++n) {
    std::string s(next() % 48, ' ');
    for (char& c : s) c = kBytes[next() % sizeof kBytes];
    lex(s);
  }
}

TEST(LexerTest, EveryDecodableFixtureTiles) {
  const std::filesystem::path dir =
      std::filesystem::path(TORCHPORT_SOURCE_DIR) / "tests" / "fixtures" / "syntax";
  int lexed = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".py") continue;
    const text::DecodeResult d = text::decode_file(entry.path().string());
    if (!d.source) continue;  // the deliberately undecodable fixtures
    const LexResult r = lex(d.source->text);
    EXPECT_TRUE(r.diagnostics.empty()) << entry.path() << ": " << r.diagnostics[0].message;
    ++lexed;
  }
  EXPECT_GE(lexed, 10);
}

TEST(LexerTest, TabsAndFormFeedFixture) {
  const text::DecodeResult d = text::decode_file(std::string(TORCHPORT_SOURCE_DIR) +
                                                 "/tests/fixtures/syntax/tabs_and_formfeed.py");
  ASSERT_TRUE(d.source);
  // if True: / \tx = 1 / \tif x: / \t\ty = 2 / \f / def f(): / 8 spaces return 1
  EXPECT_EQ(kinds(d.source->text),
            "KwIf KwTrue Colon Newline Indent Name Equal Number Newline KwIf Name Colon Newline "
            "Indent Name Equal Number Newline Dedent Dedent KwDef Name LPar RPar Colon Newline "
            "Indent KwReturn Number Newline Dedent EndMarker");
}

TEST(LexerTest, CommentWithoutNewlineFixture) {
  const text::DecodeResult d = text::decode_file(
      std::string(TORCHPORT_SOURCE_DIR) + "/tests/fixtures/syntax/comment_without_newline.py");
  ASSERT_TRUE(d.source);
  EXPECT_EQ(all_kinds(d.source->text),
            "Name Whitespace Equal Whitespace Number Newline Comment EndMarker");
}

}  // namespace
}  // namespace torchport::syntax
