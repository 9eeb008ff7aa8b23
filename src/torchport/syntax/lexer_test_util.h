// Test helpers for the lexer tests: tokenize with the tiling invariants checked, and compact
// views of the token stream.
#pragma once

#include <gtest/gtest.h>
#include <torchport/syntax/lexer.h>
#include <torchport/text/line_index.h>

#include <string>
#include <string_view>
#include <vector>

namespace torchport::syntax::testing {

/// The invariants every token stream must satisfy: tokens sorted, contiguous and in bounds,
/// covering the whole text, zero-width only for Indent, Dedent, EndMarker and a Newline at the
/// very end, and exactly one EndMarker, last.
inline ::testing::AssertionResult tiles(std::string_view text, const LexResult& r) {
  const auto& t = r.tokens;
  if (t.empty()) return ::testing::AssertionFailure() << "no tokens";
  std::uint32_t pos = 0;
  for (std::size_t i = 0; i < t.size(); ++i) {
    const Token& k = t[i];
    if (k.begin != pos) {
      return ::testing::AssertionFailure() << "token " << i << " (" << token_kind_name(k.kind)
                                           << ") begins at " << k.begin << ", expected " << pos;
    }
    if (k.end < k.begin || k.end > text.size()) {
      return ::testing::AssertionFailure() << "token " << i << " out of bounds";
    }
    const bool zero_ok = k.kind == TokenKind::Indent || k.kind == TokenKind::Dedent ||
                         k.kind == TokenKind::EndMarker ||
                         (k.kind == TokenKind::Newline && k.begin == text.size());
    if (k.begin == k.end && !zero_ok) {
      return ::testing::AssertionFailure()
             << "zero-width " << token_kind_name(k.kind) << " at " << k.begin;
    }
    if (k.begin != k.end && (k.kind == TokenKind::Indent || k.kind == TokenKind::Dedent ||
                             k.kind == TokenKind::EndMarker)) {
      return ::testing::AssertionFailure() << token_kind_name(k.kind) << " is not zero-width";
    }
    // Token::flags: a String token's, as a scan of its text finds them; other tokens none.
    std::uint8_t want = 0;
    if (k.kind == TokenKind::String) {
      const std::string_view s = k.text(text);
      const std::size_t q = s.find_first_of("'\"");
      const bool triple = s.size() >= q + 6 && s[q + 1] == s[q] && s[q + 2] == s[q];
      const std::size_t open = q + (triple ? 3 : 1);
      want = static_cast<std::uint8_t>(q << kTokenPrefixShift);
      if (triple) want |= kTokenTripleQuoted;
      if (s.substr(0, q).find_first_of("bB") != std::string_view::npos) want |= kTokenBytes;
      if (s.substr(open, s.size() - open - (open - q)).find('\\') != std::string_view::npos)
        want |= kTokenHasBackslash;
    }
    if (k.flags != want) {
      return ::testing::AssertionFailure()
             << "token " << i << " (" << token_kind_name(k.kind) << ") has flags " << int(k.flags)
             << ", expected " << int(want);
    }
    if (k.kind == TokenKind::EndMarker && i + 1 != t.size()) {
      return ::testing::AssertionFailure() << "EndMarker before the end";
    }
    pos = k.end;
  }
  if (pos != text.size()) return ::testing::AssertionFailure() << "tokens stop at " << pos;
  if (t.back().kind != TokenKind::EndMarker) {
    return ::testing::AssertionFailure() << "last token is not EndMarker";
  }
  std::string joined;
  for (const Token& k : t) joined += k.text(text);
  if (joined != text) return ::testing::AssertionFailure() << "round trip differs";
  // The line starts found while lexing are those LineIndex finds in the text.
  const text::LineIndex lines(text);
  if (r.line_starts.size() != lines.line_count()) {
    return ::testing::AssertionFailure()
           << r.line_starts.size() << " line starts, LineIndex has " << lines.line_count();
  }
  for (std::uint32_t i = 0; i < r.line_starts.size(); ++i) {
    if (r.line_starts[i] != lines.line_start(i + 1)) {
      return ::testing::AssertionFailure() << "line " << i + 1 << " starts at " << r.line_starts[i]
                                           << ", LineIndex says " << lines.line_start(i + 1);
    }
  }
  return ::testing::AssertionSuccess();
}

/// Tokenizes and checks the invariants.
inline LexResult lex(std::string_view text) {
  LexResult r = tokenize(text);
  EXPECT_TRUE(tiles(text, r)) << "for input: " << ::testing::PrintToString(std::string(text));
  return r;
}

/// "Kind Kind ..." of the non-trivia tokens (EndMarker included).
inline std::string kinds(std::string_view text) {
  const LexResult r = lex(text);
  std::string out;
  for (const Token& k : r.tokens) {
    if (is_trivia(k.kind)) continue;
    if (!out.empty()) out += ' ';
    out += token_kind_name(k.kind);
  }
  return out;
}

/// "Kind Kind ..." of all tokens, trivia included.
inline std::string all_kinds(std::string_view text) {
  const LexResult r = lex(text);
  std::string out;
  for (const Token& k : r.tokens) {
    if (!out.empty()) out += ' ';
    out += token_kind_name(k.kind);
  }
  return out;
}

/// The texts of the non-trivia tokens, joined with '|' (zero-width tokens give empty parts).
inline std::string texts(std::string_view text) {
  const LexResult r = lex(text);
  std::string out;
  bool first = true;
  for (const Token& k : r.tokens) {
    if (is_trivia(k.kind)) continue;
    if (!first) out += '|';
    first = false;
    out += k.text(text);
  }
  return out;
}

/// The messages of all diagnostics, joined with '\n'.
inline std::string messages(std::string_view text) {
  const LexResult r = lex(text);
  std::string out;
  for (const auto& d : r.diagnostics) {
    if (!out.empty()) out += '\n';
    out += d.message;
  }
  return out;
}

}  // namespace torchport::syntax::testing
